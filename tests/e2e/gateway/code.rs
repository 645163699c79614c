//! Code mode through real clients: scripts over server-filesystem and
//! server-memory, hostile scripts, and cancellation, driven by the official
//! TypeScript SDK client in the proxy and the code exposure.

use super::serve::{client, client_plan, names, text};
use crate::common::ConfigDirs;
use crate::servers::{MCPW, servers};
use serde_json::{Value, json};
use std::path::PathBuf;

struct Setup {
    dirs: ConfigDirs,
    data: PathBuf,
    cancel_file: PathBuf,
}

/// A filesystem server over a folder of five files of known sizes, a
/// memory server, server-everything and a server that hangs.
fn setup() -> Setup {
    let s = servers();
    let dirs = ConfigDirs::new();
    let data = dirs.root.path().join("data");
    std::fs::create_dir_all(data.join("sub")).unwrap();
    for (i, size) in [300, 5000, 120, 2600, 900].into_iter().enumerate() {
        std::fs::write(data.join(format!("f{i}.txt")), "x".repeat(size)).unwrap();
    }
    std::fs::write(data.join("sub/a.md"), "hello").unwrap();
    let cancel_file = dirs.root.path().join("cancelled");
    let config = json!({
        "mcpServers": {
            "fs": {"command": "node", "args": [s.filesystem(), data.display().to_string()]},
            "memory": {"command": "node", "args": [s.memory()], "env": {"MEMORY_FILE_PATH": dirs.root.path().join("memory.json").display().to_string()}},
            "everything": {"command": "node", "args": [s.everything(), "stdio"]},
            "slow": {"command": "node", "args": [s.misbehave(), "ok"], "env": {"CANCEL_FILE": cancel_file.display().to_string()}}
        }
    });
    dirs.user(&config.to_string());
    Setup {
        dirs,
        data,
        cancel_file,
    }
}

fn connect(setup: &Setup, exposure: &str) -> Value {
    let env = crate::common::client_env(&setup.dirs.home());
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", exposure], "env": env})
}

/// A step that runs `code` with `limits`, through the exposure's tool.
fn script(exposure: &str, code: &str, limits: Value) -> Value {
    let tool = if exposure == "code" { "code" } else { "mcp" };
    json!({"op": "callTool", "name": tool, "arguments": {"code": code, "limits": limits}})
}

/// Lists the tree, finds the three largest files, stores them as memory
/// entities and reads the graph back: only the summary comes back.
const LARGEST_FILES: &str = r#"
const dir = DATA;
const listing = (await tools.fs__list_directory({path: dir})).content;
const files = listing.split("\n").filter((l) => l.startsWith("[FILE]")).map((l) => l.slice(7));
const sized = await Promise.all(files.map(async (f) => {
  const info = (await tools.fs__get_file_info({path: `${dir}/${f}`})).content;
  return {f, size: Number(/size: (\d+)/.exec(info)[1])};
}));
sized.sort((a, b) => b.size - a.size);
const top = sized.slice(0, 3);
await tools.memory__create_entities({entities: top.map((t) => ({name: t.f, entityType: "file", observations: [`${t.size} bytes`]}))});
const graph = await tools.memory__read_graph({});
const hits = await mcp.search("read a text file", {limit: 3});
console.log(`${files.length} files`);
return {top: top.map((t) => t.f), entities: graph.entities.map((e) => e.name).sort(),
        found: hits.some((h) => h.name === "fs__read_text_file"),
        declaration: mcp.describe("fs__read_text_file")};
"#;

#[test]
fn a_script_over_filesystem_and_memory_returns_only_its_summary() {
    for exposure in ["proxy", "code"] {
        let s = setup();
        let code = LARGEST_FILES.replace("DATA", &json!(s.data.display().to_string()).to_string());
        let r = client(
            connect(&s, exposure),
            json!([{"op": "listTools"}, script(exposure, &code, json!({}))]),
        )
        .unwrap();
        let result = &r[1];
        assert_eq!(result["isError"], false, "{exposure}: {result}");
        let value = &result["structuredContent"]["value"];
        assert_eq!(
            value["top"],
            json!(["f1.txt", "f3.txt", "f4.txt"]),
            "{exposure}: {value}"
        );
        assert_eq!(
            value["entities"],
            json!(["f1.txt", "f3.txt", "f4.txt"]),
            "{exposure}"
        );
        assert_eq!(value["found"], true, "search finds tools: {value}");
        let declaration = value["declaration"].as_str().unwrap();
        assert!(
            declaration.contains("tools.fs__read_text_file(args: { path: string;"),
            "a TypeScript declaration: {declaration}"
        );
        assert_eq!(result["structuredContent"]["logs"], json!(["5 files"]));
        assert!(text(result).ends_with("Log:\n5 files"), "{}", text(result));
        let calls = result["structuredContent"]["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1 + 5 + 2, "{calls:?}");
        let memory = std::fs::read_to_string(s.dirs.root.path().join("memory.json")).unwrap();
        assert!(
            memory.contains("f1.txt"),
            "the entities were written: {memory}"
        );
        if exposure == "code" {
            assert_eq!(names(&r[0]), vec!["code"]);
            let description = r[0][0]["description"].as_str().unwrap();
            assert!(
                description.len() / 4 <= 600,
                "{} tokens",
                description.len() / 4
            );
            assert!(
                description.contains("await tools.<name>(args)"),
                "{description}"
            );
        }
    }
}

#[test]
fn hostile_scripts_each_get_their_own_error_and_the_session_goes_on() {
    let s = setup();
    let echo = "tools.everything__echo";
    let hostile: [(&str, Value, &str); 8] = [
        (
            "while (true) {}",
            json!({"cpuMs": 300}),
            "exceeded its deadline of 300 ms",
        ),
        (
            "const a = []; while (true) a.push('x'.repeat(1 << 20) + a.length)",
            json!({"memoryMb": 32}),
            "exceeded its memory limit of 32 MiB",
        ),
        (
            "function f(n) { return f(n + 1) } return f(0)",
            json!({}),
            "maximum number of recursive calls",
        ),
        (
            "return 'x'.repeat(2 << 20)",
            json!({}),
            "exceeded its output limit of 1024 KiB",
        ),
        (
            &format!(
                "await Promise.all(Array.from({{length: 1000}}, (_, i) => {echo}({{message: 'm' + i}})))"
            ),
            json!({}),
            "exceeded its limit of 100 calls",
        ),
        (
            "await tools.nope__nothing({})",
            json!({}),
            "tool \"nope__nothing\" not found",
        ),
        ("return (", json!({}), "syntax error"),
        (
            "tools.everything__nope({}); return 1",
            json!({}),
            "unhandled rejection",
        ),
    ];
    let mut steps: Vec<Value> = hostile
        .iter()
        .map(|(c, l, _)| script("proxy", c, l.clone()))
        .collect();
    steps.push(script(
        "proxy",
        &format!("return await Promise.all([1, 2, 3].map((i) => {echo}({{message: 'm' + i}})))"),
        json!({}),
    ));
    let r = client(connect(&s, "proxy"), Value::Array(steps)).unwrap();
    for (i, (code, _, expected)) in hostile.iter().enumerate() {
        assert_eq!(r[i]["isError"], true, "{code}: {}", r[i]);
        assert!(text(&r[i]).contains(expected), "{code}: {}", text(&r[i]));
    }
    assert!(text(&r[4]).contains("- and 90 more"), "{}", text(&r[4]));
    assert_eq!(r[8]["isError"], false, "the session goes on: {}", r[8]);
    assert_eq!(
        r[8]["structuredContent"]["value"],
        json!(["Echo: m1", "Echo: m2", "Echo: m3"])
    );
}

/// Gets server-everything's image and a gzip file as an embedded resource:
/// the script sees references, not bytes.
const BINARY: &str = r#"
const img = (await tools["everything__get-tiny-image"]({})).find((b) => b.type === "image");
const gz = (await tools["everything__gzip-file-as-resource"]({name: "a.gz",
  data: "data:text/plain;base64," + "aGVsbG8gd29ybGQK".repeat(64), outputType: "resource"}))
  .find((b) => b.type === "resource");
return {img, gz};
"#;

#[test]
fn binary_content_reaches_a_script_as_references_the_session_reads_back() {
    for exposure in ["proxy", "code"] {
        let s = setup();
        let mut steps = vec![script(exposure, BINARY, json!({}))];
        steps.push(json!({"op": "readResource", "linkOf": 0, "link": 0}));
        steps.push(json!({"op": "readResource", "linkOf": 0, "link": 1}));
        steps.push(json!({"op": "readResource", "uri": "mcpw://results/0123456789abcdef0"}));
        if exposure == "proxy" {
            let direct = json!({"tool": "everything__get-tiny-image"});
            steps.push(json!({"op": "callTool", "name": "mcp", "arguments": direct}));
        }
        let r = client(connect(&s, exposure), Value::Array(steps)).unwrap();
        let value = &r[0]["structuredContent"]["value"];
        let (img, gz) = (&value["img"], &value["gz"]);
        assert_eq!(img["mimeType"], "image/png", "{exposure}: {value}");
        assert!(img.get("data").is_none(), "no bytes in the script: {img}");
        assert_eq!(gz["mimeType"], "application/gzip", "{gz}");
        assert!(gz["source"].as_str().unwrap().ends_with("a.gz"), "{gz}");
        let links: Vec<&Value> = r[0]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["type"] == "resource_link")
            .collect();
        assert_eq!(
            links.len(),
            2,
            "the value's references are linked: {}",
            r[0]
        );
        assert_eq!(links[0]["uri"], img["uri"]);
        assert_eq!(links[0]["size"], img["bytes"]);
        for (read, seen) in [(&r[1], img), (&r[2], gz)] {
            assert_eq!(read["uri"], seen["uri"], "{read}");
            let blob = read["contents"][0]["blob"]
                .as_str()
                .unwrap_or_else(|| panic!("{read}"));
            let padding = blob.bytes().rev().take_while(|&b| b == b'=').count();
            assert_eq!(
                json!(blob.len() / 4 * 3 - padding),
                seen["bytes"],
                "{exposure}: the whole of it"
            );
            assert_eq!(read["contents"][0]["mimeType"], seen["mimeType"]);
        }
        assert!(
            r[2]["contents"][0]["blob"]
                .as_str()
                .unwrap()
                .starts_with("H4sI"),
            "gzip"
        );
        assert!(
            r[3]["error"].as_str().unwrap().contains("not found"),
            "an unknown id: {}",
            r[3]
        );
        if exposure == "proxy" {
            let direct = r[4]["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "image")
                .unwrap_or_else(|| panic!("{}", r[4]));
            assert_eq!(
                r[1]["contents"][0]["blob"], direct["data"],
                "the same bytes"
            );
        }
    }
}

#[test]
fn cancelling_a_script_stops_its_calls_and_the_session_goes_on() {
    let s = setup();
    let r = client(
        connect(&s, "code"),
        json!([
            // The first script loads the guest; the second is cancelled once
            // its call runs on the server.
            script("code", "return 0", json!({})),
            {"op": "cancelCall", "name": "code", "arguments": {"code": "await tools.slow__hang({})"},
             "whenFile": s.cancel_file.display().to_string(), "contains": "hanging"},
            // The session stays open until the server has the cancellation:
            // closing it would stop the server first.
            {"op": "waitForFile", "file": s.cancel_file.display().to_string(), "contains": "cancelled"},
            script("code", "return 1", json!({}))
        ]),
    )
    .unwrap();
    assert_eq!(r[1]["aborted"], true, "{}", r[1]);
    assert_eq!(
        r[2]["found"], true,
        "the cancellation reached the server: {}",
        r[2]
    );
    assert_eq!(r[3]["structuredContent"]["value"], 1, "{}", r[3]);
}

#[test]
fn code_mode_beside_tool_search_lists_the_code_tool_and_reports_progress() {
    let s = setup();
    s.dirs.edit_user(|config| {
        config["settings"] = json!({"codeMode": true});
    });
    let three = "const out = []; for (const m of ['a', 'b', 'c']) out.push(await tools.everything__echo({message: m})); return out";
    let r = client(
        connect(&s, "tool-search"),
        json!([
            {"op": "listTools"},
            {"op": "callTool", "name": "code", "arguments": {"code": three}, "progress": true}
        ]),
    )
    .unwrap();
    let tools = names(&r[0]);
    assert!(
        tools.contains(&"ToolSearch".to_string()) && tools.contains(&"code".to_string()),
        "{tools:?}"
    );
    assert_eq!(
        r[1]["structuredContent"]["value"],
        json!(["Echo: a", "Echo: b", "Echo: c"]),
        "{}",
        r[1]
    );
    let progress = r[1]["progress"].as_array().unwrap();
    let steps: Vec<(u64, &str)> = progress
        .iter()
        .map(|p| {
            (
                p["progress"].as_u64().unwrap(),
                p["message"].as_str().unwrap(),
            )
        })
        .collect();
    // One step per finished call, each sent before the script goes on.
    let expected = [
        (1, "everything__echo: done"),
        (2, "everything__echo: done"),
        (3, "everything__echo: done"),
    ];
    assert_eq!(steps, expected, "one step per finished call: {progress:?}");
}

/// The token of `ci`, which sees memory only.
const CI: &str = "ci-token-0123456789";
/// The token of `admin`, which sees every server.
const ADMIN: &str = "admin-token-0123456789";

/// A script's value through an rmcp client over Streamable HTTP.
async fn run_over_http(url: &str, token: &str, code: &str) -> Value {
    let client = http_client(url, token).await;
    let Value::Object(args) = json!({"code": code}) else {
        unreachable!()
    };
    let request = rmcp::model::CallToolRequestParams::new("code").with_arguments(args);
    let result = client.call_tool(request).await.unwrap();
    let _ = client.cancel().await;
    serde_json::to_value(result).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_reach_only_their_tokens_servers_and_sessions_never_mix() {
    let s = setup();
    s.dirs.edit_user(|config| {
        config["serve"] = json!({"tokens": [
            {"name": "ci", "token": CI, "servers": ["memory"]},
            {"name": "admin", "token": ADMIN}
        ]});
    });
    let serving = crate::servers::Serving::start(MCPW, &s.dirs.home(), &["--exposure", "code"]);
    let url = serving.url();

    // A server outside the token's scope answers as unknown, in calls and in search.
    let scoped = run_over_http(&url, CI, "const hits = await mcp.search('echo create entities', {limit: 50}); \
        let error; try { await tools.everything__echo({message: 'x'}) } catch (e) { error = e.message } \
        return {servers: [...new Set(hits.map((h) => h.server))], error}").await;
    let value = &scoped["structuredContent"]["value"];
    assert_eq!(value["servers"], json!(["memory"]), "{scoped}");
    assert!(
        value["error"].as_str().unwrap().contains("not found"),
        "{scoped}"
    );

    // Two sessions at once, each with its own calls.
    let script = |mark: &str| {
        format!(
            "const out = []; for (let i = 0; i < 20; i++) out.push(await tools.everything__echo({{message: '{mark}' + i}})); return out"
        )
    };
    let (script_a, script_b) = (script("a"), script("b"));
    let (a, b) = tokio::join!(
        run_over_http(&url, ADMIN, &script_a),
        run_over_http(&url, ADMIN, &script_b)
    );
    for (mark, r) in [("a", &a), ("b", &b)] {
        let value = r["structuredContent"]["value"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"));
        let expected: Vec<Value> = (0..20).map(|i| json!(format!("Echo: {mark}{i}"))).collect();
        assert_eq!(value, &expected, "{mark}");
        assert_eq!(
            r["structuredContent"]["calls"].as_array().unwrap().len(),
            20
        );
    }

    // What one session's script kept, another session of the same token
    // cannot read, while both are open.
    let (a, b) = tokio::join!(http_client(&url, ADMIN), http_client(&url, ADMIN));
    let Value::Object(args) = json!({"code": "const r = await tools['everything__get-tiny-image']({}); return r.find((b) => b.type === 'image').uri"})
    else {
        unreachable!()
    };
    let request = rmcp::model::CallToolRequestParams::new("code").with_arguments(args);
    let ran = serde_json::to_value(a.call_tool(request).await.unwrap()).unwrap();
    let uri = ran["structuredContent"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("{ran}"));
    let read = |uri: &str| rmcp::model::ReadResourceRequestParams::new(uri);
    let mine = a.read_resource(read(uri)).await.unwrap();
    assert_eq!(mine.contents.len(), 1);
    let theirs = b.read_resource(read(uri)).await;
    let error = format!("{:?}", theirs.expect_err("another session reads nothing"));
    assert!(error.contains("not found"), "{error}");
    let _ = tokio::join!(a.cancel(), b.cancel());
}

/// An rmcp client over Streamable HTTP with `token`.
pub(super) async fn http_client(
    url: &str,
    token: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// A script's `limits` lower the configured ones, never raise them; and
/// what one script leaves (a global, a changed prototype) is gone for the
/// next, in its session and in another.
#[test]
fn a_script_cannot_raise_its_limits_nor_leave_anything_for_the_next() {
    let s = setup();
    s.dirs
        .edit_user(|c| c["settings"] = json!({"scriptLimits": {"maxCalls": 2}}));
    let three_calls = "for (let i = 0; i < 3; i++) await tools.everything__echo({message: `${i}`}); return 'done'";
    let leave = "globalThis.leaked = 1; Object.prototype.polluted = 2; Array.prototype.push = () => 0; return 'left'";
    let look =
        "const a = []; a.push(1); return [typeof leaked, ({}).polluted === undefined, a.length]";
    let steps = json!([
        script("code", three_calls, json!({"maxCalls": 50})),
        script("code", leave, json!({})),
        script("code", look, json!({})),
    ]);
    let r = client_plan(json!({"connect": connect(&s, "code"), "steps": steps})).unwrap();
    assert_eq!(r[0]["isError"], true, "{}", r[0]);
    assert!(r[0].to_string().contains("limit of 2 calls"), "{}", r[0]);
    assert_eq!(
        r[2]["structuredContent"]["value"],
        json!(["undefined", true, 1]),
        "{}",
        r[2]
    );
    let other = json!([script("code", look, json!({}))]);
    let r = client_plan(json!({"connect": connect(&s, "code"), "steps": other})).unwrap();
    assert_eq!(
        r[0]["structuredContent"]["value"],
        json!(["undefined", true, 1]),
        "{}",
        r[0]
    );
}
