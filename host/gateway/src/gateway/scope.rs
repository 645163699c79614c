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

use crate::downstream::Reach;
use crate::host::pipeline::{CallRule, ClientPolicy};
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
    /// Some rule names its tools: a tool is seen when a rule admits it.
    by_tool: bool,
    /// What its token or groups admit and say of its calls: its rules, its
    /// own rate limit and approve rules, its labels in `/metrics`.
    calls: Option<Arc<ClientPolicy>>,
}

/// What a token's client owns its sessions under, and keeps its tool lists
/// under: no principal's (`oauth:…`) can be the same.
fn token_key(name: &str) -> String {
    format!("token:{name}")
}

/// The scope of a request that no token limits.
static EVERYONE: LazyLock<ClientScope> = LazyLock::new(|| ClientScope::every(""));

impl ClientScope {
    /// A client that sees every server.
    pub fn every(name: &str) -> ClientScope {
        let key: Arc<str> = token_key(name).into();
        ClientScope {
            name: name.into(),
            owner: key.clone(),
            policy: key,
            servers: None,
            by_tool: false,
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

    /// The client of the token named `name`, seeing what `rules` admit (no
    /// rule: everything), its calls counted under the token's name.
    pub fn token(name: &str, rules: Vec<CallRule>) -> ClientScope {
        let key = token_key(name);
        let calls = ClientPolicy {
            owner: key.clone(),
            token: name.to_string(),
            rules,
            ..ClientPolicy::default()
        };
        ClientScope::admitted_by(name, &key, calls)
    }

    /// A client named `name` that sees what `calls`'s rules admit together
    /// (no rule: everything): each rule's servers, or the servers its tool
    /// globs name, and of them the tools its globs match. `policy` names
    /// the rules (clients of one policy share tool lists).
    pub fn admitted_by(name: &str, policy: &str, calls: ClientPolicy) -> ClientScope {
        let rules = &calls.rules;
        let names: Option<Vec<Vec<String>>> = rules.iter().map(CallRule::server_names).collect();
        let servers = match (rules.is_empty(), names) {
            (false, Some(names)) => Some(Arc::new(names.into_iter().flatten().collect())),
            _ => None,
        };
        ClientScope {
            name: name.into(),
            owner: calls.owner.as_str().into(),
            policy: policy.into(),
            servers,
            by_tool: rules.iter().any(|r| r.tools.is_some()),
            calls: Some(Arc::new(calls)),
        }
    }

    /// This client, with the access token it presented kept for servers
    /// that take it in exchange (see [`ClientPolicy::presented`]).
    pub(crate) fn presenting(mut self, token: &str) -> ClientScope {
        if let Some(calls) = self.calls.as_mut() {
            let presented = crate::host::pipeline::Presented(token.into());
            Arc::make_mut(calls).presented = Some(presented);
        }
        self
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
        let by_rule = || {
            self.calls
                .as_ref()
                .is_some_and(|c| c.rules.iter().any(|r| r.admits(server, tool)))
        };
        self.allows(server) && (!self.by_tool || by_rule())
    }

    /// Does the client see this catalog entry: a tool (or resource tool)
    /// by [`ClientScope::allows_tool`], a skill by its server?
    pub fn sees(&self, tool: &crate::catalog::Tool) -> bool {
        match tool.kind {
            crate::catalog::ToolKind::Skill => self.allows(&tool.server),
            _ => self.allows_tool(&tool.server, &tool.name),
        }
    }

    /// The status of the servers this client sees, each tool count of the
    /// tools it sees.
    pub fn statuses(&self, host: &crate::host::Host) -> Vec<crate::catalog::ServerStatus> {
        let mut all = match self.limits_tools() {
            true => host.status_seen(|t| self.sees(t)),
            false => host.status(),
        };
        all.retain(|s| self.allows(&s.name));
        all
    }

    /// Does the client see only some servers or tools?
    pub fn is_limited(&self) -> bool {
        self.servers.is_some() || self.by_tool
    }

    /// Does the client see only some of its servers' tools?
    pub fn limits_tools(&self) -> bool {
        self.by_tool
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
        let rule = |servers: Option<&[&str]>, tools: Option<&[&str]>| CallRule {
            servers: servers.map(|s| s.iter().map(|x| x.to_string()).collect()),
            tools: tools.map(|g| g.iter().map(|x| x.to_string()).collect()),
            ..CallRule::default()
        };
        let policy = |owner: &str, rules: Vec<CallRule>| ClientPolicy {
            owner: owner.into(),
            rules,
            ..ClientPolicy::default()
        };
        // One group sees every git tool, another time's "get_*" and
        // github's issue readers.
        let both = ClientScope::admitted_by(
            "ada@example.com",
            "groups:dev,ops",
            policy(
                "oauth:https://idp#sub:ada",
                vec![
                    rule(Some(&["git"]), None),
                    rule(None, Some(&["time/get_*", "github/*issue?"])),
                ],
            ),
        );
        assert!(both.allows_tool("git", "git_log"));
        assert!(both.allows_tool("time", "get_current_time"));
        assert!(!both.allows_tool("time", "convert_time"));
        assert!(both.allows_tool("github", "get_issues"));
        assert!(!both.allows_tool("github", "get_issue"));
        assert!(both.is_limited() && both.limits_tools());
        let seen: Vec<&String> = both.servers().unwrap().iter().collect();
        assert_eq!(
            seen,
            ["git", "github", "time"],
            "the servers its globs name alone"
        );
        assert!(!both.allows("memory"));
        // Without globs anywhere, tools are not limited.
        let servers_only =
            ClientScope::admitted_by("x", "p", policy("o", vec![rule(Some(&["git"]), None)]));
        assert!(!servers_only.limits_tools() && servers_only.allows_tool("git", "any"));
        assert!(!servers_only.allows_tool("time", "get_current_time"));
        // An empty list of tools sees nothing.
        let nothing = ClientScope::admitted_by("x", "p", policy("o", vec![rule(None, Some(&[]))]));
        assert_eq!(nothing.servers().map(|s| s.len()), Some(0));
        // A principal named as a token is still not its owner.
        assert_ne!(ClientScope::every("ci").owner(), both.owner());
        let robot = ClientScope::admitted_by(
            "ci",
            "groups:ci",
            policy("oauth:https://idp#client:ci", vec![]),
        );
        assert_ne!(robot.owner(), ClientScope::every("ci").owner());
        assert!(!robot.is_limited(), "no rule: everything");
    }
}
