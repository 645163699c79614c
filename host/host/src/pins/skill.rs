//! A skill's pin (the MCP Skills extension): its frontmatter and every
//! file's digest and size, as its server listed them. A skill whose pinned
//! parts change waits for the user like a tool; `mcpw trust` shows each
//! frontmatter field and each file that changed. Nothing is fetched for it:
//! the listing carries the digests.

use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The key a skill is pinned under: `skill:` and its server's URI.
fn key(uri: &str) -> String {
    format!("skill:{uri}")
}

/// A listed skill (MCP JSON) as (its key, what is pinned of it: the
/// definition to seal); none for what is not a skill.
pub(super) fn definition(skill: &Value) -> Option<(String, Value)> {
    let uri = skill.get("uri")?.as_str()?;
    let files = match skill.get("resources")? {
        Value::Array(files) => {
            let mut by_uri = Map::new();
            for f in files {
                let at = f.get("uri")?.as_str()?.to_string();
                by_uri.insert(
                    at,
                    json!({"digest": f.get("digest")?, "size": f.get("size")?}),
                );
            }
            Value::Object(by_uri)
        }
        other => other.clone(),
    };
    let definition =
        json!({"skill": uri, "frontmatter": skill.get("frontmatter")?, "files": files});
    Some((key(uri), definition))
}

/// Whether a pinned definition is a skill's.
pub(super) fn is_skill(definition: &Value) -> bool {
    definition.get("skill").is_some()
}

/// What changed between a skill's pin and its listing now, as a person
/// reads it: each frontmatter field, each file added, removed or changed.
pub(super) fn diff(was: Option<&Value>, now: &Value) -> Vec<String> {
    let shown = |v: &Value| crate::visible::shown(&v.to_string());
    let Some(was) = was else {
        let description = &now["frontmatter"]["description"];
        return vec![format!("new skill: {}", shown(description))];
    };
    let mut lines = Vec::new();
    let (a, b) = (&was["frontmatter"], &now["frontmatter"]);
    for field in keys(a).union(&keys(b)) {
        if a[field] != b[field] {
            lines.push(format!("frontmatter {field}: - {}", shown(&a[field])));
            lines.push(format!("frontmatter {field}: + {}", shown(&b[field])));
        }
    }
    let (a, b) = (&was["files"], &now["files"]);
    if !(a.is_object() && b.is_object()) {
        if a != b {
            lines.push(format!("files: - {}", shown(a)));
            lines.push(format!("files: + {}", shown(b)));
        }
        return lines;
    }
    let file = |f: &Value| format!("{}, {} bytes", shown(&f["digest"]), f["size"]);
    for uri in keys(a).union(&keys(b)) {
        let name = crate::visible::escaped(uri);
        match (a.get(uri), b.get(uri)) {
            (None, Some(f)) => lines.push(format!("file {name} added ({})", file(f))),
            (Some(f), None) => lines.push(format!("file {name} removed (was {})", file(f))),
            (Some(f), Some(g)) if f != g => {
                lines.push(format!("file {name} changed: {} → {}", file(f), file(g)));
            }
            _ => {}
        }
    }
    lines
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(description: &str, files: Value) -> Value {
        json!({"uri": "skill://review/SKILL.md",
               "frontmatter": {"name": "review", "description": description}, "resources": files})
    }

    fn file(uri: &str, digit: char, size: u64) -> Value {
        json!({"uri": uri, "digest": format!("sha256:{}", digit.to_string().repeat(64)), "size": size})
    }

    #[test]
    fn a_changed_skill_shows_each_field_and_file_that_changed() {
        let md = "skill://review/SKILL.md";
        let was = skill(
            "Review code.",
            json!([file(md, 'a', 10), file("skill://review/old.md", 'b', 4)]),
        );
        let now = skill(
            "Review code, then approve.",
            json!([file(md, 'c', 12), file("skill://review/new.md", 'd', 5)]),
        );
        let ((k1, p1), (k2, p2)) = (definition(&was).unwrap(), definition(&now).unwrap());
        assert_eq!(k1, "skill:skill://review/SKILL.md");
        assert_eq!(k1, k2);
        assert_ne!(p1, p2);
        assert!(is_skill(&p1));
        let lines = diff(Some(&p1), &p2);
        assert_eq!(lines[0], r#"frontmatter description: - "Review code.""#);
        assert_eq!(
            lines[1],
            r#"frontmatter description: + "Review code, then approve.""#
        );
        assert!(
            lines.iter().any(|l| l
                .starts_with("file skill://review/SKILL.md changed: \"sha256:aaaa")
                && l.ends_with("12 bytes")),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("file skill://review/new.md added")),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("file skill://review/old.md removed")),
            "{lines:?}"
        );
        assert_eq!(
            diff(None, &p2),
            [r#"new skill: "Review code, then approve.""#]
        );
        // Listed the same: the same definition.
        assert_eq!(definition(&was).unwrap().1, p1);
    }
}
