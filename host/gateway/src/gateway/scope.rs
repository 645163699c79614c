//! Which servers a client sees. Over HTTP each bearer token names a client
//! and may limit it to some servers (`serve.tokens[].servers`); the token
//! middleware puts the client's [`ClientScope`] into the request, rmcp hands
//! the request's parts to every handler, and each handler shows and reaches
//! only that client's servers. A server the client does not see looks exactly
//! like one that does not exist: its tools are unknown tools, its prompts,
//! resources and tasks unknown ones.
//!
//! stdio, a gateway without tokens, and `--token` are unlimited, and take the
//! paths they took before scopes existed.

use crate::downstream::Reach;
use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

/// A client of the gateway: the name of its token, and the servers it sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientScope {
    name: Arc<str>,
    /// `None`: every server.
    servers: Reach,
}

/// The scope of a request that no token limits.
static EVERYONE: LazyLock<ClientScope> = LazyLock::new(|| ClientScope::every(""));

impl ClientScope {
    /// A client that sees every server.
    pub fn every(name: &str) -> ClientScope {
        ClientScope {
            name: name.into(),
            servers: None,
        }
    }

    /// A client that sees only `servers`.
    pub fn only(name: &str, servers: impl IntoIterator<Item = String>) -> ClientScope {
        ClientScope {
            name: name.into(),
            servers: Some(Arc::new(servers.into_iter().collect())),
        }
    }

    /// Unlimited, for requests that carry no token's scope.
    pub fn everyone() -> ClientScope {
        EVERYONE.clone()
    }

    /// The token's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Does the client see `server`?
    pub fn allows(&self, server: &str) -> bool {
        self.servers.as_ref().is_none_or(|s| s.contains(server))
    }

    /// Does the client see only some servers?
    pub fn is_limited(&self) -> bool {
        self.servers.is_some()
    }

    /// The servers it sees (`None`: every one).
    pub fn servers(&self) -> Option<&BTreeSet<String>> {
        self.servers.as_deref()
    }

    /// The servers it sees, as the upstream sessions keep them.
    pub(crate) fn reach(&self) -> Reach {
        self.servers.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_allows_its_servers_and_every_scope_allows_all() {
        let ci = ClientScope::only("ci", ["git".to_string(), "time".to_string()]);
        assert!(ci.is_limited());
        assert!(ci.allows("git") && ci.allows("time"));
        assert!(!ci.allows("github") && !ci.allows("gi"));
        assert_eq!(ci.name(), "ci");
        let all = ClientScope::every("admin");
        assert!(!all.is_limited() && all.allows("anything"));
        assert!(!ClientScope::everyone().is_limited());
        assert_eq!(
            ClientScope::only("none", []).servers().map(|s| s.len()),
            Some(0)
        );
        assert!(!ClientScope::only("none", []).allows("git"));
    }
}
