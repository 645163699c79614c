//! `tools/list`: made once per catalog snapshot (and per client a token
//! limits to some servers), then served as it is; and what `auto` exposure
//! decides for a session.

use super::hints::Hints;
use super::lists::{Listing, Lists};
use super::scope::ClientScope;
use super::wire::{from_json, internal};
use super::{Exposure, Gateway, Session, proxy, tool_search};
use crate::catalog::Entry;
use crate::host::Snapshot;
use crate::results::CHARS_PER_TOKEN;
use rmcp::ErrorData as McpError;
use rmcp::model::Tool;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

impl Gateway {
    /// The tool lists of `snapshot`, made on first need.
    fn listing(&self, snapshot: &Snapshot) -> Arc<Listing> {
        if let Some(l) = self.listing.load_full()
            && l.version == snapshot.version()
        {
            return l;
        }
        let fresh = Arc::new(Listing::new(snapshot.version()));
        // Only a newer snapshot's lists replace the ones held.
        self.listing.rcu(|held| match held {
            Some(h) if h.version >= fresh.version => Some(h.clone()),
            _ => Some(fresh.clone()),
        });
        self.listing
            .load_full()
            .filter(|l| l.version == fresh.version)
            .unwrap_or(fresh)
    }

    /// Every tool `client` sees, listed directly, the direct set loaded from
    /// the start.
    fn direct_list(&self, snapshot: &Snapshot, lists: &Lists, client: &ClientScope) -> Arc<[Tool]> {
        if let Some(all) = lists.all.get() {
            return all.clone();
        }
        // Made outside the lock: concurrent first lists are not held up.
        let config = self.host.config();
        let all: Arc<[Tool]> = snapshot
            .entries()
            .iter()
            .filter(|e| client.sees(&e.tool))
            .map(|e| mcp_tool(e, snapshot, &config, snapshot.is_direct_name(&e.name)))
            .collect();
        lists.all.get_or_init(|| all).clone()
    }

    /// Every tool `client` sees, listed directly as `auto` lists them: every
    /// one loaded from the start while they fit its budget (that list is
    /// made as `auto` decides).
    fn auto_list(&self, snapshot: &Snapshot, lists: &Lists, client: &ClientScope) -> Arc<[Tool]> {
        self.auto_exposure(snapshot, lists, client);
        self.direct_list(snapshot, lists, client)
    }

    /// What `auto` exposure decides for `client` on this catalog: direct
    /// while its tools' definitions, as direct exposure lists them, fit the
    /// budget (and then that list is made); tool-search beyond.
    fn auto_exposure(&self, snapshot: &Snapshot, lists: &Lists, client: &ClientScope) -> Exposure {
        if let Some(decided) = lists.auto.get() {
            return *decided;
        }
        let config = self.host.config();
        let room = self.auto_budget * CHARS_PER_TOKEN;
        // Bytes of the list's JSON: its brackets, each tool and a comma. A
        // big catalog is decided after its first few tools.
        let mut used = 2;
        let mut tools = Vec::new();
        let visible = snapshot.entries().iter().filter(|e| client.sees(&e.tool));
        for e in visible {
            let tool = mcp_tool(e, snapshot, &config, true);
            used += serde_json::to_vec(&tool).map_or(0, |b| b.len()) + 1;
            if used > room {
                return *lists.auto.get_or_init(|| Exposure::ToolSearch);
            }
            tools.push(tool);
        }
        let _ = lists.all.set(tools.into());
        *lists.auto.get_or_init(|| Exposure::Direct)
    }
}

impl Session {
    /// The catalog's snapshot once every server has been listed, and its
    /// tool lists.
    async fn catalog(&self) -> Result<(Arc<Snapshot>, Arc<Listing>), McpError> {
        self.shared.ready().await;
        let snapshot = self.shared.host.snapshot().await.map_err(internal)?;
        let listing = self.shared.listing(&snapshot);
        Ok((snapshot, listing))
    }

    /// What `auto` decided for this session, deciding now if it has not:
    /// from the tools `client` sees on `snapshot`. The session keeps it.
    fn decide(&self, snapshot: &Snapshot, lists: &Lists, client: &ClientScope) -> Exposure {
        *self
            .state
            .decided
            .get_or_init(|| self.shared.auto_exposure(snapshot, lists, client))
    }

    /// The exposure `auto` serves this session in, decided now if need be.
    pub(super) async fn decided(
        &self,
        client: &ClientScope,
    ) -> Result<&'static dyn super::exposures::Exposed, McpError> {
        if let Some(decided) = self.state.decided.get() {
            return Ok(super::exposures::of(*decided));
        }
        let (snapshot, listing) = self.catalog().await?;
        let decided = self.decide(&snapshot, &listing.lists(client), client);
        Ok(super::exposures::of(decided))
    }

    /// Whether `auto` decided this session searches (tool-search).
    pub(super) fn searches(&self) -> bool {
        self.state.decided.get() == Some(&Exposure::ToolSearch)
    }

    /// What this session's `tools/list` answers.
    pub async fn tool_list(&self) -> Result<Vec<Tool>, McpError> {
        self.tool_list_for(&self.session_client()).await
    }

    /// What `tools/list` answers `client` on this session.
    pub(super) async fn tool_list_for(&self, client: &ClientScope) -> Result<Vec<Tool>, McpError> {
        self.shared.exposed().list(self, client).await
    }

    /// The proxy's one tool, as `client` sees it.
    pub(super) fn proxy_tool(&self, client: &ClientScope) -> Result<Tool, McpError> {
        let host = &self.shared.host;
        from_json(guarded(proxy::tool_definition(host, client), host))
    }

    /// The gateway's own tools beside the servers' (or the code tool): the
    /// code tool with `code` or `settings.codeMode`; `read_result` once the
    /// session was shown a preview (a session that never meets its budget
    /// spends no tokens on it); finding and adding servers, when the user
    /// allowed it.
    pub(super) async fn own_tools(
        &self,
        client: &ClientScope,
        code: bool,
    ) -> Result<Vec<Tool>, McpError> {
        let host = &self.shared.host;
        let mut tools = Vec::new();
        if code || host.config().settings.code_mode {
            let definition = super::code::tool_definition(self, client).await;
            tools.push(from_json(guarded(definition, host))?);
        }
        if self
            .state
            .results_kept
            .load(std::sync::atomic::Ordering::Acquire)
        {
            tools.push(from_json(guarded(super::results::tool_definition(), host))?);
        }
        if super::proxy::install::listed(&host.config()) {
            let definition = super::proxy::install::tool_definition();
            tools.push(from_json(guarded(definition, host))?);
        }
        Ok(tools)
    }

    /// Every tool `client` sees, listed (direct exposure).
    pub(super) async fn direct_tools(&self, client: &ClientScope) -> Result<Arc<[Tool]>, McpError> {
        let (snapshot, listing) = self.catalog().await?;
        let lists = listing.lists(client);
        Ok(self.shared.direct_list(&snapshot, &lists, client))
    }

    /// `ToolSearch`, the direct tools and what this session loaded
    /// (tool-search exposure).
    pub(super) async fn searched_tools(
        &self,
        client: &ClientScope,
    ) -> Result<Arc<[Tool]>, McpError> {
        let (snapshot, listing) = self.catalog().await?;
        let lists = listing.lists(client);
        self.state.link.refresh_tools().await;
        self.tool_search_list(&snapshot, &lists, client)
    }

    /// The servers' tools as `auto` lists them to `client`: all of them
    /// while they fit its budget, as tool-search beyond.
    pub(super) async fn auto_tools(&self, client: &ClientScope) -> Result<Arc<[Tool]>, McpError> {
        let (snapshot, listing) = self.catalog().await?;
        let lists = listing.lists(client);
        if self.decide(&snapshot, &lists, client) == Exposure::Direct {
            return Ok(self.shared.auto_list(&snapshot, &lists, client));
        }
        self.state.link.refresh_tools().await;
        self.tool_search_list(&snapshot, &lists, client)
    }

    /// `ToolSearch`, the direct tools and the tools this session loaded. Made
    /// once per snapshot and per tool loaded, then served as it is.
    fn tool_search_list(
        &self,
        snapshot: &Snapshot,
        lists: &Lists,
        client: &ClientScope,
    ) -> Result<Arc<[Tool]>, McpError> {
        let activated = self
            .state
            .activated
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let version = snapshot.version();
        if activated.is_empty()
            && let Some(base) = lists.base.get()
        {
            return Ok(base.clone());
        }
        if let Some((v, n, list)) = &*self.state.listed.lock().unwrap_or_else(|p| p.into_inner())
            && *v == version
            && *n == activated.len()
            && !activated.is_empty()
        {
            return Ok(list.clone());
        }
        let mut shown: BTreeSet<&str> =
            snapshot.direct_entries().map(|e| e.name.as_str()).collect();
        shown.extend(activated.iter().map(String::as_str));
        let visible: Vec<&Entry> = snapshot
            .entries()
            .iter()
            .filter(|e| client.sees(&e.tool))
            .collect();
        let mut list = vec![from_json(tool_search::definition(
            self.shared.host.config().as_ref(),
            &visible,
            &shown,
            self.shared.budget,
            &lists.said,
        ))?];
        // Every tool it lists is loaded: the direct ones, and those the
        // session asked for.
        let config = self.shared.host.config();
        list.extend(
            visible
                .iter()
                .filter(|e| shown.contains(e.name.as_str()))
                .map(|e| mcp_tool(e, snapshot, &config, true)),
        );
        let list: Arc<[Tool]> = list.into();
        if activated.is_empty() {
            return Ok(lists.base.get_or_init(|| list).clone());
        }
        *self.state.listed.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((version, activated.len(), list.clone()));
        Ok(list)
    }
}

/// A tool of mcpw's own (`mcp`, `code`, `read_result`) with its `_meta`: how
/// big its results get (the settings' budget), and that it is loaded from the
/// start, as the way to every other tool.
fn guarded(mut tool: serde_json::Value, host: &crate::host::Host) -> serde_json::Value {
    let budget = super::results::meta(host.config().settings.results.budget);
    if let Some(meta) = Hints::always().add_to(budget) {
        tool["_meta"] = meta;
    }
    tool
}

/// The MCP tool definition of a catalog entry, built directly (a catalog has
/// thousands): its schema always says `"type": "object"`. `always_load`: the
/// exposure means it to be in the agent's context from the start.
fn mcp_tool(
    entry: &crate::catalog::Entry,
    snapshot: &crate::host::Snapshot,
    config: &crate::config::Config,
    always_load: bool,
) -> Tool {
    let t = &entry.tool;
    let schema = t.input_schema.object().clone();
    let mut tool = Tool::new(entry.name.clone(), t.description.clone(), schema);
    // A tool whose name had to change keeps its own in sight: as its title
    // when it has none.
    tool.title = t
        .title
        .clone()
        .or_else(|| entry.renamed_from().map(str::to_string));
    tool.annotations = t
        .annotations
        .as_ref()
        .and_then(|a| serde_json::from_value(a.clone()).ok());
    // Results pass through as the server sent them, so its promise about
    // their structured content holds through mcpw too.
    tool.output_schema = t.output_schema.as_ref().map(|s| s.object().clone());
    let names = [t.name.as_str(), entry.name.as_str()];
    let hints = Hints {
        always_load,
        keywords: config
            .server(&t.server)
            .map_or(&[], |s| s.config.search_keywords.as_slice()),
    };
    let mut meta = super::results::tool_meta(config, &t.server, &names);
    // The server's own `_meta` (an app's view among it), under mcpw's.
    if let Some(Value::Object(own)) = &t.meta {
        let mut joined = own.clone();
        // The view as the client reads it (mapped when another server has
        // one at the same URI).
        let resources = snapshot.resources();
        crate::apps::expose_meta(&mut joined, |uri| resources.exposed(&t.server, uri));
        if let Some(Value::Object(ours)) = meta {
            joined.extend(ours);
        }
        meta = Some(Value::Object(joined));
    }
    let meta = hints.add_to(meta);
    tool.meta = meta.and_then(|m| from_json(m).ok());
    tool
}
