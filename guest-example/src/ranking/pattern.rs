//! Regex mode: a case-insensitive regular expression over names and descriptions.

use super::Hit;
use crate::model::{Entry, PolicyError};

/// Compiled-program size cap, so that a hostile pattern cannot eat the guest's memory.
const SIZE_LIMIT: usize = 1 << 20;

/// Matching entries in catalog order, all scored 1.
pub(crate) fn search(
    entries: &[Entry],
    pattern: &str,
    limit: usize,
    in_scope: &dyn Fn(usize) -> bool,
) -> Result<Vec<Hit>, PolicyError> {
    if pattern.is_empty() {
        return Err(PolicyError::InvalidInput(
            "the search pattern is empty".into(),
        ));
    }
    let re = regex_lite::RegexBuilder::new(pattern)
        .case_insensitive(true)
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| PolicyError::InvalidPattern(e.to_string()))?;
    Ok(entries
        .iter()
        .enumerate()
        .filter(|(i, e)| in_scope(*i) && (re.is_match(&e.name) || re.is_match(&e.tool.description)))
        .take(limit)
        .map(|(i, _)| Hit {
            index: i as u32,
            score: 1.0,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::tests::catalog;
    use super::*;

    #[test]
    fn matches_names_and_descriptions_case_insensitively() {
        let hits = search(&catalog(), "^git__|SCREENSHOT", 10, &|_| true).unwrap();
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), vec![0, 3]);
    }

    #[test]
    fn invalid_pattern_is_an_error_value() {
        assert!(matches!(
            search(&catalog(), "([a-", 10, &|_| true),
            Err(PolicyError::InvalidPattern(_))
        ));
    }
}
