//! The live page of `mcpw serve --http`: its data behind the tokens, and the
//! page itself in headless Chromium (Debian's package, installed when
//! missing): the servers table and the charts render, a search shows hits
//! with each signal's part, and a token limited to some servers sees none
//! of another's. The test keeps a screenshot in `target/tmp/live-page.png`.

use super::serve::client;
use crate::common::ConfigDirs;
use crate::servers::{MCPW, Serving, debian, servers};
use serde_json::{Value, json};

const ADMIN: &str = "page-admin-token-0123456789";
const TEAM: &str = "page-team-token-9876543210";
const READER: &str = "page-reader-token-1122334455";

fn serve() -> (ConfigDirs, Serving) {
    let s = servers();
    let dirs = ConfigDirs::new();
    let memory_file = dirs.root.path().join("memory.json");
    dirs.user(
        &json!({
            "mcpServers": {
                "everything": {"command": "node", "args": [s.everything(), "stdio"]},
                "memory": {"command": "node", "args": [s.memory()],
                           "env": {"MEMORY_FILE_PATH": memory_file.display().to_string()}}
            },
            "serve": {"tokens": [
                {"name": "team", "token": TEAM, "servers": ["memory"]},
                {"name": "reader", "token": READER, "servers": ["memory"], "tools": ["memory/read_*"]},
                {"name": "admin", "token": ADMIN}
            ]}
        })
        .to_string(),
    );
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    (dirs, serving)
}

/// `GET path` with `token`: the status and the body as JSON (null if not).
fn get(serving: &Serving, path: &str, token: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::blocking::Client::new().get(serving.at(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let body = response.text().unwrap();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_page_shows_servers_calls_and_search_and_a_limited_token_sees_only_its_servers() {
    let (_dirs, serving) = serve();
    // Calls to chart: three echoes, one failing call, one of memory.
    let r = client(
        json!({"url": serving.url(), "token": ADMIN}),
        json!([
            {"op": "callTool", "name": "everything__echo", "arguments": {"message": "a"}},
            {"op": "callTool", "name": "everything__echo", "arguments": {"message": "b"}},
            {"op": "callTool", "name": "everything__echo", "arguments": {"message": "c"}},
            {"op": "callTool", "name": "everything__echo", "arguments": {}},
            {"op": "callTool", "name": "memory__read_graph", "arguments": {}}
        ]),
    )
    .unwrap();
    assert_eq!(r[3]["isError"], true, "{}", r[3]);

    // The page's files are open; its data is not.
    let page = reqwest::blocking::get(serving.at("/")).unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().unwrap().contains("page.js"));
    assert_eq!(get(&serving, "/api/overview", None).0, 401);
    assert_eq!(get(&serving, "/api/calls", Some("wrong")).0, 401);

    let (status, overview) = get(&serving, "/api/overview", Some(ADMIN));
    assert_eq!(status, 200, "{overview}");
    assert_eq!(
        names(&overview["servers"], "name"),
        ["everything", "memory"]
    );
    let everything = &overview["servers"][0];
    assert_eq!(everything["state"], "running", "{everything}");
    assert_eq!(everything["transport"], "stdio");
    assert!(everything["tools"].as_u64().unwrap() > 5, "{everything}");
    let roles = names(&overview["guests"], "role");
    assert!(roles.contains(&"ranking".to_string()), "{roles:?}");

    let (_, calls) = get(&serving, "/api/calls", Some(ADMIN));
    let echo = calls["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "echo")
        .unwrap_or_else(|| panic!("{calls}"));
    assert_eq!(echo["totalCalls"], 4, "{echo}");
    assert_eq!(echo["totalErrors"], 1, "{echo}");
    assert_eq!(echo["calls"].as_array().unwrap().len(), 60);
    assert!(echo["p50MsHour"].as_f64().unwrap() > 0.0, "{echo}");
    assert!(!calls["slowest"].as_array().unwrap().is_empty(), "{calls}");

    // A limited token: its servers, calls and hits only.
    let (_, limited) = get(&serving, "/api/overview", Some(TEAM));
    assert_eq!(names(&limited["servers"], "name"), ["memory"], "{limited}");
    let memory_tools = limited["servers"][0]["tools"].as_u64().unwrap();
    assert!(memory_tools > 1, "{limited}");
    // A token limited to some tools counts those alone.
    let (_, reader) = get(&serving, "/api/overview", Some(READER));
    assert_eq!(names(&reader["servers"], "name"), ["memory"], "{reader}");
    assert_eq!(
        reader["servers"][0]["tools"], 1,
        "read_graph alone: {reader}"
    );
    let (_, calls) = get(&serving, "/api/calls", Some(TEAM));
    assert_eq!(names(&calls["tools"], "server"), ["memory"], "{calls}");
    assert!(
        calls["slowest"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["server"] == "memory"),
        "{calls}"
    );
    let (_, hits) = get(&serving, "/api/search?q=echo%20a%20message", Some(TEAM));
    assert!(
        names(&hits["hits"], "server").iter().all(|s| s == "memory"),
        "{hits}"
    );
    let (_, hits) = get(&serving, "/api/search?q=echo%20a%20message", Some(ADMIN));
    assert_eq!(hits["hits"][0]["name"], "everything__echo", "{hits}");
    assert!(hits["hits"][0]["words"].as_f64().is_some(), "{hits}");

    // The page in a browser.
    debian(&["chromium"], &["chromium"], "the live page's tests");
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("live-page.png");
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().unwrap();
    let plan = json!({
        "url": serving.at("/"), "tokens": [ADMIN, TEAM], "search": "echo a message",
        "screenshot": shot.display().to_string(), "profile": profile.path().display().to_string(),
    });
    let out = mcpw_test_support::bounded("node")
        .args([
            "--experimental-websocket",
            &servers().page_check(),
            &plan.to_string(),
        ])
        .output()
        .unwrap();
    let seen = crate::host::cli::json(&out);
    assert_eq!(seen["errors"], json!([]), "no script error in the page");
    let (admin, team) = (&seen["views"][0], &seen["views"][1]);
    assert_eq!(
        names(&admin["servers"], "name"),
        ["everything", "memory"],
        "{admin}"
    );
    let charts = admin["charts"].as_array().unwrap();
    let echo = charts
        .iter()
        .find(|c| c["tool"] == "everything/echo")
        .unwrap_or_else(|| panic!("{admin}"));
    assert!(echo["bars"].as_u64().unwrap() > 0, "bars drawn: {echo}");
    assert_eq!(admin["hits"][0]["name"], "everything__echo", "{admin}");
    assert_eq!(admin["hits"][0]["words"], true, "the words part drawn");
    assert_eq!(admin["stored"], true, "the token kept in the tab");
    // The limited token's view names no server of the other's.
    assert_eq!(names(&team["servers"], "name"), ["memory"], "{team}");
    let text = team["text"].as_str().unwrap();
    assert!(!text.contains("everything"), "{text}");
    // The screenshot, a PNG of the page.
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{}",
        png.len()
    );
}
