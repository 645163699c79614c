//! `tools/list`: made once per catalog snapshot (and per client a token
//! limits to some servers), then served as it is; and what `auto` exposure
//! decides for a session.

use super::hints::Hints;
use super::scope::ClientScope;
use super::{Exposure, Gateway, Session, from_json, internal, mcp_tool, proxy, tool_search};
use crate::catalog::Entry;
use crate::host::Snapshot;
use crate::results::CHARS_PER_TOKEN;
use rmcp::ErrorData as McpError;
use rmcp::model::Tool;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

/// Tool lists of one snapshot, as MCP tools.
pub(super) struct Listing {
    pub(super) version: u64,
    /// The lists of clients that see every server.
    every: Lists,
    /// The lists of each client limited to some servers, by token name.
    limited: Mutex<HashMap<Arc<str>, Arc<Lists>>>,
}

/// The tool lists one client sees.
#[derive(Default)]
struct Lists {
    /// Every entry (direct exposure).
    all: OnceLock<Arc<[Tool]>>,
    /// Tool-search exposure before a session loads anything: `ToolSearch`
    /// and the direct tools.
    base: OnceLock<Arc<[Tool]>>,
    /// What `auto` exposure decides for this catalog.
    auto: OnceLock<Exposure>,
    /// What ToolSearch's description says of each server, when it names them.
    said: OnceLock<tool_search::Said>,
}

/// The lists of a client: borrowed for the unlimited (as fast as before
/// scopes), shared for a limited one.
enum ListsRef<'a> {
    Every(&'a Lists),
    Limited(Arc<Lists>),
}

impl std::ops::Deref for ListsRef<'_> {
    type Target = Lists;
    fn deref(&self) -> &Lists {
        match self {
            ListsRef::Every(l) => l,
            ListsRef::Limited(l) => l,
        }
    }
}

impl Listing {
    pub(super) fn new(version: u64) -> Listing {
        Listing {
            version,
            every: Lists::default(),
            limited: Mutex::new(HashMap::new()),
        }
    }

    fn lists(&self, client: &ClientScope) -> ListsRef<'_> {
        if !client.is_limited() {
            return ListsRef::Every(&self.every);
        }
        let mut limited = self.limited.lock().unwrap_or_else(|p| p.into_inner());
        let lists = limited.entry(client.name().into()).or_default().clone();
        ListsRef::Limited(lists)
    }
}

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
    /// the start. In `auto` exposure every tool is while they fit its budget:
    /// that list is made as `auto` decides.
    fn direct_list(&self, snapshot: &Snapshot, lists: &Lists, client: &ClientScope) -> Arc<[Tool]> {
        if self.exposure == Exposure::Auto {
            self.auto_exposure(snapshot, lists, client);
        }
        if let Some(all) = lists.all.get() {
            return all.clone();
        }
        // Made outside the lock: concurrent first lists are not held up.
        let config = self.host.config();
        let all: Arc<[Tool]> = snapshot
            .entries()
            .iter()
            .filter(|e| client.allows(&e.tool.server))
            .map(|e| mcp_tool(e, snapshot, &config, snapshot.is_direct_name(&e.name)))
            .collect();
        lists.all.get_or_init(|| all).clone()
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
        let visible = snapshot
            .entries()
            .iter()
            .filter(|e| client.allows(&e.tool.server));
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
    /// The exposure this session is served in: the gateway's, or what
    /// `auto` decided for it (`Auto` until it has).
    pub(super) fn exposure(&self) -> Exposure {
        match self.shared.exposure {
            Exposure::Auto => self.decided.get().copied().unwrap_or(Exposure::Auto),
            exposure => exposure,
        }
    }

    /// The exposure of this session, `auto` decided now if it has not been:
    /// once every server has been listed, from the tools the session's
    /// client sees then. The session keeps it.
    pub(super) async fn decide_exposure(
        &self,
        extensions: &rmcp::model::Extensions,
    ) -> Result<Exposure, McpError> {
        let exposure = self.exposure();
        if exposure != Exposure::Auto {
            return Ok(exposure);
        }
        let client = self.client(extensions);
        self.shared.ready().await;
        let snapshot = self.shared.host.snapshot().await.map_err(internal)?;
        let listing = self.shared.listing(&snapshot);
        Ok(self.exposure_of(&snapshot, &listing.lists(&client), &client))
    }

    /// This session's exposure, deciding `auto` on `snapshot` if need be.
    fn exposure_of(&self, snapshot: &Snapshot, lists: &Lists, client: &ClientScope) -> Exposure {
        match self.shared.exposure {
            Exposure::Auto => *self
                .decided
                .get_or_init(|| self.shared.auto_exposure(snapshot, lists, client)),
            exposure => exposure,
        }
    }

    /// What this session's `tools/list` answers.
    pub async fn tool_list(&self) -> Result<Vec<Tool>, McpError> {
        self.tool_list_for(&self.session_client()).await
    }

    /// What `tools/list` answers `client` on this session.
    pub(super) async fn tool_list_for(&self, client: &ClientScope) -> Result<Vec<Tool>, McpError> {
        let host = &self.shared.host;
        if self.shared.exposure == Exposure::Proxy {
            return Ok(vec![from_json(guarded(
                proxy::tool_definition(host, client),
                host,
            ))?]);
        }
        // Listed once the session was shown a preview: a session that never
        // meets its budget spends no tokens on it.
        let read_result = || -> Result<Option<Tool>, McpError> {
            self.results_kept
                .load(std::sync::atomic::Ordering::Acquire)
                .then(|| from_json(guarded(super::results::tool_definition(), host)))
                .transpose()
        };
        // Finding and adding servers, when the user allowed it.
        let servers = || -> Result<Option<Tool>, McpError> {
            super::proxy::install::listed(&host.config())
                .then(|| from_json(guarded(super::proxy::install::tool_definition(), host)))
                .transpose()
        };
        if self.shared.exposure == Exposure::Code {
            let mut tools = vec![from_json(guarded(
                super::code::tool_definition(self, client).await,
                host,
            ))?];
            tools.extend(read_result()?);
            tools.extend(servers()?);
            return Ok(tools);
        }
        self.shared.ready().await;
        let snapshot = host.snapshot().await.map_err(internal)?;
        let listing = self.shared.listing(&snapshot);
        let lists = listing.lists(client);
        let tools = match self.exposure_of(&snapshot, &lists, client) {
            Exposure::Direct => self.shared.direct_list(&snapshot, &lists, client),
            _ => {
                self.link.refresh_tools().await;
                self.tool_search_list(&snapshot, &lists, client)?
            }
        };
        let mut tools = tools.to_vec();
        if host.config().settings.code_mode {
            tools.push(from_json(guarded(
                super::code::tool_definition(self, client).await,
                host,
            ))?);
        }
        tools.extend(read_result()?);
        tools.extend(servers()?);
        Ok(tools)
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
        if let Some((v, n, list)) = &*self.listed.lock().unwrap_or_else(|p| p.into_inner())
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
            .filter(|e| client.allows(&e.tool.server))
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
        *self.listed.lock().unwrap_or_else(|p| p.into_inner()) =
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
