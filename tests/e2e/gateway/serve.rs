//! `mcpw serve` driven by clients nobody here wrote — the official TypeScript SDK
//! client and the MCP Inspector CLI — over stdio and Streamable HTTP, in every
//! exposure, with server-everything and a second real server behind it.

use crate::common::ConfigDirs;
use crate::servers::{MCPW, Serving, mcpw_in, servers};
use mcpw_test_support::{free_port, wait_until};
use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};

struct Setup {
    dirs: ConfigDirs,
    cancel_file: std::path::PathBuf,
}

fn setup(settings: Value) -> Setup {
    let s = servers();
    let dirs = ConfigDirs::new();
    let cancel_file = dirs.root.path().join("cancelled");
    let config = json!({
        "mcpServers": {
            "everything": {"command": "node", "args": [s.everything(), "stdio"]},
            "memory": {"command": "node", "args": [s.memory()], "env": {"MEMORY_FILE_PATH": dirs.root.path().join("memory.json").display().to_string()}},
            "slow": {"command": "node", "args": [s.misbehave(), "ok"], "env": {"CANCEL_FILE": cancel_file.display().to_string()}, "callTimeoutMs": 3000}
        },
        "settings": settings
    });
    dirs.user(&config.to_string());
    Setup { dirs, cancel_file }
}

/// Edits the user config of a setup.
fn edit_config(setup: &Setup, edit: impl FnOnce(&mut Value)) {
    let path = setup.dirs.home().join(".config/mcpw/mcp.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut c);
    setup.dirs.user(&c.to_string());
}

fn env(setup: &Setup) -> Value {
    crate::common::client_env(&setup.dirs.home())
}

fn stdio(setup: &Setup, exposure: &str) -> Value {
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", exposure], "env": env(setup)})
}

/// Runs the TypeScript SDK client with a plan; returns the step results.
pub(crate) fn client(connect: Value, steps: Value) -> Result<Vec<Value>, String> {
    client_plan(json!({"connect": connect, "steps": steps}))
}

/// Runs the TypeScript SDK client with a whole plan (see `client.mjs`).
pub(crate) fn client_plan(plan: Value) -> Result<Vec<Value>, String> {
    let out = mcpw_test_support::bounded("node")
        .arg(servers().client())
        .arg(plan.to_string())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "client output: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    match v.get("results") {
        Some(r) => Ok(r.as_array().unwrap().clone()),
        None => Err(v["error"].as_str().unwrap_or("").to_string()),
    }
}

pub(crate) fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

pub(crate) fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn mcp(args: Value) -> Value {
    json!({"op": "callTool", "name": "mcp", "arguments": args})
}

fn check_proxy(connect: Value) {
    let r = client(
        connect,
        json!([
            {"op": "listTools"},
            mcp(json!({})),
            mcp(json!({"search": "echo back input", "includeSchemas": false})),
            mcp(json!({"describe": "everything__get-sum"})),
            mcp(json!({"tool": "everything__echo", "args": {"message": "object args"}})),
            mcp(json!({"tool": "everything__echo", "args": "{\"message\": \"string args\"}"})),
            mcp(json!({"server": "memory"})),
            mcp(json!({"tool": "everything__nope"})),
            mcp(json!({"tool": "everything__echo", "args": "[1]"})),
            mcp(json!({"search": "([bad", "regex": true})),
            mcp(json!({"connect": "nope"})),
            {"op": "listPrompts"},
            mcp(json!({"exec": "await mcp.call('x')"})),
            mcp(json!({"search": "echo", "tool_name": "x"}))
        ]),
    )
    .unwrap();
    assert_eq!(names(&r[0]), vec!["mcp"]);
    // A key the tool does not take is refused, not taken for no key (status).
    assert_eq!(r[12]["isError"], true, "{}", r[12]);
    assert_eq!(r[12]["structuredContent"]["error"], "unknown_keys");
    assert!(
        text(&r[12]).contains("\"exec\"") && text(&r[12]).contains("\"search\""),
        "names what it does not take and what it takes: {}",
        text(&r[12])
    );
    assert_eq!(r[13]["structuredContent"]["unknown"], json!(["tool_name"]));
    let desc_tokens = r[0][0]["description"].as_str().unwrap().len() / 4
        + r[0][0]["inputSchema"].to_string().len() / 4;
    assert!(
        desc_tokens < 330,
        "the proxy tool stays small: ~{desc_tokens} tokens"
    );
    assert!(
        text(&r[1]).starts_with("MCP: 0/3 servers"),
        "{}",
        text(&r[1])
    );
    assert_eq!(r[1]["structuredContent"]["mode"], "status");
    assert_eq!(
        r[2]["structuredContent"]["matches"][0]["tool"], "everything__echo",
        "{}",
        r[2]
    );
    assert!(
        text(&r[3]).contains("Server: everything") && text(&r[3]).contains("Parameters:"),
        "{}",
        text(&r[3])
    );
    assert_eq!(text(&r[4]), "Echo: object args");
    assert_eq!(r[4]["structuredContent"]["mode"], "call");
    assert_eq!(text(&r[5]), "Echo: string args");
    assert!(text(&r[6]).starts_with("memory ("), "{}", text(&r[6]));
    assert_eq!(r[7]["structuredContent"]["error"], "tool_not_found");
    assert_eq!(r[7]["isError"], true);
    assert!(
        text(&r[7]).contains("Available tools") && text(&r[7]).contains("everything__echo"),
        "{}",
        text(&r[7])
    );
    assert_eq!(
        r[8]["structuredContent"]["error"], "call_failed",
        "{}",
        r[8]
    );
    assert_eq!(r[9]["structuredContent"]["error"], "invalid_pattern");
    assert_eq!(r[10]["structuredContent"]["error"], "not_found");
    let prompts: Vec<&str> = r[11]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        prompts.iter().any(|p| p.starts_with("everything__")),
        "upstream prompts are forwarded: {prompts:?}"
    );
}

#[test]
fn the_proxy_tool_modes_and_error_kinds() {
    let s = setup(json!({}));
    edit_config(&s, |c| {
        c["mcpServers"]["broken"] = json!({"command": "/nonexistent/mcpw-test-server"})
    });
    let r = client(
        stdio(&s, "proxy"),
        json!([
            mcp(json!({"tool": "broken__x"})),
            mcp(json!({"tool": "broken__x"})),
            mcp(json!({"server": "broken"})),
            mcp(json!({"search": "  "})),
            mcp(json!({"search": "echo sum", "includeSchemas": false, "limit": 20})),
            mcp(json!({"search": "read", "server": "memory", "includeSchemas": false})),
            mcp(json!({"search": "^everything__get-s", "regex": true, "includeSchemas": false})),
            mcp(json!({"search": "add two numbers"})),
            mcp(json!({"tool": "everything__get_sum", "args": {"a": 1, "b": 2}})),
            mcp(json!({"tool": "everything__get-sum", "args": {"a": "one"}})),
            mcp(json!({"connect": "memory"})),
            mcp(json!({"tool": "everything__echo", "args": {"message": "first"}, "search": "x", "connect": "memory"}))
        ]),
    )
    .unwrap();
    let kind = |i: usize| r[i]["structuredContent"]["error"].clone();
    let matches = |i: usize| -> Vec<String> {
        r[i]["structuredContent"]["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["tool"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kind(0), "server_unavailable", "{}", r[0]);
    assert!(
        text(&r[0]).contains("/nonexistent/mcpw-test-server"),
        "{}",
        text(&r[0])
    );
    assert_eq!(kind(1), "server_backoff", "{}", r[1]);
    assert!(text(&r[1]).contains("retry"), "{}", text(&r[1]));
    assert_eq!(kind(2), "not_connected", "{}", r[2]);
    assert_eq!(kind(3), "empty_query", "{}", r[3]);
    let found = matches(4);
    assert!(
        found.contains(&"everything__echo".into()) && found.contains(&"everything__get-sum".into()),
        "words are OR'd: {found:?}"
    );
    let found = matches(5);
    assert!(
        !found.is_empty() && found.iter().all(|m| m.starts_with("memory__")),
        "{found:?}"
    );
    let found = matches(6);
    assert!(
        !found.is_empty() && found.iter().all(|m| m.starts_with("everything__get-s")),
        "{found:?}"
    );
    assert!(
        text(&r[7]).contains("Parameters:") && text(&r[7]).contains("a (number) *required*"),
        "schemas by default: {}",
        text(&r[7])
    );
    assert!(
        text(&r[8]).contains('3'),
        "hyphens and underscores match: {}",
        r[8]
    );
    assert_eq!(kind(9), "tool_error", "{}", r[9]);
    assert!(
        text(&r[9]).contains("Expected parameters:"),
        "{}",
        text(&r[9])
    );
    assert_eq!(r[10]["isError"], false, "{}", r[10]);
    assert_eq!(r[10]["structuredContent"]["mode"], "connect");
    assert_eq!(
        r[11]["structuredContent"]["mode"], "call",
        "tool comes first"
    );
    assert_eq!(text(&r[11]), "Echo: first");
}

#[test]
fn proxy_over_stdio() {
    let s = setup(json!({}));
    check_proxy(stdio(&s, "proxy"));
}

#[test]
fn proxy_over_http() {
    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &["--exposure", "proxy"]);
    check_proxy(json!({"url": serving.url()}));
}

fn check_direct(connect: Value, s: &Setup) {
    let r = client(
        connect,
        json!([
            {"op": "listTools"},
            {"op": "callTool", "name": "everything__echo", "arguments": {"message": "direct"}},
            {"op": "callTool", "name": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 3}, "progress": true},
            {"op": "parallel", "steps": [
                {"op": "callTool", "name": "slow__hang"},
                {"op": "callTool", "name": "everything__echo", "arguments": {"message": "not blocked"}}
            ]},
            {"op": "cancelCall", "name": "slow__hang", "afterMs": 300},
            {"op": "listPrompts"},
            {"op": "getPrompt", "name": "everything__simple-prompt"},
            {"op": "callTool", "name": "slow__audio"}
        ]),
    )
    .unwrap();
    assert_eq!(
        r[7]["content"],
        json!([{"type": "audio", "data": "UklGRiQAAABXQVZF", "mimeType": "audio/wav"}]),
        "content passes through as the server sent it"
    );
    let tools = names(&r[0]);
    for t in ["everything__echo", "memory__read_graph", "slow__hang"] {
        assert!(tools.contains(&t.to_string()), "{t} in {tools:?}");
    }
    // A tool's output schema is listed as its server declared it.
    let read_graph = r[0]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "memory__read_graph")
        .unwrap();
    assert_eq!(
        read_graph["outputSchema"]["properties"]["entities"]["type"], "array",
        "{read_graph}"
    );
    assert_eq!(text(&r[1]), "Echo: direct");
    assert!(
        !r[2]["progress"].as_array().unwrap().is_empty(),
        "progress is forwarded: {}",
        r[2]
    );
    let (hang, echo) = (&r[3][0], &r[3][1]);
    assert_eq!(text(&echo["result"]), "Echo: not blocked");
    assert!(
        echo["elapsedMs"].as_u64().unwrap() < 2500,
        "a slow server does not block others: {echo}"
    );
    assert_eq!(
        hang["result"]["isError"], true,
        "the hang ends with the call timeout: {hang}"
    );
    assert!(text(&hang["result"]).contains("callTimeoutMs"), "{hang}");
    assert_eq!(r[4]["aborted"], true);
    wait_until(
        "the cancellation to reach the upstream server",
        Duration::from_secs(10),
        || std::fs::read_to_string(&s.cancel_file).is_ok_and(|c| c.contains("cancelled")),
    );
    assert!(
        r[6]["messages"].as_array().is_some_and(|m| !m.is_empty()),
        "{}",
        r[6]
    );
}

#[test]
fn direct_over_stdio() {
    let s = setup(json!({}));
    check_direct(stdio(&s, "direct"), &s);
}

#[test]
fn direct_over_http() {
    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &["--exposure", "direct"]);
    check_direct(json!({"url": serving.url()}), &s);
}

/// Lists every server once (`mcpw tools`), so that a gateway started later
/// connects nothing by itself and every list_changed it sends is one a test caused.
fn warm_cache(setup: &Setup) {
    let out = mcpw_in(&setup.dirs.home())
        .args(["tools", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check_tool_search(connect: Value) {
    let mut r = client(
        connect,
        json!([
            {"op": "listTools"},
            {"op": "markListChanged"},
            {"op": "callTool", "name": "ToolSearch", "arguments": {"query": "knowledge graph entities"}},
            {"op": "waitToolListChanged", "sinceMark": true},
            {"op": "listTools"},
            {"op": "callTool", "name": "ToolSearch", "arguments": {"query": "select:everything__get-sum"}},
            {"op": "callTool", "name": "everything__get-sum", "arguments": {"a": 20, "b": 22}}
        ]),
    )
    .unwrap();
    assert!(
        r[3]["changed"].as_u64() > r[1]["count"].as_u64(),
        "activation announced itself: {} then {}",
        r[1],
        r[3]
    );
    r.remove(1);
    let before = names(&r[0]);
    assert_eq!(
        before,
        vec!["ToolSearch", "everything__echo"],
        "ToolSearch plus the direct tool"
    );
    let description = r[0][0]["description"].as_str().unwrap();
    assert!(
        description.contains("everything") && description.contains("memory"),
        "servers are summarized: {description}"
    );
    let loaded = r[1]["structuredContent"]["loaded"].as_array().unwrap();
    assert!(
        !loaded.is_empty()
            && loaded
                .iter()
                .all(|n| n.as_str().unwrap().starts_with("memory__")),
        "{}",
        r[1]
    );
    let after = names(&r[3]);
    for n in loaded {
        assert!(
            after.contains(&n.as_str().unwrap().to_string()),
            "activated {n} is listed: {after:?}"
        );
    }
    assert_eq!(
        r[4]["structuredContent"]["loaded"],
        json!(["everything__get-sum"])
    );
    assert!(text(&r[5]).contains("42"), "{}", text(&r[5]));
}

#[test]
fn tool_search_over_stdio() {
    let s = setup(json!({}));
    warm_cache(&s);
    // With the default budget every deferred tool of these servers is named,
    // grouped by server (their descriptions would not fit).
    let r = client(stdio(&s, "tool-search"), json!([{"op": "listTools"}])).unwrap();
    let description = r[0][0]["description"].as_str().unwrap();
    assert!(
        description.contains("Tools by server:\n- everything__{echo, ")
            && description.contains("\n- memory__{create_entities, ")
            && description.contains(" read_graph, "),
        "{description}"
    );
    let mut connect = stdio(&s, "tool-search");
    connect["env"]["MCP_DIRECT_TOOLS"] = json!("everything/echo");
    check_tool_search(connect);
}

#[test]
fn tool_search_over_http_with_a_small_budget() {
    let s = setup(json!({"toolSearchBudget": 120, "exposure": "tool-search"}));
    edit_config(&s, |c| {
        c["mcpServers"]["everything"]["directTools"] = json!(["echo"])
    });
    warm_cache(&s);
    let serving = Serving::start(MCPW, &s.dirs.home(), &[]);
    let r = client(json!({"url": serving.url()}), json!([{"op": "listTools"}])).unwrap();
    let description = r[0][0]["description"].as_str().unwrap();
    assert!(
        description.len() / 4 <= 120 + 30,
        "the budget bounds the description: {} tokens",
        description.len() / 4
    );
    assert!(!description.contains("Available tools:"), "{description}");
    check_tool_search(json!({"url": serving.url()}));
    // Another agent's session starts from the direct tools alone.
    let r = client(json!({"url": serving.url()}), json!([{"op": "listTools"}])).unwrap();
    assert_eq!(names(&r[0]), vec!["ToolSearch", "everything__echo"]);
}

#[test]
fn http_beyond_loopback_needs_a_token() {
    let s = setup(json!({}));
    let port = free_port();
    let addr = format!("0.0.0.0:{port}");
    let mut cmd = mcpw_in(&s.dirs.home());
    cmd.args(["serve", "--http", &addr]);
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--token or MCPW_TOKEN"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cmd.args(["--token", " "]).output().unwrap();
    assert!(!out.status.success(), "an empty token is no token");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token is empty"));

    let serving = Serving::start(
        MCPW,
        &s.dirs.home(),
        &["--http", &addr, "--token", "s3cret"],
    );
    let url = serving.url();
    let status = |connect: Value| client(connect, json!([mcp(json!({}))]));
    let refused = |e: String| e.contains("401") || e.contains("a valid bearer token is required");
    assert!(
        refused(status(json!({"url": url})).unwrap_err()),
        "no token is refused"
    );
    assert!(
        refused(status(json!({"url": url, "token": "wrong"})).unwrap_err()),
        "a wrong token is refused"
    );
    let ok = status(json!({"url": url, "token": "s3cret"})).unwrap();
    assert!(text(&ok[0]).starts_with("MCP: "));
}

#[test]
fn http_rejects_foreign_origins() {
    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &[]);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let post = |origin: &str| {
        let out = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-X",
                "POST",
                &serving.url(),
            ])
            .args([
                "-H",
                "Content-Type: application/json",
                "-H",
                "Accept: application/json, text/event-stream",
            ])
            .args(["-H", &format!("Origin: {origin}"), "--data", body])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert_eq!(
        post("http://evil.example"),
        "403",
        "a foreign page cannot drive the gateway"
    );
    assert_eq!(post("http://localhost:1234"), "200");
}

fn inspector(target: &[&str], s: &Setup, method: &[&str]) -> Value {
    let mut cmd = mcpw_test_support::bounded("node");
    cmd.arg(servers().inspector())
        .arg("--cli")
        .args(target)
        .args(["--method"])
        .args(method);
    for (k, v) in env(s).as_object().unwrap() {
        cmd.env(k, v.as_str().unwrap());
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn mcp_inspector_cli_over_stdio_and_http() {
    let s = setup(json!({}));
    let mcpw = env!("CARGO_BIN_EXE_mcpw");
    for exposure in ["proxy", "tool-search", "direct", "code"] {
        // The same checks over stdio and over Streamable HTTP.
        let serving = Serving::start(MCPW, &s.dirs.home(), &["--exposure", exposure]);
        let url = serving.url();
        let stdio_target = [mcpw, "serve", "--exposure", exposure];
        let http_target = [url.as_str(), "--transport", "http"];
        for target in [&stdio_target[..], &http_target[..]] {
            let list = inspector(target, &s, &["tools/list"]);
            let tools = names(&list["tools"]);
            let (first, call): (&str, Vec<&str>) = match exposure {
                "proxy" => (
                    "mcp",
                    vec![
                        "--tool-name",
                        "mcp",
                        "--tool-arg",
                        "tool=everything__echo",
                        "args={\"message\":\"inspected\"}",
                    ],
                ),
                "tool-search" => (
                    "ToolSearch",
                    vec!["--tool-name", "ToolSearch", "--tool-arg", "query=echo"],
                ),
                "code" => (
                    "code",
                    vec![
                        "--tool-name",
                        "code",
                        "--tool-arg",
                        "code=return await tools.everything__echo({message: 'inspected'})",
                    ],
                ),
                _ => (
                    "everything__echo",
                    vec![
                        "--tool-name",
                        "everything__echo",
                        "--tool-arg",
                        "message=inspected",
                    ],
                ),
            };
            assert!(
                tools.contains(&first.to_string()),
                "{exposure} {target:?}: {tools:?}"
            );
            let mut args = vec!["tools/call"];
            args.extend(call);
            let answer = text(&inspector(target, &s, &args));
            let expected = if exposure == "tool-search" {
                "everything__echo"
            } else {
                "Echo: inspected"
            };
            assert!(answer.contains(expected), "{exposure} {target:?}: {answer}");
        }
    }
}

#[test]
fn call_statistics_are_captured_and_shown() {
    // No delayed flush during the test: only shutting down writes the file.
    let s = setup(json!({"captureStats": {"flushDelayMs": 600000}}));
    let r = client(
        stdio(&s, "direct"),
        json!([
            {"op": "callTool", "name": "everything__echo", "arguments": {"message": "one"}},
            {"op": "callTool", "name": "everything__echo", "arguments": {"message": "two"}},
            {"op": "callTool", "name": "everything__echo", "arguments": {}}
        ]),
    )
    .unwrap();
    assert_eq!(r[2]["isError"], true);
    // The client closed stdin: mcpw shuts down and flushes (it may still be
    // doing so when the client returns).
    let mut echo = None;
    wait_until("statistics to be written", Duration::from_secs(10), || {
        echo = stats(&s, "everything__echo").filter(|t| t["calls"] == 3);
        echo.is_some()
    });
    let echo = echo.unwrap();
    assert_eq!(
        (echo["errors"].as_u64(), echo["server"].as_str()),
        (Some(1), Some("everything"))
    );
    assert!(echo["bytes"].as_u64().unwrap() > 0 && echo["meanMs"].as_f64().unwrap() > 0.0);

    // Ended by a signal, it flushes too.
    let serving = Serving::start(MCPW, &s.dirs.home(), &["--exposure", "direct"]);
    client(
        json!({"url": serving.url()}),
        json!([{"op": "callTool", "name": "everything__get-sum", "arguments": {"a": 1, "b": 2}}]),
    )
    .unwrap();
    assert_eq!(stats(&s, "everything__get-sum"), None, "not flushed yet");
    drop(serving); // SIGTERM, and waits for the exit
    assert_eq!(stats(&s, "everything__get-sum").unwrap()["calls"], 1);
}

#[test]
fn a_scripts_calls_are_counted_as_calls_of_their_tools() {
    let s = setup(json!({"captureStats": {"flushDelayMs": 600000}}));
    let code = "await tools.everything__echo({message: 'a'}); \
                try { await tools.everything__echo({}) } catch (e) {} return 2";
    let r = client(
        stdio(&s, "proxy"),
        json!([{"op": "callTool", "name": "mcp", "arguments": {"code": code}}]),
    )
    .unwrap();
    assert_eq!(r[0]["structuredContent"]["value"], 2, "{}", r[0]);
    let mut echo = None;
    wait_until("statistics to be written", Duration::from_secs(10), || {
        echo = stats(&s, "everything__echo").filter(|t| t["calls"] == 2);
        echo.is_some()
    });
    assert_eq!(
        echo.unwrap()["errors"],
        1,
        "the call without its argument failed"
    );
}

/// The recorded statistics of one tool, per `mcpw stats --json`.
fn stats(s: &Setup, tool: &str) -> Option<Value> {
    let out = mcpw_in(&s.dirs.home())
        .args(["stats", "--json"])
        .output()
        .unwrap();
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    out["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == tool).cloned())
}

/// mcpw behind mcpw: rmcp on both sides speaks the stateless 2026-07-28
/// revision (`server/discover`, no `initialize`) over stdio and HTTP.
#[tokio::test(flavor = "multi_thread")]
async fn mcpw_behind_mcpw_speaks_the_stateless_revision() {
    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &["--exposure", "direct"]);
    let outer = ConfigDirs::new();
    let host = crate::common::host(
        &outer,
        json!({"overHttp": {"url": serving.url()}, "overStdio": stdio(&s, "direct")}),
        |_| {},
    )
    .await;
    for name in ["overHttp", "overStdio"] {
        let out = host
            .call(
                &format!("{name}__everything__echo"),
                json!({"message": name}).as_object().cloned(),
            )
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&out.content).unwrap()[0]["text"],
            format!("Echo: {name}")
        );
        let status = host.connect(name).await.unwrap();
        assert_eq!(
            status.protocol_version.as_deref(),
            Some("2026-07-28"),
            "{name}"
        );
    }
    host.shutdown().await;
}

#[test]
fn a_call_does_not_wait_for_other_servers_to_start() {
    let s = setup(json!({}));
    // Nothing cached, and one server that takes a minute to start.
    edit_config(&s, |c| {
        c["mcpServers"]["sleepy"] = json!({"command": "node", "args": [servers().misbehave(), "slow-start"],
            "env": {"DELAY_MS": "60000"}, "startupTimeoutMs": 60000})
    });
    for exposure in ["proxy", "direct"] {
        let call = if exposure == "proxy" {
            mcp(json!({"tool": "everything__echo", "args": {"message": "now"}}))
        } else {
            json!({"op": "callTool", "name": "everything__echo", "arguments": {"message": "now"}})
        };
        let r = client(
            stdio(&s, exposure),
            json!([{"op": "parallel", "steps": [call]}]),
        )
        .unwrap();
        let answer = &r[0][0];
        assert!(text(&answer["result"]).contains("Echo: now"), "{answer}");
        // Waiting for every server would take sleepy's whole minute.
        assert!(answer["elapsedMs"].as_u64().unwrap() < 30_000, "{answer}");
    }
}

#[test]
fn serve_follows_config_edits() {
    let s = setup(json!({}));
    warm_cache(&s);
    let serving = Serving::start(MCPW, &s.dirs.home(), &["--exposure", "direct"]);
    let list =
        || names(&client(json!({"url": serving.url()}), json!([{"op": "listTools"}])).unwrap()[0]);
    assert!(!list().iter().any(|t| t.starts_with("extra__")));
    edit_config(&s, |c| {
        c["mcpServers"]["extra"] =
            json!({"command": "node", "args": [servers().misbehave(), "ok"]});
        c["mcpServers"].as_object_mut().unwrap().remove("memory");
    });
    // The gateway checks its config files every few seconds; nothing signals the test.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let tools = list();
        if tools.contains(&"extra__echo".to_string()) {
            assert!(
                !tools.iter().any(|t| t.starts_with("memory__")),
                "{tools:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the edit was not picked up: {tools:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let r = client(
        json!({"url": serving.url()}),
        json!([{"op": "callTool", "name": "extra__echo", "arguments": {"message": "new"}}]),
    )
    .unwrap();
    assert_eq!(text(&r[0]), "Echo: new");
}

async fn call_mcp(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    args: Value,
) -> Value {
    let request = rmcp::model::CallToolRequestParams::new("mcp")
        .with_arguments(args.as_object().cloned().unwrap());
    serde_json::to_value(client.call_tool(request).await.unwrap()).unwrap()
}

/// 50 HTTP sessions search and call at the same time; each gets its own answers.
#[test]
fn fifty_sessions_at_once_never_get_each_others_answers() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;

    let setup = setup(json!({}));
    let serving = Serving::start(MCPW, &setup.dirs.home(), &["--exposure", "proxy"]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let url = serving.url();
    rt.block_on(async move {
        // The tools every session will search for, one each in turn.
        let first = ().serve(StreamableHttpClientTransport::from_uri(url.clone())).await.unwrap();
        let listed = call_mcp(&first, json!({"server": "everything"})).await;
        let tools: Vec<String> = listed["structuredContent"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect();
        assert!(tools.len() >= 5, "{listed}");
        first.cancel().await.unwrap();

        let sessions: Vec<_> = (0..50)
            .map(|i| {
                let (url, tools) = (url.clone(), tools.clone());
                tokio::spawn(async move {
                    let client =
                        ().serve(StreamableHttpClientTransport::from_uri(url))
                            .await
                            .unwrap();
                    for round in 0..3 {
                        let wanted = &tools[(i + round) % tools.len()];
                        let found =
                            call_mcp(&client, json!({"search": wanted, "includeSchemas": false}))
                                .await;
                        let matches: Vec<&str> = found["structuredContent"]["matches"]
                            .as_array()
                            .unwrap_or_else(|| panic!("session {i}: {found}"))
                            .iter()
                            .map(|m| m["tool"].as_str().unwrap())
                            .collect();
                        assert!(
                            matches.contains(&wanted.as_str()),
                            "session {i} searched {wanted}, got {matches:?}"
                        );
                        let message = format!("session {i} round {round}");
                        let echoed = call_mcp(
                            &client,
                            json!({"tool": "everything__echo", "args": {"message": message}}),
                        )
                        .await;
                        assert_eq!(text(&echoed), format!("Echo: {message}"), "session {i}");
                    }
                    client.cancel().await.unwrap();
                })
            })
            .collect();
        for s in sessions {
            s.await.unwrap();
        }
    });
    drop(serving);
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// An answer to a raw POST: the HTTP status, the session it opened, the
/// JSON-RPC messages in it (a JSON body, or the `data:` lines of an event
/// stream) and the body as text.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) session: Option<String>,
    pub(crate) messages: Vec<Value>,
    pub(crate) body: String,
}

/// POSTs `body` to `url` as an MCP client would, in `session` if given.
pub(crate) async fn post_raw(url: &str, session: Option<&str>, body: &str) -> Answer {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(id) = session {
        request = request
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", "2025-06-18");
    }
    let response = tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .expect("an answer within 30 s")
        .unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = tokio::time::timeout(Duration::from_secs(30), response.text())
        .await
        .expect("the whole answer within 30 s")
        .unwrap();
    let messages = match serde_json::from_str::<Value>(&body) {
        Ok(v) => vec![v],
        Err(_) => body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    };
    Answer {
        status,
        session,
        messages,
        body,
    }
}

/// Opens a session with raw POSTs: `initialize`, then `notifications/initialized`.
pub(crate) async fn raw_session(url: &str) -> String {
    let opened = post_raw(url, None, INITIALIZE).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let session = opened.session.expect("a session id");
    let initialized = post_raw(
        url,
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(initialized.status, 202, "{}", initialized.body);
    session
}

/// `--max-sessions` caps the open sessions: one more is refused with an error
/// that says the limit and how to raise it, and closing one makes room.
#[tokio::test(flavor = "multi_thread")]
async fn http_sessions_are_capped_and_closing_one_makes_room() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;

    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &["--max-sessions", "3"]);
    let url = serving.url();
    let connect = || ().serve(StreamableHttpClientTransport::from_uri(url.clone()));
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(connect().await.expect("a session under the cap"));
    }
    let refused = connect().await.expect_err("a fourth session is refused");
    let said = refused.to_string();
    assert!(
        said.contains("3 sessions") && said.contains("--max-sessions"),
        "{said}"
    );

    let raw = post_raw(&url, None, INITIALIZE).await;
    assert_eq!(raw.status, 503, "{}", raw.body);
    assert!(raw.session.is_none());
    let error = &raw.messages[0];
    assert_eq!(error["jsonrpc"], "2.0", "{error}");
    assert_eq!(
        error["id"], 1,
        "the refusal answers the initialize: {error}"
    );
    assert_eq!(error["error"]["code"], -32000, "{error}");
    assert_eq!(error["error"]["data"]["maxSessions"], 3, "{error}");
    // Requests in the open sessions still work.
    let status = call_mcp(&open[0], json!({})).await;
    assert!(text(&status).starts_with("MCP: "), "{status}");

    // A client that ends its session (DELETE) makes room for another.
    open.pop().unwrap().cancel().await.unwrap();
    let again = connect().await.expect("a session once one closed");
    assert!(connect().await.is_err(), "the cap holds again");
    again.cancel().await.unwrap();
    for c in open {
        c.cancel().await.unwrap();
    }

    // Initializes arriving at once never open more than the cap, and every
    // one refused gets the same clear answer.
    let answers = futures::future::join_all((0..8).map(|_| post_raw(&url, None, INITIALIZE))).await;
    let opened: Vec<&str> = answers
        .iter()
        .filter_map(|a| a.session.as_deref())
        .collect();
    assert_eq!(
        opened.len(),
        3,
        "{:?}",
        answers.iter().map(|a| a.status).collect::<Vec<_>>()
    );
    for a in answers.iter().filter(|a| a.session.is_none()) {
        assert_eq!(a.status, 503, "{}", a.body);
        assert_eq!(a.messages[0]["error"]["code"], -32000, "{}", a.body);
    }
    for id in opened {
        let deleted = reqwest::Client::new()
            .delete(&url)
            .header("Mcp-Session-Id", id)
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status().as_u16(), 202);
    }
    assert_eq!(post_raw(&url, None, INITIALIZE).await.status, 200);
}

/// A known method with params of the wrong shape is invalid params (-32602),
/// not an unknown method.
#[tokio::test(flavor = "multi_thread")]
async fn http_invalid_params_are_invalid_params() {
    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &[]);
    let url = serving.url();
    let session = raw_session(&url).await;
    let call = |id: u64, params: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    };
    let bad = post_raw(
        &url,
        Some(&session),
        &call(2, json!({"name": "mcp", "arguments": "not an object"})),
    )
    .await;
    let error = bad
        .messages
        .iter()
        .find(|m| m["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to 2: {}", bad.body));
    assert_eq!(error["error"]["code"], -32602, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/call"),
        "{error}"
    );
    let unknown = post_raw(
        &url,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}"#,
    )
    .await;
    let error = unknown
        .messages
        .iter()
        .find(|m| m["id"] == 3)
        .unwrap_or_else(|| panic!("no answer to 3: {}", unknown.body));
    assert_eq!(error["error"]["code"], -32601, "{error}");
    // The session is still usable.
    let good = post_raw(&url, Some(&session), &call(4, json!({"name": "mcp"}))).await;
    let result = good
        .messages
        .iter()
        .find(|m| m["id"] == 4)
        .unwrap_or_else(|| panic!("no answer to 4: {}", good.body));
    assert!(text(&result["result"]).starts_with("MCP: "), "{result}");
}

/// A session idle past `--session-idle` is closed: its id is no longer
/// known, and its slot is free for another.
#[tokio::test(flavor = "multi_thread")]
async fn http_an_idle_session_is_closed_and_its_slot_freed() {
    let s = setup(json!({}));
    let serving = Serving::start(
        MCPW,
        &s.dirs.home(),
        &["--max-sessions", "1", "--session-idle", "1"],
    );
    let url = serving.url();
    let first = raw_session(&url).await;
    assert_eq!(
        post_raw(&url, None, INITIALIZE).await.status,
        503,
        "the one slot is taken"
    );
    let started = std::time::Instant::now();
    loop {
        let again = post_raw(&url, None, INITIALIZE).await;
        if again.status == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the idle session never expired: {}",
            again.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let gone = post_raw(
        &url,
        Some(&first),
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}"#,
    )
    .await;
    assert_eq!(gone.status, 404, "{}", gone.body);
}

/// Only idleness closes a session: one that keeps working past
/// `--session-idle` goes on, while one left idle beside it is closed.
#[tokio::test(flavor = "multi_thread")]
async fn http_an_active_session_outlives_the_idle_timeout_beside_an_idle_one() {
    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &["--session-idle", "1"]);
    let url = serving.url();
    let (active, idle) = (raw_session(&url).await, raw_session(&url).await);
    let list = r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}"#;
    let started = std::time::Instant::now();
    let (mut idle_gone, mut probed) = (false, started);
    // Four idle timeouts of work, a request every 300 ms; the idle session
    // is looked at seldom (a look is activity too).
    while started.elapsed() < Duration::from_secs(4) || !idle_gone {
        let worked = post_raw(&url, Some(&active), list).await;
        assert_eq!(
            worked.status, 200,
            "the active session was closed: {}",
            worked.body
        );
        if !idle_gone && probed.elapsed() > Duration::from_millis(2500) {
            idle_gone = post_raw(&url, Some(&idle), list).await.status == 404;
            probed = std::time::Instant::now();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the idle session never expired"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A body over 4 MiB is refused with 413 and a JSON-RPC error before it is
/// read whole; the session it was sent in goes on. One just under the cap is
/// taken.
#[tokio::test(flavor = "multi_thread")]
async fn http_a_body_over_the_cap_is_refused_and_the_session_lives() {
    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &[]);
    let url = serving.url();
    let session = raw_session(&url).await;
    let call = |id: u64, padding: usize| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "mcp", "arguments": {"pad": "x".repeat(padding)}}})
        .to_string()
    };
    let cap = 4 << 20;
    let base = call(1, 0).len();
    let over = post_raw(&url, Some(&session), &call(1, cap - base + 1)).await;
    assert_eq!(over.status, 413, "{}", over.body);
    assert!(over.body.contains("Payload Too Large"), "{}", over.body);
    let under = post_raw(&url, Some(&session), &call(2, cap - base)).await;
    assert_eq!(
        under.status,
        200,
        "exactly the cap is taken: {}",
        &under.body[..200.min(under.body.len())]
    );
    let good = post_raw(&url, Some(&session), &call(3, 4)).await;
    assert!(
        good.messages
            .iter()
            .any(|m| m["id"] == 3 && m.get("result").is_some()),
        "the session goes on: {}",
        good.body
    );
}

/// A body that is not JSON is a parse error, a batch an invalid request: HTTP
/// 400 with a JSON-RPC error either way, in a session or before one.
#[tokio::test(flavor = "multi_thread")]
async fn http_malformed_bodies_get_json_rpc_errors() {
    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &[]);
    let url = serving.url();
    let session = raw_session(&url).await;
    for in_session in [None, Some(session.as_str())] {
        for (body, code, says) in [
            ("{not json", -32700, "Parse error"),
            ("", -32700, "Parse error"),
            ("[]", -32600, "batch"),
            (
                r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"ping"}]"#,
                -32600,
                "batch",
            ),
            ("42", -32600, "object"),
            (r#"{"jsonrpc":"2.0","id":9}"#, -32600, "JSON-RPC"),
        ] {
            let a = post_raw(&url, in_session, body).await;
            assert_eq!(a.status, 400, "{body:?} in {in_session:?}: {}", a.body);
            let error = &a.messages[0];
            assert_eq!(error["jsonrpc"], "2.0", "{body:?}: {error}");
            assert_eq!(error["error"]["code"], code, "{body:?}: {error}");
            let message = error["error"]["message"].as_str().unwrap();
            assert!(message.contains(says), "{body:?}: {message}");
            let id = if body.contains(r#""id":9"#) {
                json!(9)
            } else {
                Value::Null
            };
            assert_eq!(error["id"], id, "{body:?}: {error}");
        }
    }
    // The session survives, and a wrong Content-Type is still 415.
    let ping = post_raw(
        &url,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#,
    )
    .await;
    assert!(ping.messages.iter().any(|m| m["id"] == 10), "{}", ping.body);
    let text_plain = reqwest::Client::new()
        .post(&url)
        .header("Content-Type", "text/plain")
        .header("Accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .unwrap();
    assert_eq!(text_plain.status().as_u16(), 415);
}

/// On loopback without tokens, every route refuses a request made to
/// another name (`Host`) or from a page elsewhere (`Origin`), as `/mcp`
/// does: a page that rebinds its name to 127.0.0.1 reads neither the live
/// page's data nor the metrics.
#[tokio::test(flavor = "multi_thread")]
async fn http_routes_refuse_foreign_host_and_origin_headers() {
    let s = setup(json!({}));
    let serving = Serving::start(MCPW, &s.dirs.home(), &[]);
    let port = serving
        .url()
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let client = reqwest::Client::new();
    let get = |path: &str, host: Option<String>, origin: Option<&str>| {
        let mut r = client.get(serving.at(path));
        if let Some(h) = host {
            r = r.header("Host", h);
        }
        if let Some(o) = origin {
            r = r.header("Origin", o);
        }
        r.send()
    };
    for path in ["/api/overview", "/api/calls", "/metrics"] {
        let ours = get(path, None, None).await.unwrap().status();
        assert_eq!(ours, 200, "{path}");
        let same = get(
            path,
            Some(format!("localhost:{port}")),
            Some("http://localhost:1"),
        )
        .await
        .unwrap();
        assert_eq!(same.status(), 200, "{path}");
        let rebound = get(path, Some(format!("evil.example:{port}")), None)
            .await
            .unwrap();
        assert_eq!(rebound.status(), 403, "{path} with a foreign Host");
        let elsewhere = get(path, None, Some("http://evil.example")).await.unwrap();
        assert_eq!(elsewhere.status(), 403, "{path} with a foreign Origin");
    }
}
