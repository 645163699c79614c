//! Parameter names and descriptions read out of a tool's JSON Schema text,
//! for the fields the default scoring indexes.

/// The string literals of a JSON text, in order: each as the offset of its
/// closing quote (the text's length when it never closes) and its contents as
/// written (escapes are not decoded). Total: any text, however malformed or
/// cut short, yields literals, never a panic.
fn string_literals(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut literals = Vec::new();
    let mut i = 0;
    while let Some(open) = bytes
        .get(i..)
        .and_then(|rest| rest.iter().position(|&b| b == b'"'))
    {
        let start = i + open + 1;
        let mut end = start;
        // An escape skips the byte after the backslash, so `\"` does not close the string.
        while let Some(&b) = bytes.get(end) {
            match b {
                b'"' => break,
                b'\\' => end += 2,
                _ => end += 1,
            }
        }
        // A closing quote is an ASCII byte, hence a char boundary; so is the end of the text.
        let end = end.min(bytes.len());
        literals.push((end, text.get(start..end).unwrap_or("")));
        i = end + 1;
    }
    literals
}

/// Parameter names and descriptions from a JSON Schema text, as two texts of
/// words: names are the keys whose value is an object (the parameters, at any
/// depth) other than the keywords that hold such objects (`properties`,
/// `items`, ...); text is every `description` string and the choices of every
/// `enum`.
///
/// A scan of the string literals rather than a JSON parser: no dependency in
/// the guest, no tree built for each tool, and malformed or truncated text is
/// read as far as it makes sense (a literal that never closes is no key, but
/// can still be a description) instead of being refused or trapping.
pub(crate) fn schema_fields(schema: &str) -> (String, String) {
    let mut names = String::new();
    let mut text = String::new();
    let strings = string_literals(schema);
    // A key is a string followed by ':'; a property name is a key whose value is an object.
    for (k, &(end, s)) in strings.iter().enumerate() {
        // A literal that never closes runs to the end of the text: nothing follows it.
        let Some(after) = schema.get(end + 1..) else {
            continue;
        };
        let Some(value) = after.trim_start().strip_prefix(':') else {
            continue;
        };
        let value = value.trim_start();
        if s == "enum" && value.starts_with('[') {
            // The choices of a consolidated tool's `method` or `operation` say
            // what it does (`drain`, `get_files`).
            let close = schema.len() - value.len() + value.find(']').unwrap_or(value.len());
            for &(_, v) in strings.iter().skip(k + 1).take_while(|(e, _)| *e < close) {
                text.push_str(v);
                text.push(' ');
            }
        } else if s == "description" {
            if let Some(&(_, d)) = strings.get(k + 1) {
                text.push_str(d);
                text.push(' ');
            }
        } else if value.starts_with('{')
            && !matches!(
                s,
                "properties" | "items" | "additionalProperties" | "$defs" | "definitions"
            )
        {
            names.push_str(s);
            names.push(' ');
        }
    }
    (names, text)
}

#[cfg(test)]
mod tests {
    use super::schema_fields;
    use proptest::prelude::*;
    use serde_json::{Map, Value};
    use std::panic::{AssertUnwindSafe, catch_unwind};

    /// The scan as it was before it was made total, kept verbatim as an
    /// oracle. It panics on a string literal that never closes, so it is only
    /// compared where it returns.
    fn old_serde_json_lite(schema: &str) -> Result<(String, String), ()> {
        let mut names = String::new();
        let mut text = String::new();
        let bytes = schema.as_bytes();
        let mut i = 0;
        let mut strings: Vec<(usize, String)> = Vec::new();
        while i < bytes.len() {
            if bytes[i] == b'"' {
                let start = i + 1;
                let mut j = start;
                let mut s = String::new();
                while j < bytes.len() && bytes[j] != b'"' {
                    if bytes[j] == b'\\' {
                        j += 1;
                    }
                    j += 1;
                }
                if j <= bytes.len() {
                    s.push_str(&String::from_utf8_lossy(&bytes[start..j.min(bytes.len())]));
                }
                strings.push((j, s));
                i = j + 1;
            } else {
                i += 1;
            }
        }
        for (k, (end, s)) in strings.iter().enumerate() {
            let after = schema[end + 1..].trim_start();
            if !after.starts_with(':') {
                continue;
            }
            let value = after[1..].trim_start();
            if s == "enum" && value.starts_with('[') {
                let close = schema.len() - value.len() + value.find(']').unwrap_or(value.len());
                for (_, v) in strings[k + 1..].iter().take_while(|(e, _)| *e < close) {
                    text.push_str(v);
                    text.push(' ');
                }
            } else if s == "description" {
                if let Some((_, d)) = strings.get(k + 1) {
                    text.push_str(d);
                    text.push(' ');
                }
            } else if value.starts_with('{')
                && !matches!(
                    s.as_str(),
                    "properties" | "items" | "additionalProperties" | "$defs" | "definitions"
                )
            {
                names.push_str(s);
                names.push(' ');
            }
        }
        Ok((names, text))
    }

    /// The old scan's answer, or `None` where it panicked.
    fn old(schema: &str) -> Option<(String, String)> {
        catch_unwind(AssertUnwindSafe(|| old_serde_json_lite(schema)))
            .ok()
            .map(|r| r.unwrap_or_default())
    }

    /// A schema like the ones servers send: nested objects, an enum, escapes,
    /// non-ASCII text, keys that are not parameter names.
    const REALISTIC: &str = r#"{"type":"object","properties":{"path":{"type":"string","description":"Path of the file, e.g. \"src/main.rs\" or C:\\dir\\f.txt"},"mode":{"type":"string","enum":["read","write","append"],"description":"Open mode"},"options":{"type":"object","properties":{"encoding":{"type":"string","default":"utf-8","description":"Text encoding — «utf-8» by default"}},"additionalProperties":false},"tags":{"type":"array","items":{"type":"string"},"description":"Labels\nto attach"},"查询":{"type":"integer","minimum":0,"description":"查询车票"}},"required":["path"],"$defs":{"Node":{"type":"object"}}}"#;

    #[test]
    fn an_unterminated_string_is_read_as_far_as_it_goes() {
        // The text ends inside a string literal: the old scan sliced past the end.
        assert_eq!(
            schema_fields(r#"{"properties":{"path":{"description":"The path to"#),
            ("path ".to_string(), "The path to ".to_string())
        );
        // ... or inside an escape of one.
        let _ = schema_fields(r#"{"properties":{"path":{"description":"C:\"#);
        for schema in ["\"", "\"\\", "{\"", "{\"a\":\"", "{\"a\" : \"b", "\"\u{e9}"] {
            let _ = schema_fields(schema);
        }
    }

    #[test]
    fn every_prefix_of_a_schema_reads_without_panicking() {
        let pretty = serde_json::to_string_pretty(
            &serde_json::from_str::<Value>(REALISTIC).expect("REALISTIC is JSON"),
        )
        .unwrap();
        for schema in [REALISTIC, pretty.as_str()] {
            for (cut, _) in schema.char_indices().chain([(schema.len(), ' ')]) {
                let _ = schema_fields(&schema[..cut]);
                let _ = schema_fields(&schema[cut..]);
            }
        }
    }

    #[test]
    fn a_well_formed_schema_reads_as_before() {
        let (names, text) = schema_fields(REALISTIC);
        assert_eq!(names, "path mode options encoding tags 查询 Node ");
        assert_eq!(
            text,
            r#"Path of the file, e.g. \"src/main.rs\" or C:\\dir\\f.txt read write append Open mode Text encoding — «utf-8» by default Labels\nto attach 查询车票 "#
        );
        assert_eq!(old(REALISTIC), Some((names, text)));
        for schema in ["", "{}", "null", "[]", r#"{"type":"object"}"#] {
            assert_eq!(schema_fields(schema), (String::new(), String::new()));
        }
    }

    /// Keys that mean something to the scan, and some that do not.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => prop::sample::select(vec![
                "properties", "description", "enum", "items", "type", "$defs",
                "definitions", "additionalProperties", "anyOf", "default", "path",
            ])
            .prop_map(str::to_string),
            1 => any::<String>(),
            1 => "[a-z\"\\\\\\]\\[{}:, ]{0,8}",
        ]
    }

    /// Arbitrary JSON, shaped like a schema often enough to reach every branch.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            key().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    /// A string value: arbitrary, or one of the keys (with quotes, brackets, backslashes).
    fn string() -> impl Strategy<Value = String> {
        prop_oneof![any::<String>(), key()]
    }

    /// A JSON Schema: parameters under `properties` (each a schema again),
    /// descriptions, enums, array items, and now and then arbitrary JSON.
    fn schema() -> impl Strategy<Value = Value> {
        json().prop_recursive(4, 48, 5, |inner| {
            (
                prop::collection::vec((key(), inner.clone()), 0..5),
                prop::option::of(string()),
                prop::option::of(prop::collection::vec(string(), 0..5)),
                prop::option::of(inner),
            )
                .prop_map(|(properties, description, choices, items)| {
                    let mut schema = Map::new();
                    schema.insert("type".into(), "object".into());
                    if !properties.is_empty() {
                        let properties = properties.into_iter().collect::<Map<_, _>>();
                        schema.insert("properties".into(), properties.into());
                    }
                    if let Some(d) = description {
                        schema.insert("description".into(), d.into());
                    }
                    if let Some(c) = choices {
                        schema.insert("enum".into(), c.into());
                    }
                    if let Some(i) = items {
                        schema.insert("items".into(), i);
                    }
                    Value::Object(schema)
                })
        })
    }

    /// A schema's text, compact or pretty.
    fn schema_text() -> impl Strategy<Value = String> {
        (prop_oneof![1 => json(), 3 => schema()], any::<bool>()).prop_map(|(v, pretty)| {
            if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                v.to_string()
            }
        })
    }

    /// One edit of a text, at a position given as a fraction of its length.
    #[derive(Clone, Debug)]
    enum Edit {
        Truncate(prop::sample::Index),
        Drop(prop::sample::Index, usize),
        Insert(prop::sample::Index, String),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        let piece = prop_oneof![
            prop::sample::select(vec![
                "\"", "\\", ":", "{", "}", "[", "]", ",", " ", "\u{e9}"
            ])
            .prop_map(str::to_string),
            any::<String>(),
        ];
        prop_oneof![
            any::<prop::sample::Index>().prop_map(Edit::Truncate),
            (any::<prop::sample::Index>(), 1..8usize).prop_map(|(i, n)| Edit::Drop(i, n)),
            (any::<prop::sample::Index>(), piece).prop_map(|(i, s)| Edit::Insert(i, s)),
        ]
    }

    /// The char boundary at or before `index` of `text`.
    fn boundary(text: &str, index: &prop::sample::Index) -> usize {
        let mut at = index.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    fn apply(mut text: String, edits: &[Edit]) -> String {
        for e in edits {
            match e {
                Edit::Truncate(i) => text.truncate(boundary(&text, i)),
                Edit::Drop(i, n) => {
                    let from = boundary(&text, i);
                    let to = text[from..]
                        .char_indices()
                        .nth(*n)
                        .map_or(text.len(), |(k, _)| from + k);
                    text.replace_range(from..to, "");
                }
                Edit::Insert(i, s) => text.insert_str(boundary(&text, i), s),
            }
        }
        text
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_text_reads_without_panicking(text in any::<String>()) {
            let _ = schema_fields(&text);
        }

        #[test]
        fn a_well_formed_schema_reads_as_the_old_scan_did(schema in schema_text()) {
            prop_assert_eq!(Some(schema_fields(&schema)), old(&schema));
        }

        #[test]
        fn a_damaged_schema_reads_without_panicking(
            schema in schema_text(),
            edits in prop::collection::vec(edit(), 1..4),
        ) {
            let damaged = apply(schema, &edits);
            let new = schema_fields(&damaged);
            // Where the old scan did not panic, nothing changed.
            if let Some(old) = old(&damaged) {
                prop_assert_eq!(new, old);
            }
        }

        #[test]
        fn every_truncation_of_a_schema_reads_without_panicking(
            schema in schema_text(),
            cut in any::<prop::sample::Index>(),
        ) {
            let cut = boundary(&schema, &cut);
            let _ = schema_fields(&schema[..cut]);
        }
    }
}
