//! Resources in every exposure: listed a page at a time, read, and watched
//! per session (the host asks a server to watch a URI once for all sessions);
//! a client sees the resources of its servers only.

use super::watching::host_error;
use super::wire::{from_json, internal};
use super::{ClientScope, Session};
use rmcp::ErrorData as McpError;
use rmcp::model::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use serde_json::{Value, json};

/// Items per `resources/list` (and templates) page.
const PAGE: usize = 200;

/// One page of `items` from `cursor` (an offset mcpw gave out), and the next cursor.
pub(super) fn page(
    items: Vec<Value>,
    cursor: Option<&str>,
) -> Result<(Vec<Value>, Option<String>), McpError> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|&n| n <= items.len())
            .ok_or_else(|| McpError::invalid_params(format!("invalid cursor {c:?}"), None))?,
    };
    let end = (start + PAGE).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].to_vec(), next))
}

pub(super) fn with_cursor(mut v: Value, next: Option<String>) -> Value {
    if let Some(next) = next {
        v["nextCursor"] = json!(next);
    }
    v
}

impl Session {
    /// The current snapshot, once every server was listed at least once.
    pub(super) async fn ready_snapshot(
        &self,
    ) -> Result<std::sync::Arc<crate::host::snapshot::Snapshot>, McpError> {
        self.shared.ready().await;
        self.shared.host.snapshot().await.map_err(internal)
    }

    pub(super) async fn resource_list(
        &self,
        client: &ClientScope,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, McpError> {
        from_json(self.offered_page(client, false, cursor).await?)
    }

    pub(super) async fn resource_template_list(
        &self,
        client: &ClientScope,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        from_json(self.offered_page(client, true, cursor).await?)
    }

    /// One page of the resources (or templates) `client` sees, as a list
    /// result's JSON.
    async fn offered_page(
        &self,
        client: &ClientScope,
        templates: bool,
        cursor: Option<&str>,
    ) -> Result<Value, McpError> {
        let snapshot = self.ready_snapshot().await?;
        let map = snapshot.resources();
        let (offered, key) = match templates {
            false => (map.resources(), "resources"),
            true => (map.templates(), "resourceTemplates"),
        };
        let seen = offered
            .iter()
            .filter(|r| client.allows(&r.server))
            .map(|r| r.item.clone());
        let (items, next) = page(seen.collect(), cursor)?;
        Ok(with_cursor(json!({ key: items }), next))
    }

    pub(super) async fn resource_read(
        &self,
        client: &ClientScope,
        uri: &str,
        context: &rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        if uri.starts_with(crate::kept::URI_PREFIX) {
            return self.kept_read(uri).await;
        }
        self.shared.ready().await;
        let host = &self.shared.host;
        let route = host
            .route_resource_within(uri, &|s| client.allows(s))
            .await
            .map_err(host_error)?;
        let (options, _) = self.call_options(context);
        let read = host
            .read_routed_as(
                &self.caller(client, crate::host::pipeline::Via::Call, context),
                &route,
                options,
            )
            .await;
        match read {
            Ok(read) => from_json(read),
            Err(e) => Err(self.request_error(e, context, host_error).await),
        }
    }

    /// What this session kept (binary content its scripts got, whole
    /// results it read a preview of): read by this session only.
    async fn kept_read(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        let kept = match self.state.shelf.get(uri) {
            Some(kept) => Some(kept),
            None => self.kept_whole(uri).await.map(crate::kept::Kept::Whole),
        };
        let kept = kept.ok_or_else(|| {
            McpError::resource_not_found(
                format!("resource \"{uri}\" not found: kept results expire, and belong to the session that got them"),
                Some(json!({"uri": uri})),
            )
        })?;
        let contents = match kept {
            crate::kept::Kept::Blob(blob) => vec![json!({
                "uri": uri,
                "mimeType": blob.mime_type,
                "blob": &*blob.base64,
            })],
            crate::kept::Kept::Whole(whole) => crate::results::contents(uri, &whole),
        };
        from_json(json!({ "contents": contents }))
    }

    /// `resources/subscribe` (`subscribe`) or `resources/unsubscribe`.
    pub(super) async fn resource_watch(
        &self,
        client: &ClientScope,
        uri: &str,
        subscribe: bool,
    ) -> Result<(), McpError> {
        self.shared.ready().await;
        self.state.watching.set(client, uri, subscribe).await?;
        self.state.link.share_watching(uri, subscribe).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_their_cursors_to_the_end() {
        let items: Vec<Value> = (0..450).map(|i| json!(i)).collect();
        let (first, next) = page(items.clone(), None).unwrap();
        assert_eq!((first.len(), next.as_deref()), (200, Some("200")));
        let (second, next) = page(items.clone(), next.as_deref()).unwrap();
        assert_eq!(
            (second[0].clone(), next.as_deref()),
            (json!(200), Some("400"))
        );
        let (last, next) = page(items.clone(), next.as_deref()).unwrap();
        assert_eq!((last.len(), next), (50, None));
        assert!(page(items, Some("nonsense")).is_err());
    }
}
