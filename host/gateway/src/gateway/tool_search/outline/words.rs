//! A few words of what each server's tools do, taken from the tools
//! themselves: the words of their names (and, less, of their descriptions)
//! that are frequent in this server and rare in the others.

use std::collections::HashMap;

/// Words too common in tool names and descriptions to tell servers apart.
const COMMON: &[&str] = &[
    "about",
    "add",
    "all",
    "and",
    "any",
    "are",
    "based",
    "by",
    "can",
    "create",
    "current",
    "data",
    "default",
    "delete",
    "details",
    "does",
    "each",
    "for",
    "from",
    "get",
    "given",
    "has",
    "have",
    "info",
    "information",
    "into",
    "its",
    "list",
    "mcp",
    "new",
    "not",
    "one",
    "only",
    "or",
    "other",
    "read",
    "remove",
    "return",
    "returns",
    "run",
    "server",
    "set",
    "show",
    "specific",
    "specified",
    "such",
    "that",
    "the",
    "their",
    "them",
    "then",
    "this",
    "tool",
    "tools",
    "update",
    "use",
    "used",
    "using",
    "via",
    "when",
    "which",
    "will",
    "with",
    "write",
    "you",
    "your",
];

/// How much a word in a tool's name counts beside one in its description.
const NAME_WEIGHT: f64 = 3.0;
/// Description words read per tool: the first sentence or two say what it does.
const DESCRIPTION_WORDS: usize = 8;

/// One server's tools: their own names and descriptions.
pub(super) struct Tools<'a> {
    /// The server's name (its words say nothing new).
    pub server: &'a str,
    /// `(name, description)` of each tool.
    pub tools: Vec<(&'a str, &'a str)>,
}

/// Up to `most` words for each server, best first.
pub(super) fn of_servers(servers: &[Tools<'_>], most: usize) -> Vec<Vec<String>> {
    let counted: Vec<Counts> = servers.iter().map(Counts::of).collect();
    let mut servers_with: HashMap<&str, usize> = HashMap::new();
    for c in &counted {
        for key in c.words.keys() {
            *servers_with.entry(key).or_default() += 1;
        }
    }
    let n = servers.len() as f64;
    counted
        .iter()
        .map(|c| {
            let mut scored: Vec<(f64, &str, &str)> = c
                .words
                .iter()
                .map(|(key, (weight, word))| {
                    let rarity = (1.0 + n / servers_with[key.as_str()] as f64).ln();
                    (weight * rarity, key.as_str(), word.as_str())
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
            scored
                .into_iter()
                .take(most)
                .map(|(_, _, word)| word.to_string())
                .collect()
        })
        .collect()
}

/// One server's words by stem: their weight, and the shortest way the stem
/// was written (`issue` for `issues`, `entity` for `entities`).
struct Counts {
    words: HashMap<String, (f64, String)>,
}

impl Counts {
    fn of(server: &Tools<'_>) -> Counts {
        let own: Vec<String> = split(server.server).map(|w| stem(&w)).collect();
        let mut counts = Counts {
            words: HashMap::new(),
        };
        for (name, description) in &server.tools {
            counts.add(split(name), NAME_WEIGHT, &own);
            counts.add(split(description).take(DESCRIPTION_WORDS), 1.0, &own);
        }
        counts
    }

    /// Counts each word of one text once.
    fn add(&mut self, words: impl Iterator<Item = String>, weight: f64, own: &[String]) {
        let mut keys: Vec<(String, String)> = words
            .filter(|w| telling(w))
            .map(|w| (stem(&w), w))
            // The server's name is shown beside its words already.
            .filter(|(key, _)| {
                !own.iter()
                    .any(|o| o.contains(key) || key.contains(o.as_str()))
            })
            .collect();
        keys.sort_unstable();
        keys.dedup_by(|a, b| a.0 == b.0);
        for (key, word) in keys {
            let (sum, shortest) = self.words.entry(key).or_insert_with(|| (0.0, word.clone()));
            *sum += weight;
            if word.len() < shortest.len() {
                *shortest = word;
            }
        }
    }
}

/// A word worth showing: letters only, not too short or long, not common.
fn telling(word: &str) -> bool {
    (3..=20).contains(&word.len())
        && word.bytes().all(|b| b.is_ascii_lowercase())
        && COMMON.binary_search(&word).is_err()
}

/// The lowercase words of a text or an identifier (`get_pullRequest` is
/// `get`, `pull`, `request`), read as far as they are taken.
pub(super) fn split(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut rest = text.chars().peekable();
    std::iter::from_fn(move || {
        while rest.next_if(|c| !c.is_ascii_alphanumeric()).is_some() {}
        let mut word = String::new();
        let mut last_lower = false;
        // A word ends before anything else, or before a capital after a
        // small letter (camelCase).
        while let Some(c) =
            rest.next_if(|&c| c.is_ascii_alphanumeric() && !(c.is_ascii_uppercase() && last_lower))
        {
            last_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            word.push(c.to_ascii_lowercase());
        }
        (!word.is_empty()).then_some(word)
    })
}

/// One key for a word's singular and plural (`entities`, `entity`).
pub(super) fn stem(word: &str) -> String {
    if let Some(base) = word.strip_suffix("ies").filter(|b| b.len() > 2) {
        return format!("{base}y");
    }
    match word.strip_suffix('s') {
        Some(base) if base.len() > 2 && !base.ends_with('s') => base.to_string(),
        _ => word.to_string(),
    }
}

#[cfg(test)]
#[test]
fn common_words_are_sorted_for_their_search() {
    assert!(COMMON.is_sorted());
}
