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

    /// Property tests: arbitrary strings and environments.
    mod properties {
        use super::*;
        use proptest::prelude::*;

        use crate::test_props::config;

        /// Names, from a small pool so that references and the environment meet.
        fn name() -> impl Strategy<Value = String> {
            prop_oneof![
                3 => prop::sample::select(vec!["A", "B", "_c", "TOKEN", "x1"]).prop_map(String::from),
                1 => "[A-Za-z_][A-Za-z0-9_]{0,6}",
            ]
        }

        /// Values: empty, plain, or holding the characters the parser looks at.
        fn value() -> impl Strategy<Value = String> {
            prop_oneof![
                Just(String::new()),
                "[a-z/ ]{1,6}",
                "[${}:\\-a-z]{1,6}",
                any::<String>()
            ]
        }

        fn environment() -> impl Strategy<Value = Vec<(String, String)>> {
            prop::collection::vec((name(), value()), 0..6)
        }

        /// Text rich in `$`, `{`, `}`, `:-` and `env:`.
        fn text() -> impl Strategy<Value = String> {
            let piece = prop_oneof![
                Just("$".to_string()),
                Just("${".to_string()),
                Just("}".to_string()),
                Just(":-".to_string()),
                Just("$env:".to_string()),
                name(),
                any::<String>(),
            ];
            prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
        }

        /// One piece of a well-formed template.
        #[derive(Clone, Debug)]
        enum Segment {
            /// Text without `$`.
            Literal(String),
            /// `${NAME}`.
            Braced(String),
            /// `${NAME:-default}` (the default has no `}`).
            Default(String, String),
            /// `$env:NAME`.
            Env(String),
            /// A `$` that starts no reference: `$5`, `${5x}`, `$env:5`.
            Dollar(String),
        }

        fn segment() -> impl Strategy<Value = Segment> {
            prop_oneof![
                "[^$]{0,8}".prop_map(Segment::Literal),
                name().prop_map(Segment::Braced),
                (name(), "[^}]{0,6}").prop_map(|(n, d)| Segment::Default(n, d)),
                name().prop_map(Segment::Env),
                prop_oneof![
                    "\\$[0-9 .]".prop_map(String::from),
                    "\\$\\{[0-9 ][^$}]{0,4}\\}",
                    "\\$env:[0-9 -]",
                ]
                .prop_map(Segment::Dollar),
            ]
        }

        /// The text, its expected value and the expected missing names, computed
        /// from the segments (not by scanning the text).
        fn expected(
            segments: &[Segment],
            env: &Environment,
            unclosed_tail: &Option<String>,
        ) -> (String, String, Vec<String>) {
            let (mut text, mut value, mut missing) = (String::new(), String::new(), Vec::new());
            let mut after_env_name = false;
            for s in segments {
                let (t, v) = match s {
                    Segment::Literal(l) => {
                        // `$env:NAME` reads name characters greedily: keep the
                        // literal apart from a name before it.
                        let l = if after_env_name && l.starts_with(is_name_char) {
                            format!("-{l}")
                        } else {
                            l.clone()
                        };
                        (l.clone(), l)
                    }
                    Segment::Braced(n) => {
                        let t = format!("${{{n}}}");
                        match env.get(n) {
                            Some(v) => (t, v.to_string()),
                            None => {
                                missing.push(n.clone());
                                (t.clone(), t)
                            }
                        }
                    }
                    Segment::Default(n, d) => {
                        let t = format!("${{{n}:-{d}}}");
                        match env.get(n).filter(|v| !v.is_empty()) {
                            Some(v) => (t, v.to_string()),
                            None => (t, d.clone()),
                        }
                    }
                    Segment::Env(n) => {
                        let t = format!("$env:{n}");
                        match env.get(n) {
                            Some(v) => (t, v.to_string()),
                            None => {
                                missing.push(n.clone());
                                (t.clone(), t)
                            }
                        }
                    }
                    Segment::Dollar(d) => (d.clone(), d.clone()),
                };
                text.push_str(&t);
                value.push_str(&v);
                // An empty literal keeps the name open.
                after_env_name = matches!(s, Segment::Env(_)) || (after_env_name && t.is_empty());
            }
            if let Some(tail) = unclosed_tail {
                // `${` with no `}` anywhere after it stays as written.
                let t = format!("${{{tail}");
                text.push_str(&t);
                value.push_str(&t);
            }
            (text, value, missing)
        }

        proptest! {
            #![proptest_config(config())]

            #[test]
            fn never_panics_and_reports_only_names(text in text(), env in environment()) {
                let env = Environment::from_pairs(env);
                let r = interpolate(&text, &env);
                for name in &r.missing {
                    prop_assert!(name.starts_with(is_name_start) && name.chars().all(is_name_char));
                    prop_assert!(env.get(name).is_none(), "{name} is set but reported missing");
                }
                if !has_reference(&text) {
                    prop_assert_eq!(&r.value, &text);
                    prop_assert!(r.missing.is_empty());
                }
            }

            #[test]
            fn text_without_dollar_is_unchanged(text in "[^$]*", env in environment()) {
                let r = interpolate(&text, &Environment::from_pairs(env));
                prop_assert_eq!(r, Interpolated { value: text, missing: Vec::new() });
            }

            #[test]
            fn set_name_yields_its_value(
                name in name(),
                value in value(),
                before in "[^$]{0,6}",
                after in "[^$]{0,6}",
            ) {
                let env = Environment::from_pairs([(name.clone(), value.clone())]);
                let r = interpolate(&format!("{before}${{{name}}}{after}"), &env);
                prop_assert_eq!(r.value, format!("{before}{value}{after}"));
                prop_assert!(r.missing.is_empty());
            }

            #[test]
            fn unset_name_yields_the_default(
                name in name(),
                default in "[^}]{0,8}",
                env in environment(),
            ) {
                let env: Vec<_> = env.into_iter().filter(|(n, _)| *n != name).collect();
                let r = interpolate(&format!("${{{name}:-{default}}}"), &Environment::from_pairs(env));
                prop_assert_eq!(r, Interpolated { value: default, missing: Vec::new() });
            }

            #[test]
            fn well_formed_templates_expand_as_specified(
                segments in prop::collection::vec(segment(), 0..10),
                unclosed_tail in proptest::option::of("[^}$]{0,4}"),
                env in environment(),
            ) {
                let env = Environment::from_pairs(env);
                let (text, value, missing) = expected(&segments, &env, &unclosed_tail);
                let r = interpolate(&text, &env);
                prop_assert_eq!(r.value, value, "text: {:?}", text);
                prop_assert_eq!(r.missing, missing, "text: {:?}", text);
            }
        }
    }
}
