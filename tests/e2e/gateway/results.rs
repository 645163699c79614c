//! Big results through the TypeScript SDK client, on real servers:
//! server-filesystem's `directory_tree` over 20,000 entries and
//! `read_text_file` on a 5 MB file, server-everything's images and large
//! embedded resources. Each preview is within the budget, the kept whole
//! reads back the same (hashes), ranges and projections give the right
//! slices, the store's TTL and cap evict, and no other session or client
//! token reads what a session kept.

use super::serve::{client_plan, text};
use crate::common::ConfigDirs;
use crate::servers::{MCPW, servers};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// The budget's bytes at the default 10,000 tokens.
const BUDGET_BYTES: usize = 40_000;

struct Setup {
    dirs: ConfigDirs,
    data: PathBuf,
}

/// A folder of 20 folders of 1,000 files each and a 5 MB text, served by
/// server-filesystem twice: `fs` under the budget, `fsall` with none (the
/// whole as the server sends it, to compare with).
fn setup(settings: Value) -> Setup {
    let dirs = ConfigDirs::new();
    let data = dirs.root.path().join("data");
    for d in 0..20 {
        let dir = data.join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..1000 {
            std::fs::write(dir.join(format!("f{f:04}.txt")), "").unwrap();
        }
    }
    let text: String = (0..100_000)
        .map(|i| format!("line {i:06}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(data.join("big.txt"), text).unwrap();
    let fs = |budget: Value| json!({"command": "node", "args": [servers().filesystem(), data.display().to_string()], "resultBudget": budget});
    let config = json!({
        "mcpServers": {
            "fs": fs(Value::Null),
            "fsall": fs(json!(0)),
            "everything": {"command": "node", "args": [servers().everything()]},
        },
        "settings": settings,
    });
    dirs.user(&config.to_string());
    Setup { dirs, data }
}

fn connect(s: &Setup, exposure: &str) -> Value {
    let env = crate::common::client_env(&s.dirs.home());
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", exposure], "env": env})
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"op": "callTool", "name": name, "arguments": arguments})
}

fn digest_of(name: &str, arguments: Value) -> Value {
    json!({"op": "callTool", "name": name, "arguments": arguments, "digest": true})
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A result's size as the client got it (without the client's own keys).
fn size(result: &Value) -> usize {
    let mut r = result.clone();
    r.as_object_mut().unwrap().remove("progress");
    r.to_string().len()
}

/// The id of the result a preview names.
fn kept_id(preview: &Value) -> String {
    preview["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "resource_link")
        .unwrap_or_else(|| panic!("no resource link: {preview}"))["name"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_20000_entry_tree_and_a_5_mb_file_come_as_previews_and_read_back_whole() {
    let s = setup(json!({}));
    let tree = json!({"path": s.data.display().to_string()});
    let big = json!({"path": s.data.join("big.txt").display().to_string()});
    let r = client_plan(json!({"connect": connect(&s, "direct"), "steps": [
        {"op": "listTools"},
        call("fs__directory_tree", tree.clone()),
        {"op": "readResource", "linkOf": 1, "digest": true},
        {"op": "readRanges", "tool": "read_result", "idKey": "id", "idOf": 1, "limit": 39_000},
        digest_of("fsall__directory_tree", tree.clone()),
        call("fs__read_text_file", big.clone()),
        {"op": "readRanges", "tool": "read_result", "idKey": "id", "idOf": 5, "limit": 39_000},
        {"op": "readResource", "linkOf": 5, "digest": true},
        {"op": "listTools"},
    ]}))
    .unwrap();

    // Tools say how big a result mcpw lets through; read_result joins the
    // list once a result was cut.
    let names = |i: usize| -> Vec<String> {
        r[i].as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        !names(0).contains(&"read_result".to_string()),
        "{:?}",
        names(0)
    );
    assert!(
        names(8).contains(&"read_result".to_string()),
        "{:?}",
        names(8)
    );
    let tools = r[8].as_array().unwrap();
    let tool = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap();
    assert_eq!(
        tool("fs__directory_tree")["_meta"]["anthropic/maxResultSizeChars"],
        BUDGET_BYTES
    );
    assert!(
        tool("fsall__directory_tree")["_meta"]["anthropic/maxResultSizeChars"].is_null(),
        "a server with no budget: no hint"
    );
    assert_eq!(
        tool("read_result")["inputSchema"]["required"],
        json!(["id"])
    );

    // The tree: a preview within the budget, JSON still, its arrays cut.
    let preview = &r[1];
    assert_ne!(preview["isError"], true);
    assert!(size(preview) <= BUDGET_BYTES, "{} bytes", size(preview));
    let shown: Value = serde_json::from_str(preview["content"][0]["text"].as_str().unwrap())
        .expect("the preview is JSON");
    assert_eq!(shown[0]["name"], "big.txt");
    assert_eq!(shown[1]["children"][0]["name"], "f0000.txt");
    let note = text(preview);
    assert!(
        note.contains("Cut to fit the result budget of 10,000 tokens")
            && note.contains("arrays cut to their first"),
        "{note}"
    );
    // The whole, read as a resource and range by range, is what the server sent.
    let whole = &r[4]["content"][0];
    assert!(whole["length"].as_u64().unwrap() > 1_000_000, "{whole}");
    assert_eq!(r[2]["contents"][0]["sha256"], whole["sha256"]);
    assert_eq!(r[3]["sha256"], whole["sha256"], "{}", r[3]);
    assert!(r[3]["reads"].as_u64().unwrap() > 25, "{}", r[3]);

    // The 5 MB file: its head and tail, the whole as the file was.
    let file = std::fs::read(s.data.join("big.txt")).unwrap();
    let preview = &r[5];
    assert!(size(preview) <= BUDGET_BYTES, "{} bytes", size(preview));
    let shown = text(preview);
    assert!(
        shown.starts_with("line 000000: the quick"),
        "{}",
        &shown[..100]
    );
    assert!(shown.contains("line 099999: the quick brown fox jumps over the lazy dog\n"));
    assert!(shown.contains(" characters, ") && shown.contains(" lines cut …]"));
    assert_eq!(r[6]["sha256"], sha256(&file), "ranges: {}", r[6]);
    assert_eq!(r[7]["contents"][0]["sha256"], sha256(&file));
    assert_eq!(
        r[7]["contents"].as_array().unwrap().len(),
        1,
        "the text, not the structured copy too"
    );

    // A local session writes the whole to a private file as well.
    let path = shown
        .split("Its text is in the file ")
        .nth(1)
        .and_then(|rest| rest.split(" too.").next())
        .unwrap_or_else(|| panic!("no file named: {shown}"));
    assert_eq!(sha256(&std::fs::read(path).unwrap()), sha256(&file));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{path}");
        assert!(
            path.starts_with(&s.dirs.home().display().to_string()),
            "{path}"
        );
    }
}

#[test]
fn ranges_projections_and_formats_return_the_right_slices() {
    let s = setup(json!({}));
    let tree = json!({"path": s.data.display().to_string()});
    let dirs = "[.[] | select(.type == \"directory\") | .name]";
    let first = "[.[1].children[:3][] | {name, type}]";
    let r = client_plan(json!({"connect": connect(&s, "proxy"), "steps": [
        call("mcp", json!({"tool": "fs__directory_tree", "args": tree})),
        call("mcp", json!({"tool": "fsall__directory_tree", "args": tree})),
        call("mcp", json!({"result": "$kept:0", "offset": 1000, "limit": 300})),
        call("mcp", json!({"result": "$kept:0", "select": first, "format": "toon"})),
        call("mcp", json!({"result": "$kept:0", "select": first, "format": "csv"})),
        call("mcp", json!({"result": "$kept:0", "select": dirs})),
        call("mcp", json!({"tool": "fs__directory_tree", "args": tree, "select": "[.[].children | length] | add"})),
        call("mcp", json!({"result": "$kept:0", "select": ".[0].name + 1"})),
        call("mcp", json!({"result": "$kept:0", "select": "[.[] | "})),
        call("mcp", json!({"result": "0123456789abcdef0"})),
        {"op": "readRanges", "tool": "mcp", "idKey": "result", "idOf": 0, "limit": 39_000},
        call("mcp", json!({"tool": "fs__read_text_file", "args": {"path": s.data.join("nothing.txt").display().to_string()}, "select": "."})),
    ]}))
    .unwrap();
    // A tool's error comes through as it is, whatever the projection.
    assert_eq!(r[11]["isError"], true, "{}", r[11]);
    assert!(
        text(&r[11]).contains("ENOENT") && !text(&r[11]).contains("select"),
        "{}",
        text(&r[11])
    );
    let preview = &r[0];
    assert!(size(preview) <= BUDGET_BYTES, "{} bytes", size(preview));
    assert!(
        preview["structuredContent"].get("mcpResult").is_none(),
        "the whole is not in the details: {}",
        preview["structuredContent"]
    );
    let id = kept_id(preview);
    assert_eq!(
        preview["structuredContent"]["kept"],
        format!("mcpw://results/{id}")
    );
    assert!(
        text(preview).contains(&format!("mcp({{result: \"{id}\"")),
        "{}",
        text(preview)
    );

    // The whole as the server sent it (no budget on `fsall`)...
    let whole = r[1]["content"][0]["text"].as_str().unwrap();
    assert!(whole.len() > 1_000_000);
    // ...and a range of it, counted in characters.
    assert_eq!(r[2]["content"][0]["text"], whole[1000..1300]);
    assert_eq!(r[2]["structuredContent"]["end"], 1300);
    assert!(text(&r[2]).contains(&format!(
        "Read on with mcp({{result: \"{id}\", offset: 1300}})"
    )));
    // Projections, written as asked.
    assert_eq!(
        r[3]["content"][0]["text"],
        "[3]{name,type}:\n  f0000.txt,file\n  f0001.txt,file\n  f0002.txt,file"
    );
    assert_eq!(
        r[4]["content"][0]["text"],
        "name,type\nf0000.txt,file\nf0001.txt,file\nf0002.txt,file"
    );
    let names: Vec<String> = (0..20).map(|d| format!("d{d:02}")).collect();
    assert_eq!(r[5]["content"][0]["text"], json!(names).to_string());
    assert_eq!(text(&r[6]), "20000", "a projection in the call itself");
    // A projection that fails says why; so does a result that is gone.
    assert_eq!(r[7]["isError"], true);
    assert!(text(&r[7]).contains("cannot calculate"), "{}", text(&r[7]));
    assert_eq!(r[8]["isError"], true);
    assert!(
        text(&r[8]).to_lowercase().contains("syntax"),
        "{}",
        text(&r[8])
    );
    assert_eq!(r[9]["isError"], true);
    assert!(text(&r[9]).contains("not found"), "{}", text(&r[9]));
    // Range after range rebuilds the whole.
    assert_eq!(r[10]["sha256"], sha256(whole.as_bytes()), "{}", r[10]);
}

#[test]
fn large_embedded_resources_are_left_out_and_images_within_the_budget_pass() {
    let s = setup(json!({}));
    // Incompressible data: its gzip stays about as big.
    // (Small enough to pass as one argument of the client's command.)
    let mut bytes = Vec::with_capacity(60_000);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while bytes.len() < 60_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    use base64::Engine;
    let data = format!(
        "data:application/octet-stream;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    let gzip = json!({"name": "random.gz", "data": data, "outputType": "resource"});
    let r = client_plan(json!({"connect": connect(&s, "direct"), "steps": [
        call("everything__get-tiny-image", json!({})),
        call("everything__gzip-file-as-resource", gzip),
        {"op": "readResource", "linkOf": 1, "digest": true},
    ]}))
    .unwrap();
    let image = &r[0]["content"];
    assert!(
        image
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "image"),
        "a small image passes whole: {image}"
    );
    let preview = &r[1];
    assert!(size(preview) <= BUDGET_BYTES, "{} bytes", size(preview));
    assert!(
        text(preview).contains("[resource application/gzip, 58."),
        "the blob is named, not inlined: {}",
        text(preview)
    );
    let read = &r[2]["contents"][0];
    assert_eq!(read["mimeType"], "application/gzip");
    assert!(read["length"].as_u64().unwrap() > 59_000, "{read}");
}

#[test]
fn the_stores_ttl_and_cap_evict_and_no_other_session_reads_a_result() {
    // A session keeps 4 MiB: one tree (about 3 MB with its structured
    // copy), and a second one evicts the first.
    let s = setup(json!({"resultStore": {"sessionMiB": 4}}));
    let tree = json!({"path": s.data.display().to_string()});
    let big = json!({"path": s.data.join("big.txt").display().to_string()});
    let r = client_plan(json!({"connect": connect(&s, "direct"), "steps": [
        call("fs__directory_tree", tree.clone()),
        {"op": "readResource", "linkOf": 0, "digest": true},
        call("fs__directory_tree", tree),
        {"op": "readResource", "linkOf": 0, "digest": true},
        {"op": "readResource", "linkOf": 2, "digest": true},
        call("fs__read_text_file", big),
        {"op": "readResource", "linkOf": 2, "digest": true},
    ]}))
    .unwrap();
    assert!(r[1].get("error").is_none(), "kept: {}", r[1]);
    assert!(
        r[3]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("not found"),
        "the oldest went for the newest: {}",
        r[3]
    );
    assert_eq!(r[4]["contents"][0]["sha256"], r[1]["contents"][0]["sha256"]);
    // The 5 MB text is over what a session keeps: not kept, and it says so;
    // what was kept stays.
    assert!(text(&r[5]).contains("too big to keep"), "{}", text(&r[5]));
    assert!(
        r[6].get("error").is_none(),
        "a refused result evicts nothing: {}",
        r[6]
    );

    // A TTL of a tenth of a second: gone by the next reads.
    let s = setup(json!({"resultStore": {"ttlMinutes": 0.002}}));
    let tree = json!({"path": s.data.display().to_string()});
    let r = client_plan(json!({"connect": connect(&s, "direct"), "steps": [
        call("fs__directory_tree", tree),
        {"op": "run", "command": "sleep", "args": ["0.3"]},
        {"op": "readResource", "linkOf": 0, "digest": true},
        call("read_result", json!({"id": "$kept:0"})),
    ]}))
    .unwrap();
    assert!(
        r[2]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("not found"),
        "{}",
        r[2]
    );
    assert!(text(&r[3]).contains("not found"), "{}", text(&r[3]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_session_or_client_token_reads_nothing_a_session_kept() {
    const ADMIN: &str = "admin-token-0123456789";
    const CI: &str = "ci-token-0123456789";
    let s = setup(json!({}));
    s.dirs.edit_user(|config| {
        config["serve"] = json!({"tokens": [
            {"name": "ci", "token": CI, "servers": ["fs"]},
            {"name": "admin", "token": ADMIN}
        ]});
    });
    let serving = crate::servers::Serving::start(MCPW, &s.dirs.home(), &["--exposure", "direct"]);
    let url = serving.url();
    use super::code::http_client;
    let (a, b, c) = tokio::join!(
        http_client(&url, ADMIN),
        http_client(&url, ADMIN),
        http_client(&url, CI)
    );
    let Value::Object(args) = json!({"path": s.data.display().to_string()}) else {
        unreachable!()
    };
    let request =
        rmcp::model::CallToolRequestParams::new("fs__directory_tree").with_arguments(args);
    let preview = serde_json::to_value(a.call_tool(request).await.unwrap()).unwrap();
    assert!(preview.to_string().len() <= BUDGET_BYTES);
    let id = kept_id(&preview);
    let uri = format!("mcpw://results/{id}");
    let read = |uri: &str| rmcp::model::ReadResourceRequestParams::new(uri);
    let mine = a.read_resource(read(&uri)).await.unwrap();
    assert!(!mine.contents.is_empty());
    for (who, client) in [("another session", &b), ("another token", &c)] {
        let theirs = client.read_resource(read(&uri)).await;
        let error = format!("{:?}", theirs.expect_err(who));
        assert!(error.contains("not found"), "{who}: {error}");
        let Value::Object(args) = json!({"id": id}) else {
            unreachable!()
        };
        let request = rmcp::model::CallToolRequestParams::new("read_result").with_arguments(args);
        let answer = serde_json::to_value(client.call_tool(request).await.unwrap()).unwrap();
        assert_eq!(answer["isError"], true, "{who}: {answer}");
        assert!(text(&answer).contains("not found"), "{who}: {answer}");
    }
    let _ = tokio::join!(a.cancel(), b.cancel(), c.cancel());
}

#[test]
fn a_scripts_big_value_is_cut_and_a_script_reads_it_back() {
    let s = setup(json!({}));
    let r = client_plan(json!({"connect": connect(&s, "code"), "steps": [
        call("code", json!({"code": "return Array.from({length: 20000}, (_, i) => ({id: i, name: `item ${i}`}))"})),
        call("code", json!({"code": "return await tools.read_result({id: '$kept:0', select: '[.[] | select(.id % 5000 == 0) | .name]'})"})),
        call("code", json!({"code": "return await tools.read_result({id: '$kept:0', offset: 2, limit: 20})"})),
        call("code", json!({"code": "return 1", "select": ". + 1"})),
    ]}))
    .unwrap();
    let preview = &r[0];
    assert!(size(preview) <= BUDGET_BYTES, "{} bytes", size(preview));
    assert!(
        text(preview).contains("return await tools.read_result({id: "),
        "the note says how, in this exposure: {}",
        text(preview)
    );
    assert_eq!(
        r[1]["structuredContent"]["value"],
        json!(["item 0", "item 5000", "item 10000", "item 15000"]),
        "{}",
        r[1]
    );
    assert_eq!(
        r[2]["structuredContent"]["value"],
        r#""id":0,"name":"item "#
    );
    assert_eq!(text(&r[3]), "2", "select on a script's value");
}

#[test]
fn a_64_mb_result_comes_through_as_its_preview() {
    let s = setup(json!({}));
    s.dirs.edit_user(|config| {
        config["mcpServers"]["m"] =
            json!({"command": "node", "args": [servers().misbehave(), "ok"], "callTimeoutMs": 120000});
    });
    let bytes = 64 << 20;
    let r = client_plan(json!({"connect": connect(&s, "direct"), "steps": [
        call("m__big", json!({"bytes": bytes})),
        call("read_result", json!({"id": "$kept:0", "offset": bytes - 10})),
    ]}))
    .unwrap();
    assert!(size(&r[0]) <= BUDGET_BYTES, "{} bytes", size(&r[0]));
    assert!(
        text(&r[0]).contains("The whole result is 67,108,864 characters"),
        "{}",
        &text(&r[0])[text(&r[0]).len() - 700..]
    );
    assert_eq!(r[1]["content"][0]["text"], "x".repeat(10));
    assert_eq!(r[1]["structuredContent"]["total"], bytes);
}

#[test]
fn a_format_set_for_all_or_for_a_server_rewrites_json_results() {
    let s = setup(json!({"resultFormat": "toon"}));
    s.dirs.edit_user(|config| {
        config["mcpServers"]["fsall"]["resultFormat"] = json!({"list_*": "json", "*": "csv"});
    });
    let dir = s.data.join("d00").display().to_string();
    let r = client_plan(json!({"connect": connect(&s, "direct"), "steps": [
        call("everything__get-structured-content", json!({"location": "New York"})),
        call("fsall__directory_tree", json!({"path": dir})),
    ]}))
    .unwrap();
    // TOON for all: the text, while the structured content stays as the
    // tool's output schema says (the SDK client checks it).
    assert_eq!(
        text(&r[0]),
        "temperature: 33\nconditions: Cloudy\nhumidity: 82"
    );
    assert_eq!(r[0]["structuredContent"]["temperature"], 33);
    // The server's own glob wins: CSV for its tree of 1,000 files.
    let csv = text(&r[1]);
    assert!(
        csv.starts_with("name,type\nf0000.txt,file\n"),
        "{}",
        &csv[..100.min(csv.len())]
    );
    assert_eq!(csv.lines().count(), 1001);
}
