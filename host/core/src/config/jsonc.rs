//! JSON with comments: `//` and `/* */` comments and trailing commas are blanked
//! out in place, so serde_json's line and column numbers still point at the
//! user's text.

/// Returns `text` with comments, trailing commas and a leading BOM replaced by spaces.
pub fn strip(text: &str) -> String {
    let text = text
        .strip_prefix('\u{feff}')
        .map(|t| format!(" {t}"))
        .unwrap_or_else(|| text.to_string());
    let mut out: Vec<char> = text.chars().collect();
    let n = out.len();
    let mut i = 0;
    let mut in_string = false;
    while i < n {
        let c = out[i];
        if in_string {
            match c {
                '\\' => i += 1,
                '"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (c, out.get(i + 1).copied()) {
            ('"', _) => in_string = true,
            ('/', Some('/')) => {
                while i < n && out[i] != '\n' {
                    out[i] = ' ';
                    i += 1;
                }
                continue;
            }
            ('/', Some('*')) => {
                let mut j = i;
                while j < n && !(out[j] == '*' && out.get(j + 1) == Some(&'/') && j > i + 1) {
                    j += 1;
                }
                let end = (j + 2).min(n);
                for ch in &mut out[i..end] {
                    if *ch != '\n' {
                        *ch = ' ';
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    blank_trailing_commas(&mut out);
    out.into_iter().collect()
}

/// Blanks a `,` whose next significant character closes an array or object.
/// Runs after comments are gone, so only strings need skipping.
fn blank_trailing_commas(chars: &mut [char]) {
    let mut in_string = false;
    let mut pending_comma: Option<usize> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            match c {
                '\\' => i += 1,
                '"' => in_string = false,
                _ => {}
            }
        } else if !c.is_whitespace() {
            if let Some(at) = pending_comma.take()
                && (c == ']' || c == '}')
            {
                chars[at] = ' ';
            }
            match c {
                ',' => pending_comma = Some(i),
                '"' => in_string = true,
                _ => {}
            }
        }
        i += 1;
    }
}

/// A JSON value's kind, for messages.
pub fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> serde_json::Value {
        serde_json::from_str(&strip(text)).unwrap()
    }

    #[test]
    fn strips_comments_and_trailing_commas() {
        let v =
            parse("{\n // line\n \"a\": [1, 2,], /* block\n over lines */ \"b\": {\"c\": 1,},\n}");
        assert_eq!(v, serde_json::json!({"a": [1, 2], "b": {"c": 1}}));
    }

    #[test]
    fn leaves_strings_alone() {
        let v = parse(r#"{"url": "http://x//y", "s": "a /* b */ c,]", "q": "\"//\""}"#);
        assert_eq!(v["url"], "http://x//y");
        assert_eq!(v["s"], "a /* b */ c,]");
        assert_eq!(v["q"], "\"//\"");
    }

    #[test]
    fn keeps_line_and_column_of_errors() {
        let text = "{\n  // comment\n  \"a\": 1,\n  \"b\": nope\n}";
        let without = "{\n\n  \"a\": 1,\n  \"b\": nope\n}";
        let err = serde_json::from_str::<serde_json::Value>(&strip(text)).unwrap_err();
        let reference = serde_json::from_str::<serde_json::Value>(without).unwrap_err();
        assert_eq!(
            (err.line(), err.column()),
            (reference.line(), reference.column())
        );
        assert_eq!(err.line(), 4);
    }

    #[test]
    fn strips_bom_and_handles_unterminated_block_comment() {
        assert_eq!(parse("\u{feff}{\"a\": 1}"), serde_json::json!({"a": 1}));
        assert!(serde_json::from_str::<serde_json::Value>(&strip("{\"a\": 1 /* open")).is_err());
    }

    /// Property tests: arbitrary text, and JSON with comments put between tokens.
    mod properties {
        use super::*;
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        use crate::test_props::config;

        /// Text rich in what the stripper looks at.
        fn jsonish() -> impl Strategy<Value = String> {
            let piece = prop_oneof![
                prop::sample::select(vec![
                    "//", "/*", "*/", "/", "*", "\"", "\\", ",", "]", "}", "[", "{", "\n", "\r\n",
                    " ", "\u{feff}", "é", "\u{2028}",
                ])
                .prop_map(String::from),
                any::<String>(),
            ];
            prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
        }

        /// Strings that look like comments and trailing commas.
        fn tricky_string() -> impl Strategy<Value = String> {
            prop_oneof!["[/*,\\]}\\\\\" a\n]{0,8}", any::<String>(),]
        }

        fn json_value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(Value::from),
                tricky_string().prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 48, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                    prop::collection::vec((tricky_string(), inner), 0..6)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
                ]
            })
        }

        /// What may go between two tokens: whitespace and comments.
        fn gap() -> impl Strategy<Value = String> {
            prop_oneof![
                2 => Just(String::new()),
                1 => prop::sample::select(vec![" ", "\n", "\t", "\r\n"]).prop_map(String::from),
                // A line comment runs to the end of the line.
                1 => "[^\n]{0,8}".prop_map(|c| format!("//{c}\n")),
                // A block comment ends at the first `*/`.
                1 => any::<String>().prop_map(|c| format!("/*{}*/", c.replace("*/", "* /"))),
                1 => prop::sample::select(vec!["/**/", "/***/", "/*/ */", "/* // */", "// /*\n", "/*\n*/"])
                    .prop_map(String::from),
            ]
        }

        /// Writes `value` as JSON, putting the next gap between every two tokens
        /// and (when `trailing`) a comma after the last member of each container.
        fn put_gap(gaps: &[String], next: &mut usize, out: &mut String) {
            out.push_str(&gaps[*next % gaps.len()]);
            *next += 1;
        }

        fn write(
            value: &Value,
            gaps: &[String],
            next: &mut usize,
            trailing: bool,
            out: &mut String,
        ) {
            match value {
                Value::Array(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        put_gap(gaps, next, out);
                        if i > 0 {
                            out.push(',');
                            put_gap(gaps, next, out);
                        }
                        write(item, gaps, next, trailing, out);
                    }
                    put_gap(gaps, next, out);
                    if trailing && !items.is_empty() {
                        out.push(',');
                        put_gap(gaps, next, out);
                    }
                    out.push(']');
                }
                Value::Object(map) => {
                    out.push('{');
                    for (i, (k, v)) in map.iter().enumerate() {
                        put_gap(gaps, next, out);
                        if i > 0 {
                            out.push(',');
                            put_gap(gaps, next, out);
                        }
                        out.push_str(&serde_json::to_string(k).unwrap());
                        put_gap(gaps, next, out);
                        out.push(':');
                        put_gap(gaps, next, out);
                        write(v, gaps, next, trailing, out);
                    }
                    put_gap(gaps, next, out);
                    if trailing && !map.is_empty() {
                        out.push(',');
                        put_gap(gaps, next, out);
                    }
                    out.push('}');
                }
                scalar => out.push_str(&serde_json::to_string(scalar).unwrap()),
            }
        }

        fn parse(text: &str) -> Value {
            serde_json::from_str(text).unwrap()
        }

        proptest! {
            #![proptest_config(config())]

            /// Only blanking, in place: same characters or spaces, every line
            /// break where it was, so serde_json's positions hold.
            #[test]
            fn blanks_in_place(text in prop_oneof![jsonish(), any::<String>()]) {
                let out = strip(&text);
                let (a, b): (Vec<char>, Vec<char>) = (text.chars().collect(), out.chars().collect());
                prop_assert_eq!(a.len(), b.len());
                for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                    prop_assert!(
                        x == y || (*y == ' ' && *x != '\n'),
                        "char {} {:?} became {:?} in {:?}", i, x, y, text
                    );
                }
                prop_assert_eq!(text.lines().count(), out.lines().count());
            }

            /// Plain JSON has nothing to strip.
            #[test]
            fn leaves_plain_json_as_it_is(value in json_value(), pretty in any::<bool>()) {
                let text = if pretty {
                    serde_json::to_string_pretty(&value).unwrap()
                } else {
                    serde_json::to_string(&value).unwrap()
                };
                let out = strip(&text);
                prop_assert_eq!(&out, &text);
                prop_assert_eq!(parse(&out), parse(&text));
            }

            /// Comments between tokens, a leading BOM and trailing commas go;
            /// the value stays.
            #[test]
            fn comments_and_trailing_commas_do_not_change_the_value(
                value in json_value(),
                gaps in prop::collection::vec(gap(), 1..16),
                trailing in any::<bool>(),
                bom in any::<bool>(),
            ) {
                let mut text = String::new();
                if bom {
                    text.push('\u{feff}');
                }
                let mut next = 0;
                text.push_str(&gaps[0]);
                write(&value, &gaps, &mut next, trailing, &mut text);
                text.push_str(&gaps[next % gaps.len()]);
                let stripped = strip(&text);
                let parsed = serde_json::from_str::<Value>(&stripped);
                prop_assert!(parsed.is_ok(), "{:?} -> {:?}: {:?}", text, stripped, parsed);
                prop_assert_eq!(
                    parsed.unwrap(),
                    parse(&serde_json::to_string(&value).unwrap()),
                    "text: {:?}", text
                );
            }
        }
    }
}
