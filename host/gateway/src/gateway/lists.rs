//! The tool lists of one catalog snapshot, kept by the gateway: made on
//! first need (see `listing`), per client a token limits to some servers.

use super::scope::ClientScope;
use crate::config::Exposure;
use rmcp::model::Tool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// What ToolSearch's description says of each server in the servers form,
/// by name, best first.
pub(crate) type Said = HashMap<String, Vec<String>>;

/// Tool lists of one snapshot, as MCP tools.
pub(super) struct Listing {
    pub(super) version: u64,
    /// The lists of clients that see every server.
    pub(super) every: Lists,
    /// The lists of each client limited to some servers, by token name.
    pub(super) limited: Mutex<HashMap<Arc<str>, Arc<Lists>>>,
}

/// The tool lists one client sees.
#[derive(Default)]
pub(super) struct Lists {
    /// Every entry (direct exposure).
    pub(super) all: OnceLock<Arc<[Tool]>>,
    /// Tool-search exposure before a session loads anything: `ToolSearch`
    /// and the direct tools.
    pub(super) base: OnceLock<Arc<[Tool]>>,
    /// What `auto` exposure decides for this catalog.
    pub(super) auto: OnceLock<Exposure>,
    /// What ToolSearch's description says of each server, when it names them.
    pub(super) said: OnceLock<Said>,
}

/// The lists of a client: borrowed for the unlimited (as fast as before
/// scopes), shared for a limited one.
pub(super) enum ListsRef<'a> {
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

    pub(super) fn lists(&self, client: &ClientScope) -> ListsRef<'_> {
        if !client.is_limited() {
            return ListsRef::Every(&self.every);
        }
        let mut limited = self.limited.lock().unwrap_or_else(|p| p.into_inner());
        let lists = limited.entry(client.policy().into()).or_default().clone();
        ListsRef::Limited(lists)
    }
}
