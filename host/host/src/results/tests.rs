use super::*;
use serde_json::json;

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

fn lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("line {i}: some words of a log\n"))
        .collect()
}

#[test]
fn a_result_under_its_budget_is_not_over_it() {
    let small = text_result("hello");
    assert!(!over_budget(&small, 100));
    assert!(over_budget(&text_result(&"x".repeat(500)), 100));
    assert!(
        !over_budget(&text_result(&"x".repeat(100_000)), 0),
        "0: no budget"
    );
}

#[test]
fn long_text_keeps_its_head_and_tail_within_the_budget() {
    let text = lines(20_000);
    let p = preview(&text_result(&text), 4_000, 300);
    assert!(json_size(&p.result) <= 3_700, "{}", json_size(&p.result));
    let shown = p.result["content"][0]["text"].as_str().unwrap();
    assert!(shown.starts_with("line 0: some words"), "{shown}");
    assert!(
        shown
            .trim_end()
            .ends_with("line 19999: some words of a log")
    );
    assert!(
        shown.contains(" characters, "),
        "the cut is marked: {shown}"
    );
    assert!(
        p.summary.starts_with("the middle of 1 text"),
        "{}",
        p.summary
    );
    // The cut falls at line ends.
    let marker = shown.find("\n[…").unwrap();
    assert!(shown[..marker].ends_with("log"), "{shown}");
}

#[test]
fn json_text_keeps_its_shape_and_the_first_items_of_its_arrays() {
    let entries: Vec<Value> = (0..20_000)
        .map(|i| json!({"name": format!("file{i}.txt"), "type": "file"}))
        .collect();
    let tree = serde_json::to_string_pretty(&json!({"name": "root", "children": entries})).unwrap();
    let p = preview(&text_result(&tree), 8_000, 300);
    assert!(json_size(&p.result) <= 7_700);
    let shown: Value = serde_json::from_str(p.result["content"][0]["text"].as_str().unwrap())
        .expect("the preview is JSON still");
    let kept = shown["children"].as_array().unwrap();
    assert!(kept.len() > 10, "as many items as fit: {}", kept.len());
    assert_eq!(kept[0]["name"], "file0.txt");
    assert!(
        p.summary.contains("1 array cut to their first"),
        "{}",
        p.summary
    );
    assert!(p.summary.contains("items left out"), "{}", p.summary);
}

#[test]
fn structured_content_and_its_text_share_the_budget() {
    let rows: Vec<Value> = (0..5_000).map(|i| json!({"id": i, "ok": true})).collect();
    let structured = json!({"rows": rows});
    let result = json!({"content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured});
    let p = preview(&result, 6_000, 0);
    assert!(json_size(&p.result) <= 6_000);
    let rows = p.result["structuredContent"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty() && rows.len() < 5_000);
    assert_eq!(
        rows[0],
        json!({"id": 0, "ok": true}),
        "items whole, no markers"
    );
}

#[test]
fn binary_content_is_left_out_of_a_preview() {
    let result = json!({"content": [
        {"type": "image", "mimeType": "image/png", "data": "A".repeat(400_000)},
        {"type": "text", "text": "a caption"},
    ]});
    let p = preview(&result, 2_000, 0);
    let note = p.result["content"][0]["text"].as_str().unwrap();
    assert!(
        note.contains("image image/png, 292.969 KB") || note.contains("image image/png"),
        "{note}"
    );
    assert_eq!(
        p.result["content"][1]["text"], "a caption",
        "small parts stay whole"
    );
    assert!(json_size(&p.result) <= 2_000);
}

#[test]
fn a_kept_result_reads_back_whole() {
    let store = crate::kept::Store::new(Default::default());
    let shelf = store.shelf();
    let text = lines(1000);
    let uri = keep(&shelf, &text_result(&text), "s/t".into()).unwrap();
    let whole = shelf.whole(&uri).unwrap();
    assert_eq!(&*whole.text, text);
    let contents = contents(&uri, &whole);
    assert_eq!(contents[0]["text"], text);
    assert_eq!(contents[0]["mimeType"], "text/plain");
    let id = uri.trim_start_matches(crate::kept::URI_PREFIX);
    assert!(shelf.whole(id).is_some(), "the bare id names it too");
}

#[test]
fn ranges_count_characters() {
    let r = read_range("héllo wörld", 1, 4);
    assert_eq!(
        (r.text.as_str(), r.offset, r.end, r.total),
        ("éllo", 1, 5, 11)
    );
    assert!(r.more());
    let r = read_range("héllo", 3, 100);
    assert_eq!((r.text.as_str(), r.end, r.more()), ("lo", 5, false));
    let r = read_range("abc", 10, 5);
    assert_eq!((r.text.as_str(), r.offset, r.end), ("", 3, 3));
}
