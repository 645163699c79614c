//! A client's own policy, beside the servers' and the settings': what a
//! token or a principal's groups say of its calls (`serve.tokens[i]`,
//! `serve.oauth.groups`). Its rate limit is a bucket of the client's own,
//! kept under its owner (in the shared state when there is one, so that
//! every replica draws from it); its approve rules can only add calls to
//! ask about; its labels name it in `/metrics` by token or groups, never
//! by person.

use crate::config::rate::Rate;
use crate::config::{ApproveMode, ApproveRule};

/// What one client's token or groups say of its calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientPolicy {
    /// Who its buckets are kept under: unique across tokens and issuers.
    pub owner: String,
    /// The token's name, for `/metrics` (empty for a principal).
    pub token: String,
    /// The principal's groups, for `/metrics` (empty for a token).
    pub groups: String,
    /// Its own rate limit, and the setting that sets it.
    pub rate_limit: Option<(String, Rate)>,
    /// Its approve rules (globs over `server/tool`); a call is asked about
    /// as the least strict of them says (one per group: groups grant), and
    /// the setting that says so.
    pub approve: Option<(String, Vec<ApproveRule>)>,
}

impl ClientPolicy {
    /// Which calls of `server`'s `tool` its rules ask about, and the
    /// setting that says so (`None`: they add nothing).
    pub fn approve_mode(&self, server: &str, tool: &str) -> Option<(ApproveMode, &str)> {
        let (setting, rules) = self.approve.as_ref()?;
        let named = format!("{server}/{tool}");
        let mode = rules
            .iter()
            .map(|r| r.mode_for(&named).unwrap_or_default())
            .min()?;
        Some((mode, setting.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_least_strict_of_a_principals_rules_decides_for_each_tool() {
        let rule = |v: serde_json::Value| ApproveRule::parse(&v).unwrap();
        let policy = ClientPolicy {
            approve: Some((
                "serve.oauth.groups".into(),
                vec![
                    rule(json!({"github/*": "all", "*": "writes"})),
                    rule(json!({"github/delete_*": "all", "*": "all"})),
                ],
            )),
            ..Default::default()
        };
        let mode = |s: &str, t: &str| policy.approve_mode(s, t).map(|(m, _)| m);
        assert_eq!(mode("github", "get_issue"), Some(ApproveMode::All));
        assert_eq!(mode("time", "get_current_time"), Some(ApproveMode::Writes));
        let neither = ClientPolicy {
            approve: Some(("x".into(), vec![rule(json!({"github/*": "all"}))])),
            ..Default::default()
        };
        assert_eq!(
            neither.approve_mode("time", "now").map(|(m, _)| m),
            Some(ApproveMode::None),
            "a tool no glob names is not asked about"
        );
        assert_eq!(ClientPolicy::default().approve_mode("a", "b"), None);
    }
}
