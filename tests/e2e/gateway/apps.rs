//! MCP Apps through mcpw: a real app server from npm
//! (`@modelcontextprotocol/server-basic-vanillajs`, a clock) behind
//! `mcpw serve`, and the TypeScript SDK client as a host that declares the
//! extension, or as a client that does not.

use super::serve::client_plan;
use crate::common::ConfigDirs;
use crate::servers::{Serving, servers};
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
    let serving = Serving::start(&dirs.home(), &["--exposure", "direct"]);
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
    assert!(
        called["structuredContent"]["time"].is_string(),
        "{called:#}"
    );
}

#[test]
fn a_client_without_the_extension_gets_no_view_metadata() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"clock": clock()}}).to_string());
    let serving = Serving::start(&dirs.home(), &["--exposure", "direct"]);
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
    let searching = Serving::start(&dirs.home(), &["--exposure", "tool-search"]);
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
    let proxy = Serving::start(&dirs.home(), &["--exposure", "proxy"]);
    let call = json!({"op": "callTool", "name": "mcp", "arguments": {"tool": "clock__get-time"}});
    let host = client_plan(json!({"connect": {"url": proxy.url()},
        "capabilities": host_capabilities(), "steps": [call]}))
    .unwrap();
    assert_eq!(host[0]["_meta"]["ui"]["resourceUri"], VIEW, "{:#}", host[0]);
    assert_ne!(host[0]["isError"], true, "{:#}", host[0]);
    let plain = client_plan(json!({"connect": {"url": proxy.url()}, "steps": [call]})).unwrap();
    assert!(plain[0]["_meta"].get("ui").is_none(), "{:#}", plain[0]);
}

/// An app calls its server's tools by the server's own names; through mcpw
/// the tool is `clock__get-time`, and the host passes the app's call on as
/// `get-time`: for a host, that name reaches the one server that has it.
#[test]
fn an_apps_call_by_its_servers_own_name_reaches_that_server() {
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"clock": clock()}}).to_string());
    let serving = Serving::start(&dirs.home(), &["--exposure", "direct"]);
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
