//! Tool globs of a client token (`serve.tokens[].tools`), with rmcp's client
//! in front of `mcpw serve --http` and server-everything and server-memory
//! behind: in every exposure (direct, ToolSearch, the `mcp` proxy tool, code
//! mode) the token sees and reaches the tools its globs name and no other,
//! even of a server it sees; a token without globs sees every tool.

use super::tokens::{self, Client, call, params, text};
use crate::common::ConfigDirs;
use crate::servers::Serving;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Sees memory's readers and everything's echo only.
const READER: &str = "reader-token-0123456789";
/// Sees every tool.
const ADMIN: &str = "admin-token-0123456789";
/// Sees memory's `read_graph` alone: no server its globs do not name.
const GRAPH: &str = "graph-token-0123456789";
/// What the reader's globs admit, among the servers' tools.
const ADMITTED: [&str; 4] = [
    "everything__echo",
    "memory__open_nodes",
    "memory__read_graph",
    "memory__search_nodes",
];

fn serve(exposure: &str) -> (ConfigDirs, Serving) {
    let tools = [
        "memory/read_*",
        "memory/search_*",
        "memory/open_nodes",
        "everything/echo",
    ];
    tokens::serve_with(
        exposure,
        json!([{"name": "reader", "token": READER, "tools": tools},
               {"name": "graph", "token": GRAPH, "tools": ["memory/read_graph"]},
               {"name": "admin", "token": ADMIN}]),
    )
}

async fn session(serving: &Serving, token: &str) -> Client {
    tokens::session(&serving.url(), token).await
}

async fn names(client: &Client) -> BTreeSet<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.iter().map(|t| t.name.to_string()).collect()
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or_default()
}

const WRITE: (&str, &str) = (
    "memory__create_entities",
    "create entities in the knowledge graph",
);

#[tokio::test(flavor = "multi_thread")]
async fn a_tokens_globs_admit_its_tools_alone_when_listed_and_called_directly() {
    let (_dirs, serving) = serve("direct");
    let (reader, admin) = (
        session(&serving, READER).await,
        session(&serving, ADMIN).await,
    );
    let expected: BTreeSet<String> = ADMITTED.iter().map(|s| s.to_string()).collect();
    assert_eq!(names(&reader).await, expected);
    assert!(names(&admin).await.contains(WRITE.0));
    let refused = call(&reader, WRITE.0, json!({"entities": []})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(text(&refused).starts_with(&format!("tool \"{}\" not found", WRITE.0)));
    assert!(
        !text(&refused).contains("create_entities\","),
        "no suggestion of a hidden tool"
    );
    let echo = call(&reader, "everything__echo", json!({"message": "hi"})).await;
    assert_eq!(text(&echo), "Echo: hi");
    let graph = call(&reader, "memory__read_graph", json!({})).await;
    assert_ne!(graph.is_error, Some(true), "{}", text(&graph));

    // Globs of one server's tools: no other server's prompts or resources.
    let only_graph = session(&serving, GRAPH).await;
    assert_eq!(
        names(&only_graph).await,
        BTreeSet::from(["memory__read_graph".to_string()])
    );
    assert!(only_graph.list_all_prompts().await.unwrap().is_empty());
    let of_memory = |r: &rmcp::model::Resource| r.uri.starts_with("memory://");
    let resources = only_graph.list_all_resources().await.unwrap();
    assert!(resources.iter().all(of_memory), "{resources:?}");
    assert!(
        !admin.list_all_prompts().await.unwrap().is_empty(),
        "everything has prompts"
    );
    let all = admin.list_all_resources().await.unwrap();
    assert!(!all.iter().all(of_memory), "everything has resources");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tokens_globs_admit_its_tools_alone_through_tool_search() {
    let (_dirs, serving) = serve("tool-search");
    let (reader, admin) = (
        session(&serving, READER).await,
        session(&serving, ADMIN).await,
    );
    let found = call(&reader, "ToolSearch", json!({"query": WRITE.1})).await;
    let loaded: Vec<String> = params(structured(&found)["loaded"].clone());
    assert!(
        loaded.iter().all(|n| ADMITTED.contains(&n.as_str())),
        "{loaded:?}"
    );
    let select = json!({"query": format!("select:{}", WRITE.0)});
    let selected = call(&reader, "ToolSearch", select.clone()).await;
    assert_eq!(
        structured(&selected)["loaded"],
        json!([]),
        "{}",
        text(&selected)
    );
    let selected = call(&admin, "ToolSearch", select).await;
    assert_eq!(structured(&selected)["loaded"], json!([WRITE.0]));
    let refused = call(&reader, WRITE.0, json!({"entities": []})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tokens_globs_admit_its_tools_alone_through_the_proxy_tool() {
    let (_dirs, serving) = serve("proxy");
    let (reader, admin) = (
        session(&serving, READER).await,
        session(&serving, ADMIN).await,
    );
    let found = call(&reader, "mcp", json!({"search": WRITE.1, "limit": 50})).await;
    let matches = structured(&found)["matches"].clone();
    let tools: Vec<&str> = matches
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool"].as_str())
        .collect();
    assert!(!tools.is_empty(), "{matches}");
    assert!(tools.iter().all(|t| ADMITTED.contains(t)), "{tools:?}");
    let found = call(&admin, "mcp", json!({"search": WRITE.1})).await;
    let matches = structured(&found)["matches"].to_string();
    assert!(matches.contains(WRITE.0), "{matches}");
    let kind = |r: &CallToolResult| structured(r)["error"].clone();
    let described = call(&reader, "mcp", json!({"describe": WRITE.0})).await;
    assert_eq!(kind(&described), "tool_not_found", "{}", text(&described));
    let called = call(
        &reader,
        "mcp",
        json!({"tool": WRITE.0, "args": {"entities": []}}),
    )
    .await;
    assert_eq!(kind(&called), "tool_not_found", "{}", text(&called));
    let listed = call(&reader, "mcp", json!({"server": "memory"})).await;
    assert!(
        !text(&listed).contains("create_entities"),
        "{}",
        text(&listed)
    );
    assert!(text(&listed).contains("read_graph"), "{}", text(&listed));
    let echo = call(
        &reader,
        "mcp",
        json!({"tool": "everything__echo", "args": {"message": "hi"}}),
    )
    .await;
    assert_eq!(text(&echo), "Echo: hi");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tokens_globs_admit_its_tools_alone_in_code_mode() {
    let (_dirs, serving) = serve("code");
    let reader = session(&serving, READER).await;
    let code = format!(
        r#"const hits = await mcp.search({query:?}, {{limit: 20}});
let called;
try {{ await mcp.call({tool:?}, {{entities: []}}); called = "ran"; }} catch (e) {{ called = String(e); }}
const echo = await tools.everything__echo({{message: "hi"}});
return {{names: hits.map((h) => h.name), called, echo: JSON.stringify(echo)}};"#,
        query = WRITE.1,
        tool = WRITE.0,
    );
    let ran = call(&reader, "code", json!({"code": code})).await;
    assert_ne!(ran.is_error, Some(true), "{}", text(&ran));
    let value = structured(&ran)["value"].clone();
    let found: Vec<String> = params(value["names"].clone());
    assert!(
        found.iter().all(|n| ADMITTED.contains(&n.as_str())),
        "{found:?}"
    );
    let called = value["called"].as_str().unwrap_or_default();
    assert!(called.contains("not found"), "{value}");
    let echo = value["echo"].as_str().unwrap_or_default();
    assert!(echo.contains("Echo: hi"), "{value}");
}
