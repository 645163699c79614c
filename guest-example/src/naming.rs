//! Agent-facing tool names: `<prefix>__<tool>`.
//!
//! Every name matches `^[A-Za-z0-9_-]{1,64}$`, the strictest rule among the major
//! LLM APIs. Over-long names keep a readable head and end in a hash of the full
//! name, so they stay stable and distinct. When two tools would get one name
//! (sanitizing, prefixes), the first keeps it and the other gets a suffix from
//! a hash of its server and name: no tool is hidden, but one that its server
//! lists twice.

use crate::model::{Kind, Tool};
use std::collections::HashMap;

/// The longest name every major LLM API accepts.
pub const MAX_NAME_LEN: usize = 64;
/// Separator between the server prefix and the tool part.
const SEPARATOR: &str = "__";

/// WIT `prefix-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PrefixMode {
    #[default]
    Server,
    Short,
    None,
}

/// WIT `name-outcome`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Named(String),
    DuplicateOf(u32),
    Reserved(String),
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The server prefix for a mode: hyphens become underscores, so that the prefix
/// reads as one identifier; `short` also drops a trailing `mcp` / `-mcp`.
fn server_prefix(server: &str, mode: PrefixMode) -> String {
    let base = match mode {
        PrefixMode::None => return String::new(),
        PrefixMode::Server => server,
        PrefixMode::Short => strip_mcp_suffix(server),
    };
    let prefix = sanitize(base).replace('-', "_");
    if prefix.is_empty() {
        "mcp".to_string()
    } else {
        prefix
    }
}

fn strip_mcp_suffix(server: &str) -> &str {
    let lower = server.to_ascii_lowercase();
    if !lower.ends_with("mcp") {
        return server;
    }
    let mut cut = server.len() - 3;
    if server[..cut].ends_with(['-', '_']) {
        cut -= 1;
    }
    &server[..cut]
}

/// The tool part of a name: the sanitized tool name, or `get_<slug>` for a resource.
fn tool_part(tool: &Tool) -> String {
    match tool.kind {
        Kind::Tool => {
            let part = sanitize(&tool.name);
            if part.is_empty() {
                "tool".to_string()
            } else if !part.bytes().any(|b| b.is_ascii_alphanumeric()) {
                // Nothing readable survived (a name in another script): the
                // hash of the name tells such tools apart.
                format!("tool_{:08x}", fnv1a64(tool.name.as_bytes()) as u32)
            } else {
                part
            }
        }
        Kind::Resource => format!("get_{}", resource_slug(&tool.name)),
        // The host never names skills; a name that cannot pass for a tool's.
        Kind::Skill => format!("skill_{}", resource_slug(&tool.name)),
    }
}

/// A resource name as a lowercase identifier: runs of other characters become one
/// `_`; an empty slug or one starting with a digit gets a `resource` prefix.
fn resource_slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('_') {
            slug.push('_');
        }
    }
    while slug.ends_with('_') {
        slug.pop();
    }
    if slug.is_empty() {
        "resource".to_string()
    } else if slug.starts_with(|c: char| c.is_ascii_digit()) {
        format!("resource_{slug}")
    } else {
        slug
    }
}

/// The name of one tool, before collision handling.
fn name_for(tool: &Tool, mode: PrefixMode) -> String {
    let prefix = server_prefix(&tool.server, mode);
    let part = tool_part(tool);
    let full = if prefix.is_empty() {
        part.clone()
    } else {
        format!("{prefix}{SEPARATOR}{part}")
    };
    if full.len() <= MAX_NAME_LEN {
        return full;
    }
    // Too long: shorten the server prefix first, so the name still says which
    // tool it is; the hash of the whole name keeps shortened names apart.
    let hash = format!("{:08x}", fnv1a64(full.as_bytes()) as u32);
    let room = MAX_NAME_LEN.saturating_sub(SEPARATOR.len() + part.len() + 1 + hash.len());
    if !prefix.is_empty() && room >= 8 && room < prefix.len() {
        return format!("{}{SEPARATOR}{part}_{hash}", &prefix[..room]);
    }
    fit(full)
}

/// Shortens a name over [`MAX_NAME_LEN`] to a head plus `_` plus 8 hex digits of
/// a hash of the whole name.
pub fn fit(name: String) -> String {
    if name.len() <= MAX_NAME_LEN {
        return name;
    }
    let hash = format!("{:08x}", fnv1a64(name.as_bytes()) as u32);
    // `name` is ASCII after sanitizing; should a caller pass anything else,
    // the head ends at the character boundary before the cut.
    let mut cut = MAX_NAME_LEN - 1 - hash.len();
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = &name[..cut];
    format!("{head}_{hash}")
}

/// FNV-1a: tiny, stable across versions and platforms.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// `name` ending in `_` and 8 hex digits of `hash`, its head cut to fit.
fn with_suffix(name: &str, hash: u64) -> String {
    let suffix = format!("_{:08x}", hash as u32);
    let mut cut = name.len().min(MAX_NAME_LEN - suffix.len());
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &name[..cut])
}

/// Names a whole catalog: one outcome per tool. A name two tools would share
/// goes to the first; the other is named with a suffix from its identity
/// (server and tool name), unless it is the same tool listed again.
pub fn names(tools: &[Tool], mode: PrefixMode, reserved: &[String]) -> Vec<Outcome> {
    let mut taken: HashMap<String, u32> = HashMap::with_capacity(tools.len());
    // The first index of each tool, for tools a server lists twice.
    let mut listed: HashMap<(&str, &str, bool), u32> = HashMap::with_capacity(tools.len());
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let name = name_for(tool, mode);
            if reserved.contains(&name) {
                return Outcome::Reserved(name);
            }
            let identity = (
                tool.server.as_str(),
                tool.name.as_str(),
                tool.kind == Kind::Tool,
            );
            if let Some(&first) = listed.get(&identity) {
                return Outcome::DuplicateOf(first);
            }
            listed.insert(identity, i as u32);
            if !taken.contains_key(&name) {
                taken.insert(name.clone(), i as u32);
                return Outcome::Named(name);
            }
            let identity = format!("{}\0{}", tool.server, tool.name);
            let mut salt = 0u32;
            let renamed = loop {
                let mut key = identity.clone().into_bytes();
                if salt > 0 {
                    key.extend_from_slice(&salt.to_le_bytes());
                }
                let candidate = with_suffix(&name, fnv1a64(&key));
                if !taken.contains_key(&candidate) && !reserved.contains(&candidate) {
                    break candidate;
                }
                salt += 1;
            };
            taken.insert(renamed.clone(), i as u32);
            Outcome::Named(renamed)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn server_mode_prefixes_with_underscored_server_name() {
        let t = Tool::new("chrome-devtools", "take_screenshot", "");
        assert_eq!(
            name_for(&t, PrefixMode::Server),
            "chrome_devtools__take_screenshot"
        );
    }

    #[test]
    fn short_mode_strips_mcp_suffix() {
        assert_eq!(server_prefix("github-mcp", PrefixMode::Short), "github");
        assert_eq!(server_prefix("githubmcp", PrefixMode::Short), "github");
        assert_eq!(server_prefix("GitHub-MCP", PrefixMode::Short), "GitHub");
        assert_eq!(
            server_prefix("jetbrains-index", PrefixMode::Short),
            "jetbrains_index"
        );
        assert_eq!(server_prefix("mcp", PrefixMode::Short), "mcp");
        assert_eq!(server_prefix("-mcp", PrefixMode::Short), "mcp");
    }

    #[test]
    fn none_mode_is_the_bare_tool_name() {
        let t = Tool::new("git", "git_status", "");
        assert_eq!(name_for(&t, PrefixMode::None), "git_status");
    }

    #[test]
    fn invalid_characters_become_underscores() {
        let t = Tool::new("my.server", "files/read v2", "");
        let name = name_for(&t, PrefixMode::Server);
        assert_eq!(name, "my_server__files_read_v2");
        assert!(valid(&name));
    }

    #[test]
    fn tool_hyphens_are_kept() {
        let t = Tool::new("srv", "get-thing", "");
        assert_eq!(name_for(&t, PrefixMode::Server), "srv__get-thing");
    }

    #[test]
    fn resources_are_named_get_slug() {
        let mut t = Tool::new("xcode", "Simulators List", "");
        t.kind = Kind::Resource;
        assert_eq!(
            name_for(&t, PrefixMode::Server),
            "xcode__get_simulators_list"
        );
        assert_eq!(resource_slug("3d models"), "resource_3d_models");
        assert_eq!(resource_slug("***"), "resource");
        assert_eq!(resource_slug("--a--b--"), "a_b");
    }

    #[test]
    fn empty_tool_name_still_yields_a_valid_name() {
        let t = Tool::new("s", "", "");
        assert_eq!(name_for(&t, PrefixMode::None), "tool");
    }

    #[test]
    fn long_names_are_shortened_stably_and_distinctly() {
        let a = Tool::new(
            "a-very-long-server-name-for-testing",
            "an_extremely_long_tool_name_that_goes_on_alpha",
            "",
        );
        let b = Tool::new(
            "a-very-long-server-name-for-testing",
            "an_extremely_long_tool_name_that_goes_on_bravo",
            "",
        );
        let na = name_for(&a, PrefixMode::Server);
        let nb = name_for(&b, PrefixMode::Server);
        assert_eq!(na.len(), MAX_NAME_LEN);
        assert!(valid(&na) && valid(&nb));
        assert_ne!(na, nb);
        assert_eq!(na, name_for(&a, PrefixMode::Server), "stable");
        // The hash is pinned: changing it would rename users' tools.
        assert_eq!(fnv1a64(b"abc"), 0xe71fa2190541574b);
    }

    #[test]
    fn a_long_server_name_is_shortened_before_the_tool_name() {
        let t = Tool::new(&"s".repeat(70), "read_file", "");
        let name = name_for(&t, PrefixMode::Server);
        assert_eq!(name.len(), MAX_NAME_LEN);
        assert!(valid(&name));
        assert!(name.contains("__read_file_"), "{name}");
        let other = Tool::new(&format!("{}x", "s".repeat(69)), "read_file", "");
        assert_ne!(name, name_for(&other, PrefixMode::Server));
        assert_eq!(server_prefix("foo_mcp", PrefixMode::Short), "foo");
    }

    #[test]
    fn exactly_64_characters_is_not_shortened() {
        let tool = "t".repeat(64 - 3);
        let t = Tool::new("s", &tool, "");
        assert_eq!(name_for(&t, PrefixMode::Server), format!("s__{tool}"));
    }

    #[test]
    fn a_shared_name_goes_to_the_first_tool_and_the_others_get_a_suffix() {
        let tools = vec![
            Tool::new("a", "read", ""),
            Tool::new("b", "read", ""),
            Tool::new("c", "write", ""),
            Tool::new("a", "read", ""),
        ];
        let out = names(&tools, PrefixMode::None, &[]);
        assert_eq!(out[0], Outcome::Named("read".into()));
        let Outcome::Named(second) = &out[1] else {
            panic!("{out:?}")
        };
        assert!(
            second.starts_with("read_") && second.len() == "read_".len() + 8,
            "{second}"
        );
        assert_eq!(out[2], Outcome::Named("write".into()));
        // Only the same tool listed again is a duplicate.
        assert_eq!(out[3], Outcome::DuplicateOf(0));
    }

    #[test]
    fn names_that_sanitize_alike_all_stay_reachable() {
        let tools = vec![
            Tool::new("s", "工具查询", ""),
            Tool::new("s", "文件读取", ""),
            Tool::new("s", "get weather now", ""),
            Tool::new("s", "get_weather_now", ""),
            Tool::new("s", "get.weather.now", ""),
        ];
        let out = names(&tools, PrefixMode::Server, &[]);
        let named: Vec<&str> = out
            .iter()
            .map(|o| match o {
                Outcome::Named(n) => n.as_str(),
                other => panic!("hidden: {other:?}"),
            })
            .collect();
        let distinct: std::collections::HashSet<&&str> = named.iter().collect();
        assert_eq!(distinct.len(), tools.len(), "{named:?}");
        assert!(named.iter().all(|n| valid(n)), "{named:?}");
        assert!(named[0].starts_with("s__tool_"), "{named:?}");
        assert_eq!(named[2], "s__get_weather_now");
    }

    #[test]
    fn suffixed_names_fit() {
        let long = "x".repeat(80);
        let tools = vec![Tool::new("a", &long, ""), Tool::new("b", &long, "")];
        for o in names(&tools, PrefixMode::None, &[]) {
            let Outcome::Named(n) = o else { panic!() };
            assert!(valid(&n), "{n}");
        }
    }

    #[test]
    fn short_mode_can_collide_and_is_resolved() {
        let tools = vec![
            Tool::new("github-mcp", "x", ""),
            Tool::new("github", "x", ""),
        ];
        let out = names(&tools, PrefixMode::Short, &[]);
        assert_eq!(out[0], Outcome::Named("github__x".into()));
        assert!(
            matches!(&out[1], Outcome::Named(n) if n.starts_with("github__x_")),
            "{out:?}"
        );
    }

    #[test]
    fn fit_cuts_at_a_character_boundary() {
        // Callers pass sanitized (ASCII) names, but `fit` is public: a
        // multi-byte character across the cut must not panic.
        let name = fit("é".repeat(40));
        assert!(name.len() <= MAX_NAME_LEN, "{name}");
        assert!(name.starts_with("éé"));
        let ascii = "n".repeat(80);
        assert_eq!(fit(ascii.clone()).len(), MAX_NAME_LEN);
        assert!(fit(ascii).starts_with(&"n".repeat(55)));
    }

    #[test]
    fn reserved_names_are_refused() {
        let tools = vec![Tool::new("s", "mcp", "")];
        let out = names(&tools, PrefixMode::None, &["mcp".to_string()]);
        assert_eq!(out, vec![Outcome::Reserved("mcp".into())]);
    }
}
