//! General vocabulary: words and phrases that mean the same thing when asking
//! for a tool. A query is expanded with the other members of every group it
//! mentions, at a lower weight than its own words. This is general knowledge of
//! how people talk about software and the domains tools serve, not tuned to
//! any query set.

use super::fasthash::FastMap as HashMap;
use super::text::tokens;
use std::sync::OnceLock;

mod domains;
mod software;

/// Groups of interchangeable words and phrases, from every part of the vocabulary.
/// Order within a group does not matter.
fn groups() -> impl Iterator<Item = &'static &'static [&'static str]> {
    software::GROUPS.iter().chain(domains::GROUPS)
}

/// A phrase's tokens: stemmed, stop words kept when the phrase is nothing
/// else ("me"), dropped otherwise ("who am i" → "am").
fn phrase_tokens(phrase: &str) -> Vec<String> {
    let t = tokens(phrase);
    if t.is_empty() {
        super::text::words(phrase)
            .iter()
            .map(|w| super::text::stem(w))
            .collect()
    } else {
        t
    }
}

struct Lexicon {
    /// Tokens of each phrase, by group.
    groups: Vec<Vec<Vec<String>>>,
    /// First token of a phrase → (group, phrase) where it starts.
    starts: HashMap<String, Vec<(usize, usize)>>,
}

fn lexicon() -> &'static Lexicon {
    static LEXICON: OnceLock<Lexicon> = OnceLock::new();
    LEXICON.get_or_init(|| {
        let groups: Vec<Vec<Vec<String>>> = groups()
            .map(|g| {
                g.iter()
                    .map(|p| phrase_tokens(p))
                    .filter(|t| !t.is_empty())
                    .collect()
            })
            .collect();
        let mut starts: HashMap<String, Vec<(usize, usize)>> = HashMap::default();
        for (gi, g) in groups.iter().enumerate() {
            for (pi, p) in g.iter().enumerate() {
                starts.entry(p[0].clone()).or_default().push((gi, pi));
            }
        }
        Lexicon { groups, starts }
    })
}

/// A span of the query that the vocabulary knows, and what else it can mean.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Meaning {
    /// First query token of the span.
    pub start: usize,
    /// Tokens in the span.
    pub len: usize,
    /// The other members of its groups (token sequences).
    pub alternatives: Vec<Vec<String>>,
}

/// Prepares the vocabulary now (index build time) rather than on the first query.
pub(crate) fn warm_up() {
    lexicon();
}

/// Every span of `query` that is a phrase of some group, longest first at each
/// position, with the other members of all its groups.
pub(crate) fn meanings(query: &[String]) -> Vec<Meaning> {
    let lex = lexicon();
    let mut out: Vec<Meaning> = Vec::new();
    for start in 0..query.len() {
        let Some(candidates) = lex.starts.get(&query[start]) else {
            continue;
        };
        let mut by_len: HashMap<usize, Vec<Vec<String>>> = HashMap::default();
        for &(gi, pi) in candidates {
            let phrase = &lex.groups[gi][pi];
            if query.get(start..start + phrase.len()) != Some(phrase.as_slice()) {
                continue;
            }
            let alts = by_len.entry(phrase.len()).or_default();
            for other in &lex.groups[gi] {
                if other != phrase && !alts.contains(other) {
                    alts.push(other.clone());
                }
            }
        }
        let mut lens: Vec<usize> = by_len.keys().copied().collect();
        lens.sort_unstable_by(|a, b| b.cmp(a));
        for len in lens {
            out.push(Meaning {
                start,
                len,
                alternatives: by_len.remove(&len).unwrap_or_default(),
            });
        }
    }
    out
}

/// The other members of every group `query` mentions.
#[cfg(test)]
pub(crate) fn expand(query: &[String]) -> Vec<Vec<String>> {
    let mut all: Vec<Vec<String>> = Vec::new();
    for m in meanings(query) {
        for a in m.alternatives {
            if !all.contains(&a) {
                all.push(a);
            }
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(q: &str) -> Vec<String> {
        expand(&tokens(q))
            .into_iter()
            .map(|p| p.join(" "))
            .collect()
    }

    fn has(q: &str, phrase: &str) -> bool {
        expanded(q).contains(&tokens(phrase).join(" "))
    }

    #[test]
    fn abbreviations_and_phrases_meet() {
        assert!(
            has("raise a PR", "pull request")
                && has("raise a PR", "merge request")
                && has("raise a PR", "create")
        );
        assert!(has("merge request", "pr"));
        assert!(has("k8s pods", "kubernetes"));
        assert!(has("ls the folder", "list") && has("ls the folder", "directory"));
        assert!(has("grep for TODO", "search"));
        assert!(has("DM someone", "direct message"));
    }

    #[test]
    fn everyday_verbs_reach_tool_verbs() {
        assert!(has("chop the pdf into pages", "split") && has("split text", "splitter"));
        assert!(has("concatenate two pdfs", "merger"));
        assert!(has("lock the document", "protect") && has("password protect", "encrypt"));
        assert!(has("unlock the docx", "unprotect"));
        assert!(has("undo git add", "reset") && has("unstage everything", "reset"));
        assert!(has("shuffle a list", "randomize"));
        assert!(has("tidy up html", "cleaner"));
    }

    #[test]
    fn domain_words_reach_domain_terms() {
        assert!(has("chargeback", "dispute"));
        assert!(has("profit and loss for AAPL", "income statement"));
        assert!(has("candlestick data", "ohlcv"));
        assert!(has("is it going to snow", "weather"));
        assert!(has("bpm of this song", "tempo") && has("bpm of this song", "music"));
        assert!(has("donut chart", "pie") && has("box and whisker plot", "boxplot"));
        assert!(has("roll back the deployment", "rollout"));
        assert!(has("switch to dark mode", "appearance"));
        assert!(has("what should I cook for dinner", "recipe"));
    }

    #[test]
    fn no_phrase_is_a_lone_letter_or_digit() {
        // "s3" tokenises to "3" ("s" is a stop word): such a member would match
        // every tool that mentions the digit.
        let lex = lexicon();
        for g in &lex.groups {
            for p in g {
                assert!(
                    !(p.len() == 1 && p[0].chars().count() == 1),
                    "lone token {p:?}"
                );
            }
        }
    }

    #[test]
    fn unknown_words_expand_to_nothing() {
        assert!(expanded("zebra quokka").is_empty());
    }

    #[test]
    fn every_phrase_has_tokens() {
        let lex = lexicon();
        assert!(
            lex.groups.iter().all(|g| g.len() >= 2),
            "a group needs two members"
        );
    }
}
