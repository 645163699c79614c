//! The frontmatter of a `SKILL.md` as mcpw reads it to compare with what a
//! server listed: a YAML block opened by `---` on the first line and closed
//! by the next `---` line, either line end (LF or CRLF). Only the plain
//! scalar fields a skill's listing holds (`name`, `description`) are read:
//! a plain or quoted value, or a block (`>`, `|`) of indented lines.

/// The frontmatter of `text` (without its `---` lines) and the body after
/// it; `None` when `text` does not open with one.
pub fn split(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

/// The value of the top-level field `key` of `front`, its whitespace
/// folded to single spaces (a block's line breaks are not compared).
fn field(front: &str, key: &str) -> Option<String> {
    let mut lines = front.lines().map(|l| l.trim_end_matches('\r'));
    let first = lines
        .by_ref()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .trim();
    let more = lines
        .take_while(|l| l.starts_with([' ', '\t']) || l.trim().is_empty())
        .map(str::trim);
    let value: Vec<&str> = match first.starts_with(['>', '|']) {
        true => more.collect(),
        false => std::iter::once(first).chain(more).collect(),
    };
    Some(unquoted(&folded(&value.join(" "))))
}

fn folded(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A quoted scalar's text (`"…"` with its `\"` escapes, `'…'` with `''`).
fn unquoted(s: &str) -> String {
    if let Some(inner) = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        return inner.replace("\\\"", "\"").replace("\\\\", "\\");
    }
    if let Some(inner) = s.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        return inner.replace("''", "'");
    }
    s.to_string()
}

/// How `text` (a `SKILL.md`) differs in its name and description from what
/// its server listed, `name` and `description`: each difference said, or
/// `None` when none.
pub fn differs(text: &str, name: &str, description: &str) -> Option<String> {
    let Some((front, _)) = split(text) else {
        return Some("its SKILL.md has no frontmatter".into());
    };
    let mut said = Vec::new();
    let read = field(front, "name").unwrap_or_default();
    if read != name {
        said.push(format!(
            "its SKILL.md names it {read:?}, its server listed {name:?}"
        ));
    }
    let read = field(front, "description").unwrap_or_default();
    if read != folded(description) {
        said.push(format!(
            "its SKILL.md describes it as {read:?}, its server listed {description:?}"
        ));
    }
    (!said.is_empty()).then(|| said.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_in_either_line_end_and_any_scalar_form() {
        let lf = "---\nname: review\ndescription: \"Review a \\\"migration\\\".\"\n---\n# Body\n";
        let (front, body) = split(lf).unwrap();
        assert_eq!(body, "# Body\n");
        assert_eq!(field(front, "name").as_deref(), Some("review"));
        assert_eq!(
            field(front, "description").as_deref(),
            Some("Review a \"migration\".")
        );
        let crlf = "---\r\nname: 'it''s'\r\ndescription: >\r\n  Two\r\n  lines.\r\nother: x\r\n---\r\nBody";
        let (front, body) = split(crlf).unwrap();
        assert_eq!(body, "Body");
        assert_eq!(field(front, "name").as_deref(), Some("it's"));
        assert_eq!(field(front, "description").as_deref(), Some("Two lines."));
        assert_eq!(field(front, "missing"), None);
        assert!(split("no frontmatter").is_none());
        assert!(split("---\nname: never closed\n").is_none());
    }

    #[test]
    fn a_name_or_description_not_listed_is_said() {
        let md = "---\r\nname: live\r\ndescription: Answers.\r\n---\r\n";
        assert_eq!(differs(md, "live", "Answers."), None);
        let other = differs(md, "live", "Something else.").unwrap();
        assert!(other.contains("describes it as \"Answers.\""), "{other}");
        let both = differs(md, "dead", "Something else.").unwrap();
        assert!(
            both.contains("names it \"live\"") && both.contains("; "),
            "{both}"
        );
        assert!(differs("# no frontmatter", "x", "y").is_some());
    }
}
