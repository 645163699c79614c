//! The seed's weighted keyword scoring, kept exactly for compatibility.
//!
//! Per query term (whitespace-separated, lowercased, OR'd): 10 when it equals a
//! part of the tool name (split on `_` and `-`), else 5 when it is inside one;
//! plus 4 when a word of the description starts with it; plus 3 when the full
//! prefixed name contains it.

use super::Hit;
use crate::model::Entry;

/// The profile name of this scorer.
pub(crate) const PROFILE: &str = "seed";

struct Doc {
    parts: Vec<String>,
    full: String,
    description: String,
}

pub(crate) struct SeedIndex {
    docs: Vec<Doc>,
}

impl SeedIndex {
    pub(crate) fn build(entries: &[Entry]) -> SeedIndex {
        let docs = entries
            .iter()
            .map(|e| {
                let name = e.tool.name.to_lowercase();
                Doc {
                    parts: name
                        .split(['_', '-'])
                        .filter(|p| !p.is_empty())
                        .map(str::to_string)
                        .collect(),
                    full: format!("{}_{}", e.tool.server, e.tool.name).to_lowercase(),
                    description: e.tool.description.to_lowercase(),
                }
            })
            .collect();
        SeedIndex { docs }
    }

    pub(crate) fn score(&self, query: &str, in_scope: &dyn Fn(usize) -> bool) -> Vec<Hit> {
        let query = query.to_lowercase();
        let terms: Vec<&str> = query.split_whitespace().collect();
        self.docs
            .iter()
            .enumerate()
            .filter(|(i, _)| in_scope(*i))
            .filter_map(|(i, doc)| {
                // Saturating: a query of enough terms cannot overflow the sum.
                let score = terms
                    .iter()
                    .fold(0u32, |sum, t| sum.saturating_add(term_score(doc, t)));
                (score > 0).then_some(Hit {
                    index: i as u32,
                    score: score as f32,
                })
            })
            .collect()
    }
}

fn term_score(doc: &Doc, term: &str) -> u32 {
    let mut score = 0;
    if doc.parts.iter().any(|p| p == term) {
        score += 10;
    } else if doc.parts.iter().any(|p| p.contains(term)) {
        score += 5;
    }
    if starts_a_word(&doc.description, term) {
        score += 4;
    }
    if doc.full.contains(term) {
        score += 3;
    }
    score
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// True when `term` occurs in `text` at a word boundary (regex `\bterm`).
fn starts_a_word(text: &str, term: &str) -> bool {
    let Some(first) = term.chars().next() else {
        return false;
    };
    text.match_indices(term).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        before.is_some_and(is_word) != is_word(first)
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Index, IndexOptions, SearchOptions};
    use super::*;

    fn names(query: &str) -> Vec<String> {
        let cat = super::super::tests::catalog();
        let opts = IndexOptions {
            profile: Some(PROFILE.into()),
            ..Default::default()
        };
        let idx = Index::build(cat.clone(), opts).unwrap();
        idx.search(query, &SearchOptions::default())
            .unwrap()
            .iter()
            .map(|h| cat[h.index as usize].name.clone())
            .collect()
    }

    #[test]
    fn weights_follow_the_seed() {
        let e = Entry {
            name: "github__create_issue".into(),
            tool: crate::model::Tool::new("github", "create_issue", "Create a new issue"),
        };
        let idx = SeedIndex::build(std::slice::from_ref(&e));
        let doc = &idx.docs[0];
        assert_eq!(term_score(doc, "issue"), 10 + 4 + 3);
        assert_eq!(term_score(doc, "iss"), 5 + 4 + 3);
        assert_eq!(term_score(doc, "new"), 4);
        assert_eq!(term_score(doc, "github"), 3);
        assert_eq!(
            term_score(doc, "ssue"),
            5 + 3,
            "no word boundary in the description"
        );
    }

    #[test]
    fn terms_are_ored_and_summed() {
        assert_eq!(
            names("screenshot status")[..2],
            ["playwright__browser_take_screenshot", "git__git_status"]
        );
    }

    #[test]
    fn ties_keep_catalog_order() {
        assert_eq!(
            names("issue"),
            vec!["github__create_issue", "github__list_issues"]
        );
    }

    #[test]
    fn case_is_ignored() {
        assert_eq!(
            names("SCREENSHOT"),
            vec!["playwright__browser_take_screenshot"]
        );
    }

    #[test]
    fn word_boundary_rule() {
        assert!(starts_a_word("read the file", "file"));
        assert!(starts_a_word("read_file", "read"));
        assert!(!starts_a_word("profile", "file"));
        // A term starting with a non-word character needs a word character before it, as in regex.
        assert!(!starts_a_word("(#tag)", "#tag"));
        assert!(starts_a_word("a#tag", "#tag"));
    }
}
