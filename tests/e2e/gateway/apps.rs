//! MCP Apps through mcpw: a real app server from npm
//! (`@modelcontextprotocol/server-basic-vanillajs`, a clock) behind
//! `mcpw serve`, and the TypeScript SDK client as a host that declares the
//! extension, or as a client that does not.

use super::serve::client_plan;
use crate::common::ConfigDirs;
use crate::servers::{MCPW, Serving, servers};
use serde_json::{Value, json};

const VIEW: &str = "ui://get-time/mcp-app.html";

fn host_capabilities() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
}

fn clock() -> Value {
    json!({"command": "node", "args": [servers().basic_app(), "--stdio"]})
}

/// The tool named `name` in a `listTools` step's result.
fn tool<'a>(listed: &'a Value, name: &str) -> &'a Value {
    listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {listed:#}"))
}

#[test]
fn a_host_gets_the_view_its_metadata_and_the_tool_through_mcpw() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"clock": clock()}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let steps = json!([
        {"op": "listTools"},
        {"op": "readResource", "uri": VIEW},
        {"op": "callTool", "name": "clock__get-time", "arguments": {}},
    ]);
    let plan = json!({"connect": {"url": serving.url()}, "capabilities": host_capabilities(),
                      "steps": steps});
    let through = client_plan(plan).unwrap();
    // Once a server with a view is known (listed, or cached), mcpw offers
    // the extension to the sessions that begin.
    let offered = client_plan(json!({"connect": {"url": serving.url()},
        "steps": [{"op": "serverCapabilities"}]}))
    .unwrap();
    // The server itself, for what a host reads from it directly.
    let direct = client_plan(
        json!({"connect": clock(), "capabilities": host_capabilities(),
        "steps": [{"op": "listTools"}, {"op": "readResource", "uri": VIEW}]}),
    )
    .unwrap();
    assert!(
        offered[0]["extensions"]["io.modelcontextprotocol/ui"].is_object(),
        "mcpw offers the extension: {:#}",
        offered[0]
    );
    let listed = tool(&through[0], "clock__get-time");
    let own = tool(&direct[0], "get-time");
    assert_eq!(listed["_meta"]["ui"], own["_meta"]["ui"], "{listed:#}");
    assert_eq!(listed["_meta"]["ui"]["resourceUri"], VIEW);
    assert_eq!(listed["_meta"]["ui/resourceUri"], VIEW);
    // The view reads back as the server serves it: its HTML, MIME type and
    // metadata, byte for byte.
    assert_eq!(through[1]["contents"], direct[1]["contents"]);
    let html = &through[1]["contents"][0];
    assert_eq!(html["mimeType"], "text/html;profile=mcp-app");
    assert!(html["text"].as_str().unwrap().contains("<html"), "{html:#}");
    let called = &through[2];
    assert_ne!(called["isError"], true, "{called:#}");
    // A host renders the view itself: mcpw opens none for it.
    assert!(called["_meta"].get("mcpw/view").is_none(), "{called:#}");
    assert!(
        called["structuredContent"]["time"].is_string(),
        "{called:#}"
    );
}

#[test]
fn a_client_without_the_extension_gets_no_view_metadata() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"clock": clock()}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let host = json!({"connect": {"url": serving.url()}, "capabilities": host_capabilities(),
                      "steps": [{"op": "listTools"}]});
    let plain = json!({"connect": {"url": serving.url()}, "steps": [{"op": "listTools"}]});
    // A host first, on the same upstream connection.
    let hosted = client_plan(host).unwrap();
    assert!(tool(&hosted[0], "clock__get-time")["_meta"]["ui"].is_object());
    let listed = client_plan(plain).unwrap();
    let meta = &tool(&listed[0], "clock__get-time")["_meta"];
    assert!(
        meta.get("ui").is_none() && meta.get("ui/resourceUri").is_none(),
        "{meta:#}"
    );
}

/// In tool-search exposure a host loads the app's tool with its view; in
/// proxy exposure, where the agent sees one tool, a call through `mcp`
/// carries the view on its result, for a host that renders from results.
#[test]
fn tool_search_and_proxy_exposure_keep_the_view_for_a_host() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"clock": clock()}}).to_string());
    let searching = Serving::start(MCPW, &dirs.home(), &["--exposure", "tool-search"]);
    let steps = json!([
        {"op": "callTool", "name": "ToolSearch", "arguments": {"query": "select:clock__get-time"}},
        {"op": "listTools"},
    ]);
    let loaded = client_plan(json!({"connect": {"url": searching.url()},
        "capabilities": host_capabilities(), "steps": steps}))
    .unwrap();
    let listed = tool(&loaded[1], "clock__get-time");
    assert_eq!(listed["_meta"]["ui"]["resourceUri"], VIEW, "{listed:#}");
    drop(searching);
    let proxy = Serving::start(MCPW, &dirs.home(), &["--exposure", "proxy"]);
    let call = json!({"op": "callTool", "name": "mcp", "arguments": {"tool": "clock__get-time"}});
    let host = client_plan(json!({"connect": {"url": proxy.url()},
        "capabilities": host_capabilities(), "steps": [call]}))
    .unwrap();
    assert_eq!(host[0]["_meta"]["ui"]["resourceUri"], VIEW, "{:#}", host[0]);
    assert_ne!(host[0]["isError"], true, "{:#}", host[0]);
    let plain = client_plan(json!({"connect": {"url": proxy.url()}, "steps": [call]})).unwrap();
    assert!(plain[0]["_meta"].get("ui").is_none(), "{:#}", plain[0]);
    // A client that renders no view gets one opened on mcpw's page.
    let url = plain[0]["_meta"]["mcpw/view"]["url"]
        .as_str()
        .unwrap_or_default();
    assert!(url.starts_with(&proxy.at("/view#view=")), "{:#}", plain[0]);
    assert!(host[0]["_meta"].get("mcpw/view").is_none(), "{:#}", host[0]);
}

/// An app calls its server's tools by the server's own names; through mcpw
/// the tool is `clock__get-time`, and the host passes the app's call on as
/// `get-time`: for a host, that name reaches the one server that has it.
#[test]
fn an_apps_call_by_its_servers_own_name_reaches_that_server() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"clock": clock()}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let call = json!({"op": "callTool", "name": "get-time", "arguments": {}});
    let host = client_plan(json!({"connect": {"url": serving.url()},
        "capabilities": host_capabilities(), "steps": [call]}))
    .unwrap();
    assert_ne!(host[0]["isError"], true, "{:#}", host[0]);
    assert!(
        host[0]["structuredContent"]["time"].is_string(),
        "{:#}",
        host[0]
    );
    // An agent's client names tools as mcpw lists them.
    let agent = client_plan(json!({"connect": {"url": serving.url()}, "steps": [call]})).unwrap();
    assert_eq!(agent[0]["isError"], true, "{:#}", agent[0]);
}

/// A view's calls (a host passing an app's call on by the server's own
/// name) take the path every call takes: the user is asked where `approve`
/// says (a denial stops it), a guard refuses one that would send a key,
/// and the server's rate limit counts every one (the fifth is refused
/// before anything else); the audit trail tells each as
/// the app's.
#[test]
fn a_views_calls_meet_approval_the_guards_and_the_rate_limit() {
    let dirs = ConfigDirs::new();
    let trail = dirs.root.path().join("audit.jsonl");
    let mut clock = clock();
    clock["rateLimit"] = json!("4/min");
    let settings = json!({"approve": "all", "guards": [super::guards::redactor()],
                          "audit": {"path": trail.display().to_string()}});
    dirs.user(&json!({"mcpServers": {"clock": clock}, "settings": settings}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let call =
        |arguments: Value| json!({"op": "callTool", "name": "get-time", "arguments": arguments});
    let answer = |decision: &str| json!({"action": "accept", "content": {"decision": decision}});
    let host = client_plan(json!({"connect": {"url": serving.url()},
    "capabilities": host_capabilities(),
    "elicit": [answer("deny"), answer("once"), answer("once")],
    "steps": [
        call(json!({})),
        call(json!({})),
        call(json!({"note": "AKIAIOSFODNN7EXAMPLE"})),
        call(json!({})),
        call(json!({})),
        {"op": "elicitations"},
    ]}))
    .unwrap();
    let said = |i: usize| host[i].to_string();
    assert!(said(0).contains("the user denied"), "{}", said(0));
    assert!(
        host[1]["structuredContent"]["time"].is_string(),
        "{}",
        said(1)
    );
    assert!(said(2).contains("carry a credential"), "{}", said(2));
    assert!(
        host[3]["structuredContent"]["time"].is_string(),
        "{}",
        said(3)
    );
    assert!(said(4).contains("rate limit reached"), "{}", said(4));
    let asked = host[5].as_array().unwrap();
    assert_eq!(
        asked.len(),
        3,
        "asked before each call the guard let run: {asked:#?}"
    );
    let lines = std::fs::read_to_string(&trail).unwrap();
    let seen: Vec<(String, String)> = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["tool"] == "get-time")
        .map(|l| {
            (
                l["via"].as_str().unwrap().into(),
                l["decision"].as_str().unwrap().into(),
            )
        })
        .collect();
    let app = |d: &str| ("app".to_string(), d.to_string());
    assert_eq!(
        seen,
        [
            app("denied"),
            app("asked"),
            app("denied"),
            app("asked"),
            app("denied")
        ],
        "{lines}"
    );
}

fn board() -> Value {
    json!({"command": "node", "args": [servers().app_board()]})
}

/// A tool only its app may call (`visibility: ["app"]`) is not in the
/// agent's list, search hits or descriptions, nor among a script's tools;
/// a host calls it by its server's own name, an agent's client cannot.
#[test]
fn an_app_only_tool_is_the_apps_alone() {
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"board": board()}, "settings": {"codeMode": true}}).to_string(),
    );
    let direct = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let move_piece = json!({"from": "e2", "to": "e4"});
    let steps = json!([
        {"op": "listTools"},
        {"op": "callTool", "name": "move-piece", "arguments": move_piece},
        {"op": "callTool", "name": "board__move-piece", "arguments": move_piece},
        {"op": "callTool", "name": "code", "arguments": {"code":
            "let moved; try { moved = JSON.stringify(await tools.board__move_piece({from: 'e2', to: 'e4'})); } \
             catch (e) { moved = 'refused'; } \
             return {found: (await mcp.search('move a piece')).map(t => t.name), \
                     moved: moved.includes('e2-e4') ? 'yes' : 'no'};"}},
    ]);
    let host = client_plan(json!({"connect": {"url": direct.url()},
        "capabilities": host_capabilities(), "steps": steps}))
    .unwrap();
    let names: Vec<&str> = host[0]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"board__show-board"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("move")), "{names:?}");
    assert_ne!(host[1]["isError"], true, "{:#}", host[1]);
    assert!(
        super::serve::text(&host[1]).contains("moved e2-e4"),
        "{:#}",
        host[1]
    );
    assert_eq!(
        host[2]["isError"], true,
        "the agent's name for it: {:#}",
        host[2]
    );
    let script = super::serve::text(&host[3]);
    assert!(script.contains("\"moved\":\"no\""), "{script}");
    assert!(!script.contains("move-piece"), "{script}");
    // An agent's client, by the server's name: nothing.
    let agent = client_plan(json!({"connect": {"url": direct.url()},
        "steps": [{"op": "callTool", "name": "move-piece", "arguments": move_piece}]}))
    .unwrap();
    assert_eq!(agent[0]["isError"], true, "{:#}", agent[0]);
    drop(direct);
    // ToolSearch and the proxy's search and describe find nothing of it.
    let searching = Serving::start(MCPW, &dirs.home(), &["--exposure", "tool-search"]);
    let found = client_plan(json!({"connect": {"url": searching.url()}, "steps": [
        {"op": "callTool", "name": "ToolSearch", "arguments": {"query": "move a piece on the board"}},
        {"op": "callTool", "name": "ToolSearch", "arguments": {"query": "select:board__move-piece"}},
    ]}))
    .unwrap();
    for hit in &found {
        let loaded = &hit["structuredContent"]["loaded"];
        assert!(!loaded.to_string().contains("move-piece"), "{hit:#}");
        assert!(
            !super::serve::text(hit).contains("Moves a piece"),
            "{hit:#}"
        );
    }
    drop(searching);
    let proxy = Serving::start(MCPW, &dirs.home(), &["--exposure", "proxy"]);
    let described = client_plan(json!({"connect": {"url": proxy.url()}, "steps": [
        {"op": "callTool", "name": "mcp", "arguments": {"search": "move a piece"}},
        {"op": "callTool", "name": "mcp", "arguments": {"describe": "board__move-piece"}},
        {"op": "callTool", "name": "mcp", "arguments": {"server": "board"}},
    ]}))
    .unwrap();
    for answer in &described {
        assert!(
            !super::serve::text(answer).contains("Moves a piece"),
            "{answer:#}"
        );
    }
}

/// Two servers with a view at the same `ui://` URI: each is exposed under a
/// form that keeps the scheme (hosts render only `ui://`), named so on its
/// tool, and read back from its own server.
#[test]
fn views_at_the_same_uri_keep_their_scheme_and_their_server() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"clock": clock(), "clock2": clock()}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let mapped = |server: &str| format!("ui://mcpw/{server}/get-time/mcp-app.html");
    let steps = json!([
        {"op": "listTools"},
        {"op": "readResource", "uri": mapped("clock")},
        {"op": "readResource", "uri": mapped("clock2")},
        {"op": "readResource", "uri": VIEW},
    ]);
    let host = client_plan(json!({"connect": {"url": serving.url()},
        "capabilities": host_capabilities(), "steps": steps}))
    .unwrap();
    let direct = client_plan(json!({"connect": clock(),
        "steps": [{"op": "readResource", "uri": VIEW}]}))
    .unwrap();
    for (server, read) in [("clock", &host[1]), ("clock2", &host[2])] {
        let listed = tool(&host[0], &format!("{server}__get-time"));
        assert_eq!(
            listed["_meta"]["ui"]["resourceUri"],
            mapped(server),
            "{listed:#}"
        );
        assert_eq!(
            listed["_meta"]["ui/resourceUri"],
            mapped(server),
            "{listed:#}"
        );
        let contents = &read["contents"][0];
        assert_eq!(contents["uri"], mapped(server), "{read:#}");
        assert_eq!(contents["mimeType"], direct[0]["contents"][0]["mimeType"]);
        assert_eq!(contents["text"], direct[0]["contents"][0]["text"]);
    }
    // The server's own form no longer says which server.
    assert!(host[3]["error"].is_string(), "{:#}", host[3]);
}

/// A result too big for the agent's budget is cut to a preview; its `_meta`
/// (the app's view on it) goes on as the server sent it.
#[test]
fn a_preview_keeps_the_results_view() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"board": board()}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let call = json!({"op": "callTool", "name": "board__show-board", "arguments": {}});
    let host = client_plan(json!({"connect": {"url": serving.url()},
        "capabilities": host_capabilities(), "steps": [call]}))
    .unwrap();
    let result = &host[0];
    let text = super::serve::text(result);
    assert!(text.len() < 200_000, "a preview: {} characters", text.len());
    assert_eq!(
        result["_meta"]["ui"]["resourceUri"], "ui://board/app.html",
        "{result:#}"
    );
}

/// A projection (`select`) rewrites a result's content, never its `_meta`.
#[test]
fn a_projection_keeps_the_results_meta() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"board": board()}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "proxy"]);
    let call = json!({"op": "callTool", "name": "mcp", "arguments":
        {"tool": "board__show-board", "select": ".pieces"}});
    let got = client_plan(json!({"connect": {"url": serving.url()}, "steps": [call]})).unwrap();
    let result = &got[0];
    assert!(super::serve::text(result).starts_with("32"), "{result:#}");
    assert_eq!(result["_meta"]["board/moves"], 0, "{result:#}");
}

/// A server connected before any host (eager, over HTTP) was offered no
/// extension; a host that joins has it connected again, offering it, and a
/// client without the extension does not.
#[test]
fn a_host_joining_later_is_offered_to_servers_connected_before_it() {
    let dirs = ConfigDirs::new();
    let methods = dirs.root.path().join("methods");
    let m = json!({"command": "node", "args": [servers().misbehave(), "ok"], "lifecycle": "eager",
                   "env": {"METHODS_FILE": methods.display().to_string()}});
    dirs.user(&json!({"mcpServers": {"m": m}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let initializes = || {
        let said = std::fs::read_to_string(&methods).unwrap_or_default();
        said.lines().filter(|l| *l == "initialize").count()
    };
    let within = std::time::Duration::from_secs(20);
    crate::servers::wait_until("the eager connection", within, || initializes() == 1);
    let plain = json!({"connect": {"url": serving.url()}, "steps": [{"op": "listTools"}]});
    client_plan(plain).unwrap();
    assert_eq!(
        initializes(),
        1,
        "a client without the extension changes nothing"
    );
    let host = json!({"connect": {"url": serving.url()}, "capabilities": host_capabilities(),
                      "steps": [{"op": "listTools"}]});
    client_plan(host).unwrap();
    crate::servers::wait_until("the connection offering the extension", within, || {
        initializes() == 2
    });
}

/// Code exposure, as the book's MCP Apps chapter says: a host sees the `code`
/// tool alone (no app tool beside it), and a script gets an app tool's result,
/// not its view.
#[test]
fn in_code_exposure_a_host_gets_results_not_views() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"clock": clock()}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "code"]);
    let script = "const r = await tools.clock__get_time({}); \
                  return {time: typeof r.time === 'string' || JSON.stringify(r).includes('T'), ui: JSON.stringify(r).includes('ui://')};";
    let steps = json!([
        {"op": "listTools"},
        {"op": "callTool", "name": "code", "arguments": {"code": script}},
    ]);
    let got = client_plan(json!({"connect": {"url": serving.url()},
        "capabilities": host_capabilities(), "steps": steps}))
    .unwrap();
    let names: Vec<&str> = got[0]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["code"], "{names:?}");
    let told = super::serve::text(&got[1]);
    assert!(
        told.contains("\"time\":true") && told.contains("\"ui\":false"),
        "{told}"
    );
    assert!(got[1]["_meta"].get("ui").is_none(), "{:#}", got[1]);
}
