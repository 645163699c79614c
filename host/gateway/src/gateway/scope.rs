//! Which servers and tools a client sees. Over HTTP each bearer token names
//! a client and may limit it to some servers and tools
//! (`serve.tokens[].servers`, `.tools`), and each principal of `serve.oauth`
//! sees what its groups see together; the token middleware puts the
//! client's [`ClientScope`] into the request, rmcp hands the request's parts
//! to every handler, and each handler shows and reaches only that client's
//! servers and tools. A server or tool the client does not see looks exactly
//! like one that does not exist: its tools are unknown tools, its prompts,
//! resources and tasks unknown ones.
//!
//! stdio, a gateway without tokens, and `--token` are unlimited, and take the
//! paths they took before scopes existed.

use crate::config::approve::glob_matches;
use crate::downstream::Reach;
use crate::host::pipeline::ClientPolicy;
use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

/// A client of the gateway: who it is, and the servers and tools it sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientScope {
    /// What logs and the audit call it: a token's name, a principal's
    /// email or subject.
    name: Arc<str>,
    /// Who owns its sessions and tasks: unique across tokens and issuers,
    /// so that no principal can be taken for a token of the same name.
    owner: Arc<str>,
    /// What its tool lists are kept under: clients of the same policy (the
    /// same groups) share them.
    policy: Arc<str>,
    /// `None`: every server.
    servers: Reach,
    /// `None`: every tool of the servers it sees; else a tool must be
    /// admitted by one of these.
    tools: Option<Arc<[ToolRule]>>,
    /// What its token or groups say of its calls: its own rate limit and
    /// approve rules, its labels in `/metrics`.
    calls: Option<Arc<ClientPolicy>>,
}

/// Tools one group (or token) admits: of its servers (`None`: any), those
/// whose `server/tool` matches one of its globs (`None`: every one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolRule {
    /// The servers it admits tools of.
    pub servers: Option<Vec<String>>,
    /// Globs (`*`, `?`) over `server/tool`.
    pub globs: Option<Vec<String>>,
}

impl ToolRule {
    fn admits(&self, server: &str, tool: &str) -> bool {
        let of_server = self
            .servers
            .as_ref()
            .is_none_or(|s| s.iter().any(|x| x == server));
        of_server
            && self.globs.as_ref().is_none_or(|globs| {
                let named = format!("{server}/{tool}");
                globs.iter().any(|g| glob_matches(g, &named))
            })
    }
}

/// The scope of a request that no token limits.
static EVERYONE: LazyLock<ClientScope> = LazyLock::new(|| ClientScope::every(""));

impl ClientScope {
    /// A client that sees every server.
    pub fn every(name: &str) -> ClientScope {
        ClientScope {
            name: name.into(),
            owner: format!("token:{name}").into(),
            policy: format!("token:{name}").into(),
            servers: None,
            tools: None,
            calls: None,
        }
    }

    /// A client that sees only `servers`.
    pub fn only(name: &str, servers: impl IntoIterator<Item = String>) -> ClientScope {
        ClientScope {
            servers: Some(Arc::new(servers.into_iter().collect())),
            ..ClientScope::every(name)
        }
    }

    /// A client that sees what `rules` admit together: each rule's servers,
    /// and of them the tools its globs match. `owner` names it uniquely;
    /// `policy` names the rules (clients of one policy share tool lists).
    pub fn admitted_by(name: &str, owner: &str, policy: &str, rules: Vec<ToolRule>) -> ClientScope {
        let servers = match rules.iter().any(|r| r.servers.is_none()) {
            true => None,
            false => Some(Arc::new(
                rules
                    .iter()
                    .flat_map(|r| r.servers.iter().flatten().cloned())
                    .collect(),
            )),
        };
        // A rule without globs admits every tool of its servers only.
        let by_tool = rules.iter().any(|r| r.globs.is_some());
        ClientScope {
            name: name.into(),
            owner: owner.into(),
            policy: policy.into(),
            servers,
            tools: by_tool.then(|| rules.into()),
            calls: None,
        }
    }

    /// The same client, its calls under `policy`.
    pub fn with_policy(self, policy: ClientPolicy) -> ClientScope {
        ClientScope {
            calls: Some(Arc::new(policy)),
            ..self
        }
    }

    /// What its token or groups say of its calls.
    pub(crate) fn calls(&self) -> Option<Arc<ClientPolicy>> {
        self.calls.clone()
    }

    /// Unlimited, for requests that carry no token's scope.
    pub fn everyone() -> ClientScope {
        EVERYONE.clone()
    }

    /// The token's or principal's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Who owns its sessions and tasks (unique across tokens and issuers).
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// What its tool lists are kept under.
    pub(crate) fn policy(&self) -> &str {
        &self.policy
    }

    /// Does the client see `server`?
    pub fn allows(&self, server: &str) -> bool {
        self.servers.as_ref().is_none_or(|s| s.contains(server))
    }

    /// Does the client see the tool `tool` (the server's own name) of
    /// `server`?
    pub fn allows_tool(&self, server: &str, tool: &str) -> bool {
        self.allows(server)
            && self
                .tools
                .as_ref()
                .is_none_or(|rules| rules.iter().any(|r| r.admits(server, tool)))
    }

    /// Does the client see this catalog entry: a tool (or resource tool)
    /// by [`ClientScope::allows_tool`], a skill by its server?
    pub fn sees(&self, tool: &crate::catalog::Tool) -> bool {
        match tool.kind {
            crate::catalog::ToolKind::Skill => self.allows(&tool.server),
            _ => self.allows_tool(&tool.server, &tool.name),
        }
    }

    /// Does the client see only some servers or tools?
    pub fn is_limited(&self) -> bool {
        self.servers.is_some() || self.tools.is_some()
    }

    /// Does the client see only some of its servers' tools?
    pub fn limits_tools(&self) -> bool {
        self.tools.is_some()
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

    #[test]
    fn a_tool_is_seen_when_one_rule_admits_it_and_owners_never_mix_tokens_and_principals() {
        let rule = |servers: Option<&[&str]>, globs: Option<&[&str]>| ToolRule {
            servers: servers.map(|s| s.iter().map(|x| x.to_string()).collect()),
            globs: globs.map(|g| g.iter().map(|x| x.to_string()).collect()),
        };
        // One group sees every git tool, another time's "get_*" and
        // github's issue readers.
        let both = ClientScope::admitted_by(
            "ada@example.com",
            "oauth:https://idp#ada",
            "groups:dev,ops",
            vec![
                rule(Some(&["git"]), None),
                rule(None, Some(&["time/get_*", "github/*issue?"])),
            ],
        );
        assert!(both.allows_tool("git", "git_log"));
        assert!(both.allows_tool("time", "get_current_time"));
        assert!(!both.allows_tool("time", "convert_time"));
        assert!(both.allows_tool("github", "get_issues"));
        assert!(!both.allows_tool("github", "get_issue"));
        assert!(both.is_limited() && both.limits_tools());
        assert!(both.allows("memory"), "any server, for the glob rule");
        // Without globs anywhere, tools are not limited.
        let servers_only =
            ClientScope::admitted_by("x", "o", "p", vec![rule(Some(&["git"]), None)]);
        assert!(!servers_only.limits_tools() && servers_only.allows_tool("git", "any"));
        assert!(!servers_only.allows_tool("time", "get_current_time"));
        // A principal named as a token is still not its owner.
        assert_ne!(ClientScope::every("ci").owner(), both.owner());
        let robot = ClientScope::admitted_by("ci", "oauth:https://idp#ci", "groups:ci", vec![]);
        assert_ne!(robot.owner(), ClientScope::every("ci").owner());
        assert_eq!(
            robot.servers().map(|s| s.len()),
            Some(0),
            "no group: nothing"
        );
    }
}
