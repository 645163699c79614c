//! What `ToolSearch`'s description says of the tools it can load: the richest
//! of three forms that fits the budget. Every tool with the start of its
//! description; else every tool's name, grouped by server with what the names
//! share written once; else the servers, most tools first, each with a few
//! words of what its tools do (its `searchKeywords` when it has them).

mod words;

use crate::catalog::Entry;
use crate::present;

/// Words shown at most for a server in the servers form.
const SERVER_WORDS: usize = 4;
/// Characters of a description in the first form.
const DESCRIPTION_CHARS: usize = 60;

/// The tools of one server.
pub(super) struct Group<'a> {
    pub server: &'a str,
    /// The server's `searchKeywords`: said of it instead of words of its tools.
    pub keywords: &'a [String],
    pub tools: Vec<&'a Entry>,
}

pub(crate) use crate::gateway::lists::Said;

/// Which form an outline took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    Described,
    Names,
    Servers,
}

/// The outline of `groups` within `room` bytes, and its form. `said` is
/// asked only when the servers form is the one that fits.
pub(super) fn outline<'s>(
    groups: &[Group<'_>],
    room: usize,
    said: impl FnOnce() -> &'s Said,
) -> (Form, String) {
    if groups.is_empty() {
        return (Form::Described, String::new());
    }
    if let Some(text) = described(groups, room) {
        return (Form::Described, text);
    }
    let named = names(groups, room);
    if named.complete {
        return (Form::Names, named.text);
    }
    (Form::Servers, servers(groups, room, said()).text)
}

/// Part of a form that fits: its text, and whether it tells of every tool.
pub(super) struct Fitted {
    pub text: String,
    pub complete: bool,
    /// What was shown of each server, by its index in the groups: tool names
    /// or words.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "what the tests and the evaluation read")
    )]
    pub shown: Vec<Option<Vec<String>>>,
}

/// Every tool with the start of its description, if all fit.
fn described(groups: &[Group<'_>], room: usize) -> Option<String> {
    let mut text = String::from("\n\nAvailable tools:");
    for e in groups.iter().flat_map(|g| &g.tools) {
        let description = present::truncate_at_word(&e.tool.description, DESCRIPTION_CHARS);
        text.push_str(&format!("\n- {}: {description}", e.shown_name()));
        if text.len() > room {
            return None;
        }
    }
    Some(text)
}

/// Each server's tool names on a line, what they share written once
/// (`github__{create_issue, list_issues}`), as many servers as fit.
pub(super) fn names(groups: &[Group<'_>], room: usize) -> Fitted {
    let mut text = String::from("\n\nTools by server:");
    let mut shown = vec![None; groups.len()];
    let mut complete = true;
    for (i, g) in groups.iter().enumerate() {
        let names: Vec<&str> = g.tools.iter().map(|e| e.name.as_str()).collect();
        let line = format!("\n- {}", grouped(g.server, &names));
        if text.len() + line.len() > room {
            complete = false;
            continue;
        }
        text.push_str(&line);
        shown[i] = Some(names.iter().map(|n| n.to_string()).collect());
    }
    Fitted {
        text,
        complete,
        shown,
    }
}

/// `prefix{a, b}` when the names share a prefix, else `server: a, b`.
fn grouped(server: &str, names: &[&str]) -> String {
    let prefix = shared_prefix(names);
    if names.len() < 2 || prefix.is_empty() {
        return format!("{server}: {}", names.join(", "));
    }
    let rests: Vec<&str> = names.iter().map(|n| &n[prefix.len()..]).collect();
    format!("{prefix}{{{}}}", rests.join(", "))
}

/// The start all `names` share, up to its last separator (`_`, `-`, `.`) so
/// that no word is cut in two; none when a name would be left empty.
fn shared_prefix<'n>(names: &[&'n str]) -> &'n str {
    let Some((first, rest)) = names.split_first() else {
        return "";
    };
    let mut len = first.len();
    for n in rest {
        len = first
            .bytes()
            .zip(n.bytes())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
    }
    // Separators are ASCII: cutting after one is on a character boundary.
    let Some(end) = first.as_bytes()[..len]
        .iter()
        .rposition(|b| matches!(b, b'_' | b'-' | b'.'))
    else {
        return "";
    };
    let prefix = &first[..=end];
    match names.iter().any(|n| n.len() == prefix.len()) {
        true => "",
        false => prefix,
    }
}

/// The servers, most tools first: every name that fits, then a word of each
/// in turn while there is room, then the tool counts if all of them fit.
pub(super) fn servers(groups: &[Group<'_>], room: usize, said: &Said) -> Fitted {
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(groups[i].tools.len()));
    let head = "\n\nServers, most tools first: ";
    let more = |n: usize| format!("; and {n} more servers");
    // Names first: every server named tells what exists. Each costs its
    // separator ("; ") too, the first one's to spare.
    let cost = |i: usize| groups[i].server.len() + 2;
    let every: usize = head.len() + order.iter().map(|&i| cost(i)).sum::<usize>();
    let reserve = if every <= room {
        0
    } else {
        more(order.len()).len()
    };
    let mut used = head.len() + reserve;
    let mut named = Vec::new();
    for &i in &order {
        if used + cost(i) > room {
            break;
        }
        used += cost(i);
        named.push(i);
    }
    let left = order.len() - named.len();
    if named.is_empty() {
        // Not one name fits: the description's count says enough.
        return Fitted {
            text: String::new(),
            complete: false,
            shown: vec![None; groups.len()],
        };
    }
    let words: Vec<&[String]> = groups
        .iter()
        .map(|g| said.get(g.server).map_or(&[][..], Vec::as_slice))
        .collect();
    let mut shown_words: Vec<Vec<&str>> = vec![Vec::new(); groups.len()];
    for turn in 0..SERVER_WORDS {
        for &i in &named {
            // ": " before the first word, ", " before the others.
            match words[i].get(turn) {
                Some(word) if used + word.len() + 2 <= room => {
                    used += word.len() + 2;
                    shown_words[i].push(word);
                }
                _ => {}
            }
        }
    }
    let count = |i: usize| format!(" ({})", groups[i].tools.len());
    let counts: usize = named.iter().map(|&i| count(i).len()).sum();
    let with_counts = left == 0 && used + counts <= room;
    let entries: Vec<String> = named
        .iter()
        .map(|&i| {
            let mut entry = groups[i].server.to_string();
            if with_counts {
                entry.push_str(&count(i));
            }
            if !shown_words[i].is_empty() {
                entry.push_str(&format!(": {}", shown_words[i].join(", ")));
            }
            entry
        })
        .collect();
    let mut text = format!("{head}{}", entries.join("; "));
    if left > 0 {
        text.push_str(&more(left));
    }
    let mut shown = vec![None; groups.len()];
    for &i in &named {
        shown[i] = Some(shown_words[i].iter().map(|w| w.to_string()).collect());
    }
    Fitted {
        text,
        complete: left == 0,
        shown,
    }
}

/// What is said of each server of `groups` (all the tools the client sees):
/// its `searchKeywords`, else words of its tools.
pub(super) fn said_of(groups: &[Group<'_>]) -> Said {
    let tools: Vec<words::Tools<'_>> = groups
        .iter()
        .map(|g| words::Tools {
            server: g.server,
            tools: g
                .tools
                .iter()
                .map(|e| (e.tool.name.as_str(), e.tool.description.as_str()))
                .collect(),
        })
        .collect();
    let derived = words::of_servers(&tools, SERVER_WORDS);
    groups
        .iter()
        .zip(derived)
        .map(|(g, derived)| {
            let words = match g.keywords {
                [] => derived,
                keywords => keywords.to_vec(),
            };
            (g.server.to_string(), words)
        })
        .collect()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod evaluation;
