//! What a client reaches: its requests' client, and names resolved and
//! searched within the servers it sees (see `scope`).

use super::scope::ClientScope;
use super::{Gateway, Session};
use crate::host::{EntryRef, HostError, SearchHit};
use crate::plugin::SearchOptions;
use rmcp::model::Extensions;
use serde_json::Value;
use std::collections::BTreeSet;

impl Session {
    /// The client a request comes from: the scope its HTTP request's token
    /// gave it, else (stdio, the session's own events) the session's.
    pub(super) fn client(&self, extensions: &Extensions) -> ClientScope {
        if let Some(parts) = extensions.get::<axum::http::request::Parts>() {
            return parts
                .extensions
                .get::<ClientScope>()
                .cloned()
                .unwrap_or_else(ClientScope::everyone);
        }
        self.session_client()
    }

    /// The client of this session, as its `initialize` request said.
    pub(super) fn session_client(&self) -> ClientScope {
        self.state
            .client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(ClientScope::everyone)
    }

    /// Is the prompt exposed as `name` of a server `client` does not see?
    pub(super) async fn prompt_hidden(&self, client: &ClientScope, name: &str) -> bool {
        if !client.is_limited() {
            return false;
        }
        let Ok(snapshot) = self.shared.host.snapshot().await else {
            return false;
        };
        snapshot
            .prompt(name)
            .is_some_and(|p| !client.allows(&p.server))
    }

    /// When a completion's prompt or resource template is of a server
    /// `client` does not see: the error of one that does not exist.
    pub(super) async fn completion_hidden(
        &self,
        client: &ClientScope,
        params: &Value,
    ) -> Option<HostError> {
        if !client.is_limited() {
            return None;
        }
        let snapshot = self.shared.host.snapshot().await.ok()?;
        let reference = &params["ref"];
        let text = |key: &str| reference[key].as_str().unwrap_or_default().to_string();
        match reference["type"].as_str() {
            Some("ref/prompt") => {
                let name = text("name");
                let server = &snapshot.prompt(&name)?.server;
                (!client.allows(server)).then_some(HostError::PromptNotFound(name))
            }
            _ => {
                let uri = text("uri");
                let route = snapshot.resources().route_template(&uri)?;
                (!client.allows(&route.server)).then_some(HostError::ResourceNotFound(uri))
            }
        }
    }
}

impl Gateway {
    /// Resolves a tool name for `client`: a tool of a server it does not see
    /// is not found, with suggestions from its own servers only, and the name
    /// connects no such server on the way.
    pub(super) async fn resolve_for(
        &self,
        client: &ClientScope,
        name: &str,
    ) -> Result<EntryRef, HostError> {
        if !client.is_limited() {
            return self.resolve(name).await;
        }
        let snapshot = self.host.snapshot().await?;
        let hidden = match snapshot.get(name) {
            Some(e) => !client.sees(&e.tool),
            None => snapshot.owner(name).is_some_and(|s| !client.allows(s)),
        };
        if !hidden {
            match self.resolve(name).await {
                Ok(e) if client.sees(&e.tool) => return Ok(e),
                Ok(_) | Err(HostError::ToolNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let options = SearchOptions {
            limit: 3,
            ..Default::default()
        };
        let suggestions = match self.search_for(client, name, options).await {
            Ok(hits) => hits
                .into_iter()
                .filter(|h| !h.is_skill())
                .map(|h| h.entry.name.clone())
                .collect(),
            Err(_) => Vec::new(),
        };
        Err(HostError::ToolNotFound {
            name: name.to_string(),
            suggestions,
        })
    }

    /// Searches the tools `client` sees, best first. The index ranks every
    /// tool: a client that sees several servers, or some tools only, gets the
    /// best of a search widened until enough of its own tools are among the
    /// hits (scores of one index compare across servers), one that sees every
    /// tool of one server a search of that server.
    pub(super) async fn search_for(
        &self,
        client: &ClientScope,
        query: &str,
        mut options: SearchOptions,
    ) -> Result<Vec<SearchHit>, HostError> {
        if !client.is_limited() {
            return self.host.search_refs(query, options).await;
        }
        let mine = |h: &SearchHit| client.sees(&h.entry.tool);
        let snapshot = self.host.snapshot().await?;
        let total = snapshot.searchable().len();
        let reach = client.reach();
        let search = |options: SearchOptions| {
            let reach = reach.clone();
            move |limit: u32| {
                let options = SearchOptions {
                    limit,
                    ..options.clone()
                };
                self.host.search_refs_for(query, options, reach.clone())
            }
        };
        let Some(servers) = client.servers() else {
            return widened(options.limit, total, search(options.clone()), mine).await;
        };
        if let Some(only) = &options.server
            && !servers.contains(only)
        {
            return Ok(Vec::new());
        }
        if options.server.is_none() {
            let mut listed: BTreeSet<&str> = BTreeSet::new();
            for e in snapshot.searchable().iter() {
                if servers.contains(&e.tool.server) {
                    listed.insert(&e.tool.server);
                }
            }
            let mut listed = listed.into_iter();
            match (listed.next(), listed.next()) {
                (None, _) => return Ok(Vec::new()),
                // One server: a search of it alone.
                (Some(one), None) => options.server = Some(one.to_string()),
                _ => {}
            }
        }
        if options.server.is_some() && !client.limits_tools() {
            return self.host.search_refs_for(query, options, reach).await;
        }
        widened(options.limit, total, search(options.clone()), mine).await
    }
}

/// The first `wanted` hits that `keep` admits, of a search asked for
/// `wanted` hits, then 8 times as many, and so on, until enough are admitted
/// or the search has no more (fewer hits than asked, or all `total` entries).
async fn widened<H, E, F: Future<Output = Result<Vec<H>, E>>>(
    wanted: u32,
    total: usize,
    mut search: impl FnMut(u32) -> F,
    keep: impl Fn(&H) -> bool,
) -> Result<Vec<H>, E> {
    let mut limit = wanted.max(1);
    loop {
        let hits = search(limit).await?;
        let complete = hits.len() < limit as usize || limit as usize >= total;
        let kept: Vec<H> = hits.into_iter().filter(|h| keep(h)).collect();
        if kept.len() >= wanted as usize || complete {
            return Ok(kept.into_iter().take(wanted as usize).collect());
        }
        limit = limit
            .saturating_mul(8)
            .min(u32::try_from(total).unwrap_or(u32::MAX));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search of a ranking of 100 entries, best first, that records the
    /// limit of each search in `asked`.
    fn ranked(
        asked: &std::cell::RefCell<Vec<u32>>,
    ) -> impl FnMut(u32) -> std::future::Ready<Result<Vec<u32>, ()>> {
        move |limit| {
            asked.borrow_mut().push(limit);
            std::future::ready(Ok((0..100).take(limit as usize).collect()))
        }
    }

    #[tokio::test]
    async fn a_search_is_widened_until_enough_of_the_clients_tools_are_found() {
        // Every tenth entry is the client's.
        let mine = |i: &u32| i % 10 == 9;
        let asked = Default::default();
        let hits = widened(5, 100, ranked(&asked), mine).await;
        assert_eq!(hits, Ok(vec![9, 19, 29, 39, 49]));
        assert_eq!(asked.take(), vec![5, 40, 100]);

        // Fewer of them than wanted: every one, once the search is exhausted.
        let few = |i: &u32| *i == 3 || *i == 98;
        let hits = widened(5, 100, ranked(&asked), few).await;
        assert_eq!(hits, Ok(vec![3, 98]));
        assert_eq!(asked.take(), vec![5, 40, 100]);

        // All the client's: one search, as for an unlimited client.
        let hits = widened(3, 100, ranked(&asked), |_| true).await;
        assert_eq!((hits, asked.take()), (Ok(vec![0, 1, 2]), vec![3]));
    }
}
