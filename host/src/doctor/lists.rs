//! Claude Code's `enabledMcpjsonServers` and `disabledMcpjsonServers`: lists
//! of `.mcp.json` servers, in its settings files (and, from older versions,
//! under the project in `~/.claude.json`).

use super::finding::{Finding, Section, Severity};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const LISTS: [&str; 2] = ["enabledMcpjsonServers", "disabledMcpjsonServers"];

/// Where the lists may be: each file, and the keys to the object holding them.
/// In this order: the user's, the project's, the local and the older place.
pub(crate) fn places(home: &Path, project: &Path) -> Vec<(PathBuf, Vec<String>)> {
    let project_key = crate::config::imports::claude_project_key(project);
    vec![
        (home.join(".claude/settings.json"), Vec::new()),
        (project.join(".claude/settings.json"), Vec::new()),
        (project.join(".claude/settings.local.json"), Vec::new()),
        (
            home.join(".claude.json"),
            vec!["projects".into(), project_key],
        ),
    ]
}

/// Checks every list against the servers of the project's `.mcp.json`
/// (`servers`; `None` when there is no readable `.mcp.json`).
pub(crate) fn check(
    files: &BTreeMap<PathBuf, Result<Value, String>>,
    places: &[(PathBuf, Vec<String>)],
    servers: Option<&[String]>,
    out: &mut Vec<Finding>,
) {
    for (file, at) in places {
        let Some(Ok(root)) = files.get(file) else {
            continue;
        };
        let holder = at.iter().try_fold(root, |v, k| v.get(k));
        for list in LISTS {
            if let Some(value) = holder.and_then(|h| h.get(list)) {
                one_list(file, list, value, servers, out);
            }
        }
    }
}

/// A name as Claude Code compares it.
pub(crate) fn normalized(name: &str) -> String {
    // Claude Code replaces each UTF-16 unit: a character outside the basic
    // plane (an emoji) becomes two.
    let keep = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match (keep(c), c.len_utf16()) {
            (true, _) => out.push(c),
            (false, 2) => out.push_str("__"),
            (false, _) => out.push('_'),
        }
    }
    out
}

fn finding(
    file: &Path,
    severity: Severity,
    check: &'static str,
    message: String,
    remedy: String,
) -> Finding {
    Finding::new(Section::Files, severity, check, message, remedy)
        .client("claude-code")
        .file(file)
}

/// One list: not a list, an entry that is not a name, a name with hidden
/// characters, a name no `.mcp.json` server has.
fn one_list(
    file: &Path,
    list: &str,
    value: &Value,
    servers: Option<&[String]>,
    out: &mut Vec<Finding>,
) {
    // What Claude Code does with a value of the wrong type: its settings
    // check fails, and it ignores the whole file (every setting in it, not
    // only this list), without a word.
    let Some(entries) = value.as_array() else {
        out.push(finding(
            file,
            Severity::Blocking,
            "approval-list",
            format!(
                "`{list}` is {}, not a list of server names: Claude Code then ignores this whole settings file, every setting in it",
                crate::config::validate::kind(value)
            ),
            format!("write `{list}` as a list of the names in .mcp.json, e.g. [\"github\"]"),
        ));
        return;
    };
    for (i, entry) in entries.iter().enumerate() {
        let Some(name) = entry.as_str() else {
            out.push(finding(
                file,
                Severity::Blocking,
                "approval-list",
                format!("one bad entry in `{list}`: entry {i} is {entry}, not a server name (a string); Claude Code then ignores this whole settings file, every setting in it, the list's other names among them"),
                format!("write entry {i} of `{list}` as a quoted server name, or remove it"),
            ));
            continue;
        };
        // Claude Code compares names with every character other than a
        // letter, a digit, `_` or `-` made `_`.
        let same = |a: &str, b: &str| normalized(a) == normalized(b);
        let trimmed = name.trim();
        let known = servers.is_some_and(|s| s.iter().any(|n| same(n, name)));
        if !known && trimmed != name && servers.is_some_and(|s| s.iter().any(|n| n == trimmed)) {
            out.push(finding(
                file,
                Severity::Blocking,
                "approval-list",
                format!("one bad entry in `{list}`: {name:?} has leading or trailing whitespace, which Claude Code reads as `_`, so it does not name the .mcp.json server \"{trimmed}\""),
                format!("write it as \"{trimmed}\""),
            ).server(trimmed));
        } else if !known && let Some(servers) = servers {
            out.push(finding(
                file,
                Severity::Warning,
                "approval-list-unknown",
                format!("`{list}` names \"{name}\", which no server in the project's .mcp.json has (it has: {})", if servers.is_empty() { "none".to_string() } else { servers.join(", ") }),
                format!("fix the spelling, or remove \"{name}\" from `{list}`"),
            ).server(name));
        }
    }
}
