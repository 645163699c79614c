//! The resources one session watches (`resources/subscribe`): the host
//! watches a URI once for all sessions, and stops when the last lets go.

use super::scope::ClientScope;
use super::wire::internal;
use crate::host::resources::Route;
use crate::host::{Host, HostError};
use rmcp::ErrorData as McpError;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A host's error as the client is told it: an unknown resource is one.
pub(super) fn host_error(e: HostError) -> McpError {
    match e {
        HostError::ResourceNotFound(uri) => McpError::resource_not_found(
            format!("resource \"{uri}\" not found"),
            Some(json!({"uri": uri})),
        ),
        HostError::SkillFileNotFound { uri, read_as } => McpError::resource_not_found(
            format!("resource \"{uri}\" not found: a skill's file is read as {read_as}"),
            Some(json!({"uri": uri, "readAs": read_as})),
        ),
        e => internal(e),
    }
}

/// The resources a session watches, by the URI the client used. When the
/// session ends, the host stops watching them for it.
pub(super) struct Watching {
    host: Arc<Host>,
    routes: Mutex<HashMap<String, Route>>,
}

impl Watching {
    pub(super) fn new(host: Arc<Host>) -> Arc<Watching> {
        Arc::new(Watching {
            host,
            routes: Mutex::new(HashMap::new()),
        })
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, HashMap<String, Route>> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the session watches `uri` (as the client knows it).
    pub(super) fn watches(&self, uri: &str) -> bool {
        self.routes().contains_key(uri)
    }

    /// The URIs the session watches.
    pub(super) fn uris(&self) -> Vec<String> {
        self.routes().keys().cloned().collect()
    }

    /// Watches `uri` (as `client` knows it) for the session (`subscribe`),
    /// or no more.
    pub(super) async fn set(
        &self,
        client: &ClientScope,
        uri: &str,
        subscribe: bool,
    ) -> Result<(), McpError> {
        let route = self
            .host
            .route_resource_within(uri, &|s| client.allows(s))
            .await
            .map_err(host_error)?;
        let known = self.routes().contains_key(uri);
        if known == subscribe {
            return Ok(()); // already so for this session
        }
        self.host
            .watch_resource(&route, subscribe)
            .await
            .map_err(host_error)?;
        let mut routes = self.routes();
        if subscribe {
            routes.insert(uri.to_string(), route);
        } else {
            routes.remove(uri);
        }
        Ok(())
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let routes: Vec<Route> = self.routes().drain().map(|(_, r)| r).collect();
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if routes.is_empty() {
            return;
        }
        let host = self.host.clone();
        rt.spawn(async move {
            for r in routes {
                if let Err(e) = host.watch_resource(&r, false).await {
                    tracing::debug!("unsubscribing {} on {}: {e}", r.uri, r.server);
                }
            }
        });
    }
}
