//! Paths as written after `crate::`, `super::` and in `use`, and a module's
//! re-exports (`pub use child::Item;`): the names it gives its children's
//! items, cut from its code, since naming an item is no use of it.

use std::collections::{BTreeMap, BTreeSet};

/// The leading paths of `rest`: one, or each of a `{…}` group's (nested
/// groups too: `a::{b, c::{d}}` is `a::b` and `a::c::d`).
pub(super) fn paths(rest: &str) -> Vec<Vec<String>> {
    let Some(group) = rest.strip_prefix('{') else {
        let (path, after) = segments(rest);
        return match after.strip_prefix("::{") {
            Some(_) => paths(&after[2..])
                .into_iter()
                .map(|tail| path.iter().cloned().chain(tail).collect())
                .collect(),
            None => vec![path],
        };
    };
    let (mut depth, mut item, mut items) = (0, String::new(), Vec::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    items.push(item);
    items.iter().flat_map(|i| paths(i.trim())).collect()
}

/// The identifiers joined by `::` at the start of `s`, and what follows them.
fn segments(mut s: &str) -> (Vec<String>, &str) {
    let mut out = Vec::new();
    loop {
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        if end == 0 {
            return (out, s);
        }
        out.push(s[..end].to_string());
        match s[end..].strip_prefix("::") {
            Some(next) if !next.starts_with('{') => s = next,
            _ => return (out, &s[end..]),
        }
    }
}

/// `code` without its re-exports of `children`'s items, and the names they
/// give (name → child).
pub(super) fn reexports(
    children: &BTreeSet<String>,
    code: &str,
) -> (String, BTreeMap<String, String>) {
    let mut out = code.to_string();
    let mut names = BTreeMap::new();
    let mut from = 0;
    while let Some(at) = out[from..].find("use ") {
        let start = from + at;
        from = start + 4;
        let before = out[..start].trim_end();
        let public = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let word_start = !out[..start].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let Some(end) = out[from..].find(';').map(|e| from + e) else {
            break;
        };
        let mut imported = BTreeMap::new();
        for path in paths(out[from..end].trim_start().trim_start_matches("self::")) {
            if let (Some(child), Some(name)) = (path.first(), path.last())
                && path.len() > 1
                && children.contains(child)
            {
                imported.insert(name.clone(), child.clone());
            }
        }
        if !word_start || imported.is_empty() {
            continue;
        }
        names.extend(imported);
        if public {
            // Blanked to its end: what it names are not the module's uses.
            out.replace_range(from..end, &" ".repeat(end - from));
        }
    }
    (out, names)
}

#[test]
fn re_exports_are_names_not_uses() {
    let children = BTreeSet::from(["a".to_string(), "b".to_string()]);
    let (code, names) = reexports(
        &children,
        "pub use a::{X, Y};\npub(crate) use self::b::Z;\nuse b::W;\nuse std::io;\nfn f() { a::g() }",
    );
    assert!(!code.contains("X") && !code.contains("Z"), "{code}");
    assert!(
        code.contains("use b::W;") && code.contains("a::g()"),
        "{code}"
    );
    let names: Vec<(&str, &str)> = names
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_str()))
        .collect();
    assert_eq!(names, [("W", "b"), ("X", "a"), ("Y", "a"), ("Z", "b")]);
}
