use super::*;

#[test]
fn a_projection_reads_the_json_text_before_the_structured_content() {
    let both = json!({"content": [{"type": "text", "text": "[1, 2]"}],
        "structuredContent": {"content": "[1, 2]"}});
    assert_eq!(project_input(&both), Some(json!([1, 2])));
    let prose = json!({"content": [{"type": "text", "text": "two rows"}],
        "structuredContent": {"rows": [1, 2]}});
    assert_eq!(project_input(&prose), Some(json!({"rows": [1, 2]})));
    let neither = json!({"content": [{"type": "text", "text": "hello"}]});
    assert_eq!(project_input(&neither), None);
}

#[test]
fn a_format_rewrites_json_text_and_only_when_shorter_if_asked() {
    let rows: Vec<Value> = (0..20)
        .map(|i| json!({"id": i, "name": format!("n{i}")}))
        .collect();
    let pretty = serde_json::to_string_pretty(&rows).unwrap();
    let mut result =
        json!({"content": [{"type": "text", "text": pretty}, {"type": "text", "text": "prose"}]});
    let mut notes = Vec::new();
    reformat(&mut result, Format::Csv, false, &mut notes);
    let csv = result["content"][0]["text"].as_str().unwrap();
    assert!(csv.starts_with("id,name\n0,n0\n"), "{csv}");
    assert_eq!(result["content"][1]["text"], "prose", "prose stays");
    assert!(notes.is_empty());

    // Structured content only: its text joins the content.
    let mut result = json!({"content": [], "structuredContent": {"a": [1, 2]}});
    reformat(&mut result, Format::Toon, false, &mut notes);
    assert_eq!(result["content"][0]["text"], "a[2]: 1,2");

    // CSV that does not apply: JSON, with a note.
    let mut result = json!({"content": [{"type": "text", "text": "{\"a\": {\"b\": 1}}"}]});
    reformat(&mut result, Format::Csv, false, &mut notes);
    assert_eq!(result["content"][0]["text"], "{\"a\":{\"b\":1}}");
    assert!(
        notes[0].starts_with("[Written as JSON: csv needs"),
        "{notes:?}"
    );

    // toonEncode: only where shorter.
    let mut result = json!({"content": [{"type": "text", "text": "[1]"}]});
    reformat(&mut result, Format::Toon, true, &mut Vec::new());
    assert_eq!(result["content"][0]["text"], "[1]", "\"[1]: 1\" is longer");
}
