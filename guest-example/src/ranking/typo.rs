//! Typo tolerance for query words the catalog does not contain: candidates at
//! Damerau-Levenshtein distance 1 (one letter missing, extra, wrong, or two
//! swapped), found through deletion neighbourhoods built with the index.

use super::fasthash::FastMap as HashMap;

/// Vocabulary lookups by single-deletion keys (hashed: no string per deletion).
pub(crate) struct Typos {
    by_deletion: HashMap<u64, Vec<u32>>,
    words: Vec<String>,
}

/// FNV-1a of `chars` without the one at `skip` (`usize::MAX`: none).
fn key(chars: &[char], skip: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, c) in chars.iter().enumerate() {
        if i != skip {
            h ^= *c as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Keys of the word itself and of every single deletion.
fn keys(word: &str) -> Vec<u64> {
    let chars: Vec<char> = word.chars().collect();
    std::iter::once(key(&chars, usize::MAX))
        .chain((0..chars.len()).map(|i| key(&chars, i)))
        .collect()
}

/// Shortest word corrected: shorter words have too many neighbours.
const MIN_LEN: usize = 4;

impl Typos {
    /// Indexes a vocabulary.
    pub(crate) fn build<'a>(vocabulary: impl Iterator<Item = &'a str>) -> Typos {
        let mut by_deletion: HashMap<u64, Vec<u32>> = HashMap::default();
        let mut words = Vec::new();
        for w in vocabulary.filter(|w| w.chars().count() >= MIN_LEN - 1) {
            let id = words.len() as u32;
            words.push(w.to_string());
            for k in keys(w) {
                by_deletion.entry(k).or_default().push(id);
            }
        }
        Typos { by_deletion, words }
    }

    /// Vocabulary words one edit away from `word` (not `word` itself).
    pub(crate) fn candidates(&self, word: &str) -> Vec<&str> {
        if word.chars().count() < MIN_LEN {
            return Vec::new();
        }
        let mut found: Vec<u32> = keys(word)
            .iter()
            .filter_map(|k| self.by_deletion.get(k))
            .flatten()
            .copied()
            .collect();
        found.sort_unstable();
        found.dedup();
        found
            .into_iter()
            .map(|i| self.words[i as usize].as_str())
            .filter(|w| *w != word && distance_is_one(word, w))
            .collect()
    }
}

/// Damerau-Levenshtein distance exactly 1 (deletion keys also find distance 2 pairs).
/// Total: equal words are distance 0, not a slice past their end.
fn distance_is_one(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (la, lb) = (a.len(), b.len());
    if la.abs_diff(lb) > 1 {
        return false;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if la == lb && prefix == la {
        // The same word: distance 0 (and nothing after the common prefix to compare).
        return false;
    }
    if la == lb {
        let rest_equal = |from: usize| a[from..] == b[from..];
        // one substitution, or one swap of neighbours
        rest_equal(prefix + 1)
            || (prefix + 1 < la
                && a[prefix] == b[prefix + 1]
                && a[prefix + 1] == b[prefix]
                && rest_equal(prefix + 2))
    } else {
        let (long, short) = if la > lb { (&a, &b) } else { (&b, &a) };
        long[prefix + 1..] == short[prefix..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typos() -> Typos {
        Typos::build(["github", "issue", "screenshot", "message", "create", "list"].into_iter())
    }

    #[test]
    fn one_edit_away() {
        let t = typos();
        assert_eq!(t.candidates("githb"), vec!["github"], "a missing letter");
        assert_eq!(t.candidates("isue"), vec!["issue"]);
        assert_eq!(t.candidates("screenshto"), vec!["screenshot"], "a swap");
        assert_eq!(t.candidates("mesage"), vec!["message"]);
        assert_eq!(t.candidates("massage"), vec!["message"], "a wrong letter");
        assert_eq!(t.candidates("githubb"), vec!["github"], "an extra letter");
    }

    #[test]
    fn not_too_far_not_too_short() {
        let t = typos();
        assert!(t.candidates("gthb").is_empty(), "two edits");
        assert!(t.candidates("lst").is_empty(), "too short to correct");
        assert!(
            t.candidates("github").is_empty(),
            "a known word is not a typo"
        );
    }

    #[test]
    fn the_same_word_is_not_one_edit_away() {
        assert!(!distance_is_one("github", "github"));
        assert!(!distance_is_one("", ""));
        assert!(distance_is_one("", "a"));
    }

    proptest::proptest! {
        #[test]
        fn distance_is_total_and_symmetric(a in "[a-cé]{0,6}", b in "[a-cé]{0,6}") {
            proptest::prop_assert_eq!(distance_is_one(&a, &b), distance_is_one(&b, &a));
        }
    }
}
