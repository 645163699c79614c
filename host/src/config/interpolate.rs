//! `${VAR}`, `${VAR:-default}` and `$env:VAR` in config strings.
//!
//! An unset variable without a default is left as written (so the problem is
//! visible where it is used) and reported.

use crate::paths::Environment;

/// The result of interpolating one string.
#[derive(Debug, PartialEq, Eq)]
pub struct Interpolated {
    /// The string with every resolvable reference replaced.
    pub value: String,
    /// Variables referenced but unset (and without a default).
    pub missing: Vec<String>,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Does `text` reference any variable?
pub fn has_reference(text: &str) -> bool {
    text.contains("${") || text.contains("$env:")
}

/// Replaces the references in `text` with values from `env`.
pub fn interpolate(text: &str, env: &Environment) -> Interpolated {
    let mut value = String::with_capacity(text.len());
    let mut missing = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        value.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(body) = tail.strip_prefix("${")
            && let Some(end) = body.find('}')
        {
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if name.starts_with(is_name_start) && name.chars().all(is_name_char) {
                match (
                    env.get(name).filter(|v| !v.is_empty() || default.is_none()),
                    default,
                ) {
                    (Some(v), _) => value.push_str(v),
                    (None, Some(d)) => value.push_str(d),
                    (None, None) => {
                        missing.push(name.to_string());
                        value.push_str(&tail[..end + 3]);
                    }
                }
                rest = &body[end + 1..];
                continue;
            }
        }
        if let Some(body) = tail.strip_prefix("$env:")
            && body.starts_with(is_name_start)
        {
            let len = body.find(|c: char| !is_name_char(c)).unwrap_or(body.len());
            let name = &body[..len];
            match env.get(name) {
                Some(v) => value.push_str(v),
                None => {
                    missing.push(name.to_string());
                    value.push_str(&tail[..5 + len]);
                }
            }
            rest = &body[len..];
            continue;
        }
        value.push('$');
        rest = &tail[1..];
    }
    value.push_str(rest);
    Interpolated { value, missing }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        Environment::from_pairs([("TOKEN", "s3cret"), ("EMPTY", ""), ("HOME", "/home/me")])
    }

    fn run(text: &str) -> (String, Vec<String>) {
        let r = interpolate(text, &env());
        (r.value, r.missing)
    }

    #[test]
    fn braces_defaults_and_powershell_style() {
        assert_eq!(run("Bearer ${TOKEN}").0, "Bearer s3cret");
        assert_eq!(run("${HOME}/x:$env:TOKEN!").0, "/home/me/x:s3cret!");
        assert_eq!(run("${NOPE:-fallback}").0, "fallback");
        assert_eq!(
            run("${EMPTY:-fallback}").0,
            "fallback",
            ":- also covers empty, as in the shell"
        );
        assert_eq!(run("${EMPTY}").0, "");
    }

    #[test]
    fn unset_variables_stay_visible_and_are_reported() {
        assert_eq!(
            run("a ${NOPE} b $env:GONE c"),
            (
                "a ${NOPE} b $env:GONE c".into(),
                vec!["NOPE".into(), "GONE".into()]
            )
        );
    }

    #[test]
    fn other_dollars_are_literal() {
        assert_eq!(
            run("cost $5, ${not a name}, $ {X}, ${").0,
            "cost $5, ${not a name}, $ {X}, ${"
        );
        assert!(!has_reference("plain $5"));
        assert!(has_reference("x ${Y}"));
    }
}
