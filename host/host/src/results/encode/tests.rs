use super::*;
use serde_json::json;
use std::path::{Path, PathBuf};

/// The TOON spec's encode fixtures, copied from the spec (see the README
/// beside them).
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/toon");

fn csv(value: Value) -> String {
    encode(&value, Format::Csv).unwrap()
}

fn not_tabular(value: Value) -> String {
    encode(&value, Format::Csv).unwrap_err().found().to_string()
}

fn toon(value: Value) -> String {
    encode(&value, Format::Toon).unwrap()
}

// Formats

#[test]
fn formats_parse_by_name_in_any_case() {
    for format in Format::ALL {
        assert_eq!(Format::parse(format.name()), Some(format));
        assert_eq!(
            serde_json::to_string(&format).unwrap(),
            format!("\"{}\"", format.name())
        );
    }
    assert_eq!(Format::parse("TOON"), Some(Format::Toon));
    assert_eq!(Format::parse("Csv"), Some(Format::Csv));
    assert_eq!(Format::parse("yaml"), None);
    assert_eq!(Format::parse(""), None);
    assert_eq!(Format::parse(" json"), None);
}

// JSON

#[test]
fn json_is_compact_and_keeps_key_order() {
    let value = json!({"zeta": 1, "alpha": [true, null, 1.5], "mid": {"b": "é", "a": "x\ny"}});
    let text = encode(&value, Format::Json).unwrap();
    assert_eq!(
        text,
        r#"{"zeta":1,"alpha":[true,null,1.5],"mid":{"b":"é","a":"x\ny"}}"#
    );
    assert_eq!(text, serde_json::to_string(&value).unwrap());
}

#[test]
fn json_takes_any_value() {
    assert_eq!(encode(&json!("text"), Format::Json).unwrap(), r#""text""#);
    assert_eq!(encode(&json!(null), Format::Json).unwrap(), "null");
    assert_eq!(encode(&json!([]), Format::Json).unwrap(), "[]");
}

// TOON

#[test]
fn toon_passes_the_spec_encode_fixtures() {
    let dir = Path::new(FIXTURES).join("encode");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 9, "fixture files in {}", dir.display());

    let (mut run, mut skipped) = (0, 0);
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let fixture: Value = serde_json::from_str(&text).unwrap();
        let file_name = file.file_name().unwrap().to_string_lossy();
        assert_eq!(fixture["category"], "encode", "{file_name}");
        for case in fixture["tests"].as_array().unwrap() {
            let name = case["name"].as_str().unwrap();
            assert!(
                case.get("shouldError").is_none(),
                "{file_name}: {name}: an encode case that expects an error"
            );
            if !default_options(case) {
                skipped += 1;
                continue;
            }
            run += 1;
            let expected = case["expected"].as_str().unwrap();
            let got = toon(case["input"].clone());
            if got != expected {
                failures.push(format!(
                    "{file_name}: {name}\n--- expected\n{expected}\n--- got\n{got}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {run} fixtures differ:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // Skipped: the cases for a tab or pipe delimiter (22) and for an
    // indentation of 4 (1), options `encode` does not offer; a count that
    // moves means the fixtures changed.
    assert_eq!((run, skipped), (150, 23));
}

/// Whether a fixture case asks for the spec's default options only, which
/// are the ones `encode` uses. An option the fixtures did not have when they
/// were copied fails the test rather than being ignored.
fn default_options(case: &Value) -> bool {
    let Some(options) = case.get("options").and_then(Value::as_object) else {
        return true;
    };
    options.iter().all(|(key, value)| match key.as_str() {
        "delimiter" => value == ",",
        "indentSize" => value == 2,
        other => panic!("fixture option {other} is unknown here"),
    })
}

#[test]
fn toon_keeps_key_order() {
    assert_eq!(toon(json!({"zeta": 1, "alpha": 2})), "zeta: 1\nalpha: 2");
}

#[test]
fn toon_writes_uniform_objects_as_a_table() {
    let value = json!({
        "total": 2,
        "items": [
            {"id": 1, "name": "Ada", "tags": ["x", "y"]},
            {"id": 2, "name": "Bob, Jr.", "tags": []},
        ],
    });
    // Rows with an array field are not uniform: list items, not a table.
    assert_eq!(
        toon(value),
        "total: 2\nitems[2]:\n  - id: 1\n    name: Ada\n    tags[2]: x,y\n  - id: 2\n    name: \"Bob, Jr.\"\n    tags: []"
    );
    let value = json!([{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bob, Jr."}]);
    assert_eq!(toon(value), "[2]{id,name}:\n  1,Ada\n  2,\"Bob, Jr.\"");
}

#[test]
fn toon_takes_any_value() {
    assert_eq!(toon(json!("hello world")), "hello world");
    assert_eq!(toon(json!("true")), "\"true\"");
    assert_eq!(toon(json!(null)), "null");
    assert_eq!(toon(json!([1, "a", false])), "[3]: 1,a,false");
    assert_eq!(toon(json!(1e21)), "1000000000000000000000");
}

// CSV

#[test]
fn csv_writes_a_header_and_a_row_per_object() {
    let value = json!([
        {"id": 1, "name": "Ada", "admin": true, "score": 1.5, "note": null},
        {"id": 2, "name": "Bob", "admin": false, "score": -3, "note": "new"},
    ]);
    assert_eq!(
        csv(value),
        "id,name,admin,score,note\n1,Ada,true,1.5,\n2,Bob,false,-3,new"
    );
}

#[test]
fn csv_quotes_per_rfc_4180() {
    let value = json!([
        {"text": "a,b"},
        {"text": "say \"hi\""},
        {"text": "two\nlines"},
        {"text": "cr\rhere"},
        {"text": "crlf\r\n"},
        {"text": ""},
        {"text": " spaced 'single' ; semi|pipe\ttab "},
    ]);
    assert_eq!(
        csv(value),
        "text\n\"a,b\"\n\"say \"\"hi\"\"\"\n\"two\nlines\"\n\"cr\rhere\"\n\"crlf\r\n\"\n\"\"\n spaced 'single' ; semi|pipe\ttab "
    );
}

#[test]
fn csv_quotes_header_names_too() {
    let value = json!([{"a,b": 1, "say \"x\"": 2, "": 3, "plain": 4}]);
    assert_eq!(csv(value), "\"a,b\",\"say \"\"x\"\"\",\"\",plain\n1,2,3,4");
}

#[test]
fn csv_header_is_every_key_in_first_seen_order_and_missing_cells_are_empty() {
    let value = json!([
        {"a": 1, "b": 2},
        {"b": 3, "c": 4},
        {"c": 5, "a": 6},
        {},
    ]);
    assert_eq!(csv(value), "a,b,c\n1,2,\n,3,4\n6,,5\n,,");
}

#[test]
fn csv_writes_numbers_as_json_does() {
    let value = json!([{"n": 10.0}, {"n": 1e21}, {"n": u64::MAX}, {"n": -0.0}, {"n": 0.1}]);
    assert_eq!(
        csv(value),
        "n\n10.0\n1e+21\n18446744073709551615\n-0.0\n0.1"
    );
}

#[test]
fn csv_of_no_rows_or_no_columns_is_empty() {
    assert_eq!(csv(json!([])), "");
    assert_eq!(csv(json!([{}, {}])), "");
    assert_eq!(csv(json!({"items": []})), "");
}

#[test]
fn csv_takes_an_object_whose_one_field_is_the_rows() {
    let value = json!({"items": [{"id": 1}, {"id": 2, "ok": true}]});
    assert_eq!(csv(value), "id,ok\n1,\n2,true");
}

#[test]
fn csv_rejects_nested_values_saying_where() {
    assert_eq!(
        not_tabular(json!([{"a": 1}, {"a": [1, 2]}])),
        "an array at .[1].a"
    );
    assert_eq!(
        not_tabular(json!([{"user name": {"first": "Ada"}}])),
        r#"an object at .[0]."user name""#
    );
    assert_eq!(
        not_tabular(json!({"results": [{"id": 1, "tags": []}]})),
        "an array at .results[0].tags"
    );
    let error = encode(&json!([{"a": {}}]), Format::Csv).unwrap_err();
    assert_eq!(
        error.to_string(),
        "csv needs an array of objects whose values are strings, numbers, booleans or null; \
         found an object at .[0].a"
    );
}

#[test]
fn csv_rejects_values_that_are_not_rows() {
    assert_eq!(not_tabular(json!("text")), "a string");
    assert_eq!(not_tabular(json!(42)), "a number");
    assert_eq!(not_tabular(json!(null)), "null");
    assert_eq!(not_tabular(json!(true)), "a boolean");
    assert_eq!(not_tabular(json!([1, 2])), "a number at .[0]");
    assert_eq!(not_tabular(json!([{"a": 1}, [1]])), "an array at .[1]");
    assert_eq!(not_tabular(json!({"count": 3})), "a number at .count");
    assert_eq!(not_tabular(json!({"rows": {"a": 1}})), "an object at .rows");
    assert_eq!(
        not_tabular(json!({"total": 1, "items": [{"a": 1}]})),
        "an object with 2 fields (an object is taken only when its one field is the array)"
    );
    assert_eq!(
        not_tabular(json!({})),
        "an object with 0 fields (an object is taken only when its one field is the array)"
    );
}

// Sizes

/// 50 issues of 5 fields, as a tracker's list tool returns them.
fn issues() -> Value {
    const TITLES: [&str; 8] = [
        "Crash on start-up when the config file is empty",
        "Add a --json flag to the list command",
        "Docs: the install section is out of date",
        "Timeout too short for large uploads",
        "Support for proxies, with authentication",
        "Typo in error message",
        "Memory grows when a watch runs for days",
        "Windows: paths with spaces are not quoted",
    ];
    const PEOPLE: [&str; 5] = ["ada", "bob-smith", "chen", "dmitri", "eve_k"];
    let issues: Vec<Value> = (0..50)
        .map(|i| {
            json!({
                "number": 1200 + i,
                "title": TITLES[i % TITLES.len()],
                "state": if i % 3 == 0 { "closed" } else { "open" },
                "author": PEOPLE[i % PEOPLE.len()],
                "comments": (i * 7) % 23,
            })
        })
        .collect();
    Value::Array(issues)
}

#[test]
fn toon_and_csv_are_shorter_than_json_on_a_table() {
    let value = issues();
    let json = encode(&value, Format::Json).unwrap().len();
    let toon = encode(&value, Format::Toon).unwrap().len();
    let csv = encode(&value, Format::Csv).unwrap().len();
    let ratio = |n: usize| n as f64 / json as f64;
    println!(
        "json {json} bytes, toon {toon} ({:.3}), csv {csv} ({:.3})",
        ratio(toon),
        ratio(csv)
    );
    assert!(ratio(toon) < 0.7, "toon {toon} bytes against json {json}");
    assert!(csv < toon, "csv {csv} bytes against toon {toon}");
}
