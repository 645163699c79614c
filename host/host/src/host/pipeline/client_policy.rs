//! A client's own policy, beside the servers' and the settings': what its
//! token or each of a principal's groups admits and says of its calls
//! (`serve.tokens[i]`, `serve.oauth.groups.<name>`). Its rate limit is a
//! bucket of the client's own, kept under its owner (in the shared state
//! when there is one, so that every replica draws from it); its approve
//! rules can only add calls to ask about; its labels name it in `/metrics`
//! by token or groups, never by person.
//!
//! Groups grant. A call is judged by the groups that admit its tool alone:
//! of them, the least strict approve rule and the most generous rate limit
//! hold, and a group that admits the tool and sets none leaves it unasked,
//! or unlimited. A group that does not admit a tool says nothing of it.

use crate::config::approve::glob_matches;
use crate::config::rate::Rate;
use crate::config::{ApproveMode, ApproveRule};

/// What one token or group admits, and says of its calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallRule {
    /// Where it is set (`serve.tokens[0]`, `serve.oauth.groups.eng`).
    pub at: String,
    /// `servers`: those it admits (`None`: any).
    pub servers: Option<Vec<String>>,
    /// `tools`: globs over `server/tool`, the server part a name; `None`:
    /// every tool of its servers.
    pub tools: Option<Vec<String>>,
    /// `approve`: globs over `server/tool` (or one mode).
    pub approve: Option<ApproveRule>,
    /// `rateLimit`.
    pub rate_limit: Option<Rate>,
}

impl CallRule {
    /// Does it admit `server` (some tool of it, its prompts and resources)?
    fn admits_server(&self, server: &str) -> bool {
        self.of_server(server)
            && self.tools.as_ref().is_none_or(|globs| {
                globs
                    .iter()
                    .any(|g| g.split_once('/').is_some_and(|(s, _)| s == server))
            })
    }

    /// Does it admit `server`'s tool `tool` (its own name)?
    pub fn admits(&self, server: &str, tool: &str) -> bool {
        self.of_server(server)
            && self.tools.as_ref().is_none_or(|globs| {
                let named = format!("{server}/{tool}");
                globs.iter().any(|g| glob_matches(g, &named))
            })
    }

    /// The servers it admits, by name (`None`: any).
    pub fn server_names(&self) -> Option<Vec<String>> {
        let Some(globs) = &self.tools else {
            return self.servers.clone();
        };
        let named = globs.iter().filter_map(|g| Some(g.split_once('/')?.0));
        let mut names: Vec<String> = named
            .filter(|s| self.of_server(s))
            .map(str::to_string)
            .collect();
        names.sort();
        names.dedup();
        Some(names)
    }

    fn of_server(&self, server: &str) -> bool {
        self.servers
            .as_ref()
            .is_none_or(|s| s.iter().any(|x| x == server))
    }
}

/// What one client's token or groups say of its calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientPolicy {
    /// Who its buckets are kept under: unique across tokens and issuers.
    pub owner: String,
    /// The token's name, for `/metrics` (empty for a principal).
    pub token: String,
    /// The principal's groups, for `/metrics` (empty for a token).
    pub groups: String,
    /// Its token's rule, or one per group it is in (none: no rule).
    pub rules: Vec<CallRule>,
    /// The access token it presented, when an issuer signed it: exchanged
    /// for a server's own where a server takes that (RFC 8693), never sent
    /// on, never shown.
    pub presented: Option<Presented>,
}

/// An access token a principal presented to the gateway.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Presented(pub std::sync::Arc<str>);

impl std::fmt::Debug for Presented {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Presented(…)")
    }
}

impl ClientPolicy {
    /// The rules that admit `server`'s `tool` (`""`: a read of `server`).
    fn admitting<'a>(&'a self, server: &'a str, tool: &'a str) -> Vec<&'a CallRule> {
        self.rules
            .iter()
            .filter(|r| match tool {
                "" => r.admits_server(server),
                _ => r.admits(server, tool),
            })
            .collect()
    }

    /// Which calls of `server`'s `tool` its rules ask about, and the setting
    /// that says so (`None`: they add nothing).
    pub fn approve_mode(&self, server: &str, tool: &str) -> Option<(ApproveMode, String)> {
        let named = format!("{server}/{tool}");
        let mut least: Option<(ApproveMode, &str)> = None;
        for rule in self.admitting(server, tool) {
            let mode = rule.approve.as_ref()?.mode_for(&named).unwrap_or_default();
            if least.is_none_or(|(m, _)| mode < m) {
                least = Some((mode, &rule.at));
            }
        }
        least.map(|(mode, at)| (mode, format!("{at}.approve")))
    }

    /// Its own rate limit for `server`'s `tool` (`""`: a read), and the
    /// setting that sets it (`None`: no limit of its own).
    pub fn rate_for(&self, server: &str, tool: &str) -> Option<(String, Rate)> {
        let mut most: Option<(Rate, &str)> = None;
        for rule in self.admitting(server, tool) {
            let rate = rule.rate_limit?;
            if most.is_none_or(|(m, _)| per_second(rate) > per_second(m)) {
                most = Some((rate, &rule.at));
            }
        }
        most.map(|(rate, at)| (format!("{at}.rateLimit"), rate))
    }
}

fn per_second(rate: Rate) -> f64 {
    f64::from(rate.calls) / rate.per.as_secs_f64().max(f64::EPSILON)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rule(
        at: &str,
        tools: Option<&[&str]>,
        approve: Option<Value>,
        rate: Option<&str>,
    ) -> CallRule {
        CallRule {
            at: at.into(),
            servers: None,
            tools: tools.map(|t| t.iter().map(|x| x.to_string()).collect()),
            approve: approve.map(|v| ApproveRule::parse(&v).unwrap()),
            rate_limit: rate.map(|r| Rate::parse(r).unwrap()),
        }
    }

    #[test]
    fn only_the_groups_that_admit_a_tool_judge_its_calls() {
        let interns = rule(
            "g.interns",
            None,
            Some(json!({"github/*": "all"})),
            Some("60/min"),
        );
        let newsletter = rule("g.newsletter", Some(&["time/*"]), None, None);
        let policy = ClientPolicy {
            rules: vec![interns, newsletter],
            ..Default::default()
        };
        let mode = |s: &str, t: &str| policy.approve_mode(s, t).map(|(m, _)| m);
        assert_eq!(
            mode("github", "create_issue"),
            Some(ApproveMode::All),
            "the newsletter group does not admit it"
        );
        assert_eq!(
            mode("time", "now"),
            None,
            "the newsletter group admits it unasked"
        );
        let (setting, rate) = policy.rate_for("github", "create_issue").unwrap();
        assert_eq!(
            (setting.as_str(), rate.text()),
            ("g.interns.rateLimit", "60/min".into())
        );
        assert_eq!(policy.rate_for("time", "now"), None);
    }

    #[test]
    fn of_the_groups_that_admit_a_tool_the_least_strict_and_most_generous_hold() {
        let strict = rule("g.a", None, Some(json!({"*": "all"})), Some("10/min"));
        let lenient = rule(
            "g.b",
            None,
            Some(json!({"github/*": "writes"})),
            Some("5/s"),
        );
        let policy = ClientPolicy {
            rules: vec![strict, lenient],
            ..Default::default()
        };
        assert_eq!(
            policy.approve_mode("github", "push"),
            Some((ApproveMode::Writes, "g.b.approve".into()))
        );
        assert_eq!(
            policy.approve_mode("time", "now").map(|(m, _)| m),
            Some(ApproveMode::None),
            "a glob that names no tool of it asks nothing"
        );
        assert_eq!(policy.rate_for("time", "now").unwrap().1.text(), "5/s");
        assert_eq!(ClientPolicy::default().approve_mode("a", "b"), None);
    }

    #[test]
    fn a_rule_of_tools_admits_the_servers_its_globs_name_alone() {
        let support = rule("g.s", Some(&["github/get_*", "time/now"]), None, None);
        assert!(support.admits_server("github") && support.admits_server("time"));
        assert!(!support.admits_server("filesystem"));
        assert!(support.admits("github", "get_issue") && !support.admits("github", "push"));
        assert_eq!(
            support.server_names(),
            Some(vec!["github".into(), "time".into()])
        );
        let none = rule("g.n", Some(&[]), None, None);
        assert_eq!(none.server_names(), Some(vec![]));
        assert_eq!(rule("g.all", None, None, None).server_names(), None);
    }
}
