//! `select:name1,name2`: exact agent-facing names, in the order given.

use super::Hit;
use crate::model::Entry;

const PREFIX: &str = "select:";

/// The names of a `select:` query, or none for any other query.
pub(crate) fn parse(query: &str) -> Option<Vec<&str>> {
    let query = query.trim_start();
    let head = query.get(..PREFIX.len())?;
    if !head.eq_ignore_ascii_case(PREFIX) {
        return None;
    }
    Some(
        query[PREFIX.len()..]
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect(),
    )
}

/// The entries named, in the order named, each once; unknown names are skipped.
pub(crate) fn search(
    entries: &[Entry],
    names: &[&str],
    limit: usize,
    in_scope: &dyn Fn(usize) -> bool,
) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    for name in names {
        if hits.len() >= limit {
            break;
        }
        let found = entries.iter().position(|e| e.name == *name);
        if let Some(i) = found.filter(|i| in_scope(*i))
            && !hits.iter().any(|h| h.index as usize == i)
        {
            hits.push(Hit {
                index: i as u32,
                score: 1.0,
            });
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::super::tests::catalog;
    use super::*;

    #[test]
    fn parses_select_queries() {
        assert_eq!(parse("select:a, b ,,c"), Some(vec!["a", "b", "c"]));
        assert_eq!(parse("  SELECT:a"), Some(vec!["a"]));
        assert_eq!(parse("selection of tools"), None);
        assert_eq!(parse("sel"), None);
    }

    #[test]
    fn picks_exact_names_in_order_once() {
        let cat = catalog();
        let names = [
            "git__git_status",
            "nope",
            "github__create_issue",
            "git__git_status",
        ];
        let hits = search(&cat, &names, 10, &|_| true);
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), vec![3, 1]);
        let hits = search(&cat, &names, 1, &|_| true);
        assert_eq!(hits.len(), 1);
    }
}
