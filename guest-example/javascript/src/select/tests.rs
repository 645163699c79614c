//! jq projections natively: outputs, key order, and each kind of error.

use super::{SelectError, select};

fn ok(expression: &str, input: &str) -> String {
    match select(expression, input.into()) {
        Ok(json) => json,
        Err(e) => panic!("{expression:?} failed: {e:?}"),
    }
}

fn err(expression: &str, input: &str) -> SelectError {
    match select(expression, input.into()) {
        Ok(json) => panic!("{expression:?} gave {json}"),
        Err(e) => e,
    }
}

const ITEMS: &str = r#"{"items":[
    {"name":"a","size":5,"tags":["x"]},
    {"name":"b","size":20,"tags":[]},
    {"name":"c","size":11,"tags":["y","z"]}
]}"#;

#[test]
fn a_field_is_its_value() {
    assert_eq!(ok(".items[1].name", ITEMS), r#""b""#);
    assert_eq!(ok(".missing", ITEMS), "null");
    assert_eq!(ok(".", "[1,2.5,-3]"), "[1,2.5,-3]");
}

#[test]
fn several_outputs_are_an_array_and_none_an_empty_one() {
    assert_eq!(
        ok(".items[] | {name}", ITEMS),
        r#"[{"name":"a"},{"name":"b"},{"name":"c"}]"#
    );
    assert_eq!(ok(".items[].size", ITEMS), "[5,20,11]");
    assert_eq!(ok("empty", ITEMS), "[]");
    assert_eq!(ok("1, 2", "null"), "[1,2]");
}

#[test]
fn map_select_and_length() {
    assert_eq!(
        ok(
            "map(select(.size > 10)) | map(.name)",
            r#"[{"name":"a","size":5},{"name":"b","size":20}]"#
        ),
        r#"["b"]"#
    );
    assert_eq!(
        ok(".items | map(select(.size > 10) | .name)", ITEMS),
        r#"["b","c"]"#
    );
    assert_eq!(ok(".items | length", ITEMS), "3");
    assert_eq!(ok("[.items[].tags | length]", ITEMS), "[1,0,2]");
    assert_eq!(ok("length", r#""héllo""#), "5");
}

#[test]
fn object_keys_keep_their_order() {
    let input = r#"{"zeta":1,"alpha":2,"mid":{"b":1,"a":2}}"#;
    assert_eq!(ok(".", input), input);
    assert_eq!(
        ok("{mid, zeta}", input),
        r#"{"mid":{"b":1,"a":2},"zeta":1}"#
    );
    assert_eq!(ok("keys_unsorted", input), r#"["zeta","alpha","mid"]"#);
}

#[test]
fn numbers_and_strings_come_back_as_json() {
    assert_eq!(ok(".[0] + .[1]", "[1, 2]"), "3");
    assert_eq!(ok(".[0] / .[1]", "[1, 4]"), "0.25");
    assert_eq!(
        ok(". * 10", "1e308"),
        "null",
        "an infinity is null, as jq writes it"
    );
    assert_eq!(ok("nan", "null"), "null");
    assert_eq!(ok(".", "18446744073709551615"), "18446744073709551615");
    assert_eq!(ok(r#""a\"b\n" + ."#, r#""é""#), r#""a\"b\né""#);
    assert_eq!(ok("tojson", r#"{"a":[1]}"#), r#""{\"a\":[1]}""#);
}

#[test]
fn a_syntax_error_says_what_and_where() {
    let SelectError::Syntax(m) = err(".items[", ITEMS) else {
        panic!("not a syntax error");
    };
    assert_eq!(m, "unclosed `[` at line 1, column 7");
    let SelectError::Syntax(m) = err(".a | if . then 1", "{}") else {
        panic!("not a syntax error");
    };
    assert!(
        m.starts_with("expected ") && m.ends_with("at the end of the expression"),
        "{m}"
    );
    let SelectError::Syntax(m) = err(".a | (.b", "{}") else {
        panic!("not a syntax error");
    };
    assert_eq!(m, "unclosed `(` at line 1, column 6");
    let SelectError::Syntax(m) = err(".a |\n  nosuch(1)", "{}") else {
        panic!("not a syntax error");
    };
    assert!(
        m.contains("nosuch/1") && m.contains("line 2, column 3"),
        "{m}"
    );
    assert!(matches!(err("$nope", "{}"), SelectError::Syntax(m) if m.contains("$nope")));
}

#[test]
fn a_runtime_error_says_what_failed() {
    let SelectError::Runtime(m) = err(".a + 1", r#"{"a":"text"}"#) else {
        panic!("not a runtime error");
    };
    assert!(m.contains("text"), "{m}");
    let SelectError::Runtime(m) = err(".a", r#""a string""#) else {
        panic!("not a runtime error");
    };
    assert!(m.contains("cannot index"), "{m}");
    assert_eq!(
        err(r#"error("custom")"#, "null"),
        SelectError::Runtime("custom".into())
    );
    // Caught errors are values, as in jq.
    assert_eq!(ok(r#"try error("x") catch ."#, "null"), r#""x""#);
}

#[test]
fn a_runtime_error_quotes_a_large_value_briefly() {
    let big = format!("[{}]", vec!["\"filler\""; 100_000].join(","));
    let SelectError::Runtime(m) = err(". + 1", &big) else {
        panic!("not a runtime error");
    };
    assert!(m.len() < 1000 && m.ends_with('…'), "{} bytes", m.len());
}

#[test]
fn input_that_is_not_json_is_a_runtime_error() {
    assert!(
        matches!(err(".", "{not json"), SelectError::Runtime(m) if m.starts_with("the input is not JSON"))
    );
}

#[test]
fn modules_are_unsupported() {
    assert!(matches!(
        err(r#"import "foo" as foo; ."#, "null"),
        SelectError::Unsupported(_)
    ));
}

#[test]
fn halt_ends_the_outputs() {
    assert_eq!(ok("1, halt, 2", "null"), "1");
    assert!(matches!(err("halt_error(3)", "null"), SelectError::Runtime(m) if m.contains('3')));
}

#[test]
fn outputs_that_are_not_json_are_runtime_errors() {
    let SelectError::Runtime(m) = err("{(1): 2}", "null") else {
        panic!("not a runtime error");
    };
    assert!(m.contains("key"), "{m}");
    // As deep as serde_json reads, and one level deeper.
    let deepest = ok("reduce range(127) as $i (0; [.])", "null");
    assert!(serde_json::from_str::<serde_json::Value>(&deepest).is_ok());
    let SelectError::Runtime(m) = err("reduce range(128) as $i (0; [.])", "null") else {
        panic!("not a runtime error");
    };
    assert!(m.contains("deeper than 127"), "{m}");
    // Several outputs are one array more.
    ok("(reduce range(126) as $i (0; [.])), 1", "null");
    err("(reduce range(127) as $i (0; [.])), 1", "null");
}
