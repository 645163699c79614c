//! Which tools are direct (always loaded) and which are deferred.
//!
//! `MCP_DIRECT_TOOLS`, when set, decides alone: `*` makes everything direct,
//! `__none__` nothing, otherwise a comma-separated list of `server` and
//! `server/tool` selectors. Without it, each server's `directTools` applies.

use crate::model::Entry;

/// A server's `directTools` setting (WIT `server-direct`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerDirect {
    All,
    None,
    Only(Vec<String>),
}

/// The value used in `MCP_DIRECT_TOOLS` to turn every direct tool off.
const NONE_SELECTOR: &str = "__none__";

/// Does `wanted` (an original or agent-facing name, hyphens and underscores
/// interchangeable) name this entry?
fn names_entry(wanted: &str, entry: &Entry) -> bool {
    let norm = |s: &str| s.replace('-', "_");
    let wanted = norm(wanted.trim());
    wanted == norm(&entry.tool.name) || wanted == norm(&entry.name)
}

enum Selector<'a> {
    Everything,
    Server(&'a str),
    Tool(&'a str, &'a str),
}

fn parse_env(value: &str) -> Option<Vec<Selector<'_>>> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if value == NONE_SELECTOR {
        return Some(Vec::new());
    }
    let selectors = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s.split_once('/') {
            _ if s == "*" => Selector::Everything,
            Some((server, tool)) => Selector::Tool(server.trim(), tool.trim()),
            None => Selector::Server(s),
        })
        .collect();
    Some(selectors)
}

/// Indices of the direct entries, ascending.
pub fn select(
    entries: &[Entry],
    env_override: Option<&str>,
    servers: &[(String, ServerDirect)],
) -> Vec<u32> {
    let is_direct: Box<dyn Fn(&Entry) -> bool> = match env_override.and_then(parse_env) {
        Some(selectors) => Box::new(move |e: &Entry| {
            selectors.iter().any(|s| match s {
                Selector::Everything => true,
                Selector::Server(server) => e.tool.server == *server,
                Selector::Tool(server, tool) => e.tool.server == *server && names_entry(tool, e),
            })
        }),
        None => Box::new(|e: &Entry| {
            match servers
                .iter()
                .find(|(name, _)| *name == e.tool.server)
                .map(|(_, d)| d)
            {
                Some(ServerDirect::All) => true,
                Some(ServerDirect::Only(list)) => list.iter().any(|w| names_entry(w, e)),
                Some(ServerDirect::None) | None => false,
            }
        }),
    };
    entries
        .iter()
        .enumerate()
        .filter(|(_, e)| is_direct(e))
        .map(|(i, _)| i as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tool;

    fn entries() -> Vec<Entry> {
        [
            ("github", "create_issue"),
            ("github", "list-issues"),
            ("git", "git_status"),
            ("time", "get_time"),
        ]
        .iter()
        .map(|(s, t)| Entry {
            name: format!("{}__{}", s, t),
            tool: Tool::new(s, t, ""),
        })
        .collect()
    }

    fn cfg(list: &[(&str, ServerDirect)]) -> Vec<(String, ServerDirect)> {
        list.iter()
            .map(|(s, d)| (s.to_string(), d.clone()))
            .collect()
    }

    #[test]
    fn nothing_is_direct_by_default() {
        assert!(select(&entries(), None, &[]).is_empty());
    }

    #[test]
    fn server_setting_true_list_false() {
        let servers = cfg(&[
            ("github", ServerDirect::Only(vec!["create_issue".into()])),
            ("git", ServerDirect::All),
            ("time", ServerDirect::None),
        ]);
        assert_eq!(select(&entries(), None, &servers), vec![0, 2]);
    }

    #[test]
    fn list_accepts_agent_facing_and_hyphen_variants() {
        let servers = cfg(&[(
            "github",
            ServerDirect::Only(vec!["github__list_issues".into()]),
        )]);
        assert_eq!(select(&entries(), None, &servers), vec![1]);
    }

    #[test]
    fn env_star_makes_everything_direct() {
        assert_eq!(select(&entries(), Some("*"), &[]), vec![0, 1, 2, 3]);
    }

    #[test]
    fn env_none_overrides_server_settings() {
        let servers = cfg(&[("git", ServerDirect::All)]);
        assert!(select(&entries(), Some("__none__"), &servers).is_empty());
    }

    #[test]
    fn env_selectors_servers_and_tools() {
        let servers = cfg(&[("time", ServerDirect::All)]);
        assert_eq!(
            select(&entries(), Some(" git , github/create_issue"), &servers),
            vec![0, 2]
        );
    }

    #[test]
    fn empty_env_means_unset() {
        let servers = cfg(&[("time", ServerDirect::All)]);
        assert_eq!(select(&entries(), Some("  "), &servers), vec![3]);
    }
}
