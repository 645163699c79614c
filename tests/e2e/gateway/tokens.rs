//! Client tokens of `mcpw serve --http` (`serve.tokens`), with rmcp's client
//! in front and server-everything and server-memory behind: a token limited
//! to memory sees and reaches memory alone in every exposure (tools, search,
//! calls, prompts, resources, completion, metrics), the other server looking
//! like no server at all; a token that sees every server sees both; requests
//! without a valid token get 401, and one client cannot use another's session.

use crate::common::ConfigDirs;
use crate::servers::{MCPW, Serving, servers};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use std::time::Duration;

/// The token of `ci`, which sees memory only.
const CI: &str = "ci-token-0123456789";
/// The token of `admin`, which sees every server (printed by a command).
const ADMIN: &str = "admin-token-0123456789";

pub(crate) type Client = RunningService<RoleClient, ClientConfig>;

/// mcpw serving everything and memory with the two tokens, in `exposure`.
fn serve(exposure: &str) -> (ConfigDirs, Serving) {
    serve_with(
        exposure,
        json!([
            {"name": "ci", "token": CI, "servers": ["memory"]},
            {"name": "admin", "token": format!("!printf {ADMIN}")}
        ]),
    )
}

/// mcpw serving everything and memory to `tokens` (`serve.tokens`), in
/// `exposure`.
pub(super) fn serve_with(exposure: &str, tokens: Value) -> (ConfigDirs, Serving) {
    let s = servers();
    let dirs = ConfigDirs::new();
    let memory_file = dirs.root.path().join("memory.json");
    let config = json!({
        "mcpServers": {
            "everything": {"command": "node", "args": [s.everything(), "stdio"]},
            "memory": {"command": "node", "args": [s.memory()],
                       "env": {"MEMORY_FILE_PATH": memory_file.display().to_string()}}
        },
        "serve": {"tokens": tokens}
    });
    dirs.user(&config.to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", exposure]);
    (dirs, serving)
}

pub(crate) async fn session(url: &str, token: &str) -> Client {
    // A client that takes tasks, so that it may ask for one.
    let capabilities = json!({"extensions": {rmcp::model::TASKS_EXTENSION_ID: {}}});
    session_with(url, token, capabilities).await
}

/// A session at `url` with `token`, of a client that declares `capabilities`.
pub(crate) async fn session_with(url: &str, token: &str, capabilities: Value) -> Client {
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(token);
    let client = ClientConfig::new(params(capabilities), Implementation::new("test", "1"));
    client
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("a session")
}

pub(super) fn params<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

pub(crate) async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        unreachable!()
    };
    let request = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
    client
        .call_tool(request)
        .await
        .expect("a tools/call answer")
}

pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn tool_names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.iter().map(|t| t.name.to_string()).collect()
}

/// Asserts `result` is the answer to an unknown tool `name`, naming no
/// tool of everything but the one asked for.
fn unknown_tool(result: &CallToolResult, name: &str) {
    let said = text(result);
    assert_eq!(result.is_error, Some(true), "{said}");
    let rest = said
        .strip_prefix(&format!("tool \"{name}\" not found"))
        .unwrap_or_else(|| panic!("an unknown tool: {said}"));
    assert!(!rest.contains("everything"), "{said}");
}

/// What every exposure shares: prompts, resources, templates and completion
/// of everything are hidden from ci and shown to admin; HTTP without a valid
/// token gets 401; metrics are admin's; sessions are their opener's.
async fn check_surfaces(serving: &Serving, ci: &Client, admin: &Client) {
    // Prompts.
    let prompts = admin.list_all_prompts().await.unwrap();
    let prompt = prompts
        .iter()
        .find(|p| p.name.starts_with("everything__") && p.arguments.is_some())
        .unwrap_or_else(|| panic!("an everything prompt with arguments: {prompts:?}"));
    assert!(ci.list_all_prompts().await.unwrap().is_empty());
    let arguments: serde_json::Map<String, Value> = prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| (a.name.to_string(), json!("x")))
        .collect();
    let get = json!({"name": prompt.name, "arguments": arguments});
    let hidden = ci.get_prompt(params(get.clone())).await.unwrap_err();
    assert!(hidden.to_string().contains("not found"), "{hidden}");
    admin.get_prompt(params(get)).await.unwrap();
    let argument = &prompt.arguments.as_ref().unwrap()[0].name;
    let completion = ci
        .complete_prompt_argument(prompt.name.to_string(), argument.to_string(), "", None)
        .await
        .unwrap_err();
    assert!(completion.to_string().contains("not found"), "{completion}");

    // Resources and templates: memory's alone.
    let uris = |list: Vec<rmcp::model::Resource>| -> Vec<String> {
        list.iter().map(|r| r.uri.clone()).collect()
    };
    let all = uris(admin.list_all_resources().await.unwrap());
    let mine = uris(ci.list_all_resources().await.unwrap());
    assert!(mine.iter().all(|u| u.starts_with("memory://")), "{mine:?}");
    let theirs = all
        .iter()
        .find(|u| !mine.contains(u))
        .unwrap_or_else(|| panic!("everything offers resources: {all:?}"));
    let templates = |list: Vec<rmcp::model::ResourceTemplate>| list.len();
    assert_eq!(
        templates(ci.list_all_resource_templates().await.unwrap()),
        0
    );
    assert!(templates(admin.list_all_resource_templates().await.unwrap()) > 0);
    let read = json!({"uri": theirs});
    let hidden = ci.read_resource(params(read.clone())).await.unwrap_err();
    assert!(hidden.to_string().contains("not found"), "{hidden}");
    admin.read_resource(params(read)).await.unwrap();

    // Without a valid token, nothing; metrics are for a token that sees all.
    let http = reqwest::Client::new();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let post = |token: Option<&str>, session: Option<&str>, body: &'static str| {
        let mut request = http
            .post(serving.url())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(body);
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        if let Some(s) = session {
            request = request
                .header("Mcp-Session-Id", s)
                .header("MCP-Protocol-Version", "2025-06-18");
        }
        request.send()
    };
    for token in [None, Some("wrong"), Some(&CI[..CI.len() - 1])] {
        let refused = post(token, None, initialize).await.unwrap();
        assert_eq!(refused.status().as_u16(), 401, "{token:?}");
    }
    let metrics = |token: &'static str| http.get(serving.at("/metrics")).bearer_auth(token).send();
    assert_eq!(metrics(CI).await.unwrap().status().as_u16(), 403);
    assert_eq!(metrics(ADMIN).await.unwrap().status().as_u16(), 200);

    // admin's session is admin's alone.
    let opened = post(Some(ADMIN), None, initialize).await.unwrap();
    assert_eq!(opened.status().as_u16(), 200);
    let id = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let other = post(Some(CI), Some(&id), initialized).await.unwrap();
    assert_eq!(
        other.status().as_u16(),
        404,
        "ci cannot use admin's session"
    );
    let own = post(Some(ADMIN), Some(&id), initialized).await.unwrap();
    assert_eq!(own.status().as_u16(), 202);
    let other = post(Some(CI), Some(&id), list).await.unwrap();
    assert_eq!(other.status().as_u16(), 404);
    let own = post(Some(ADMIN), Some(&id), list).await.unwrap();
    assert_eq!(own.status().as_u16(), 200);
    let closed = http
        .delete(serving.url())
        .bearer_auth(CI)
        .header("Mcp-Session-Id", &id)
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status().as_u16(), 404, "ci cannot close it either");
}

async fn both(serving: &Serving) -> (Client, Client) {
    let url = serving.url();
    (session(&url, CI).await, session(&url, ADMIN).await)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_limited_token_sees_only_its_servers_in_the_direct_exposure() {
    let (_dirs, serving) = serve("direct");
    let (ci, admin) = both(&serving).await;
    let mine = tool_names(&ci).await;
    assert!(!mine.is_empty(), "memory's tools are listed");
    assert!(mine.iter().all(|t| t.starts_with("memory__")), "{mine:?}");
    let all = tool_names(&admin).await;
    assert!(all.contains(&"everything__echo".to_string()), "{all:?}");
    assert!(all.contains(&"memory__read_graph".to_string()), "{all:?}");

    unknown_tool(
        &call(&ci, "everything__echo", json!({"message": "hi"})).await,
        "everything__echo",
    );
    let graph = call(&ci, "memory__read_graph", json!({})).await;
    assert_ne!(graph.is_error, Some(true), "{}", text(&graph));
    let echo = call(&admin, "everything__echo", json!({"message": "hi"})).await;
    assert_eq!(text(&echo), "Echo: hi");

    // A task of everything is an unknown task to ci.
    let task = ci
        .get_task(params(json!({"taskId": "everything/1"})))
        .await
        .unwrap_err();
    assert!(task.to_string().contains("unknown task"), "{task}");

    check_surfaces(&serving, &ci, &admin).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), ci.cancel()).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), admin.cancel()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_limited_token_sees_only_its_servers_in_the_tool_search_exposure() {
    let (_dirs, serving) = serve("tool-search");
    let (ci, admin) = both(&serving).await;
    let tools = ci.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1, "ToolSearch alone: {tools:?}");
    let description = tools[0].description.as_deref().unwrap_or_default();
    assert!(
        description.contains("memory") && !description.contains("everything"),
        "{description}"
    );
    let admin_tools = admin.list_all_tools().await.unwrap();
    let description = admin_tools[0].description.as_deref().unwrap_or_default();
    assert!(description.contains("everything"), "{description}");

    let found = call(&ci, "ToolSearch", json!({"query": "echo the message back"})).await;
    let loaded = found.structured_content.clone().unwrap()["loaded"].clone();
    let loaded: Vec<String> = params(loaded);
    assert!(
        loaded.iter().all(|n| n.starts_with("memory__")),
        "{loaded:?}"
    );
    let selected = call(
        &ci,
        "ToolSearch",
        json!({"query": "select:everything__echo"}),
    )
    .await;
    assert_eq!(
        selected.structured_content.clone().unwrap()["loaded"],
        json!([]),
        "{}",
        text(&selected)
    );
    let found = call(
        &admin,
        "ToolSearch",
        json!({"query": "select:everything__echo"}),
    )
    .await;
    assert_eq!(
        found.structured_content.clone().unwrap()["loaded"],
        json!(["everything__echo"])
    );
    let mine = tool_names(&ci).await;
    assert!(
        mine.iter()
            .all(|t| t == "ToolSearch" || t.starts_with("memory__")),
        "{mine:?}"
    );
    unknown_tool(
        &call(&ci, "everything__echo", json!({"message": "hi"})).await,
        "everything__echo",
    );
    let echo = call(&admin, "everything__echo", json!({"message": "hi"})).await;
    assert_eq!(text(&echo), "Echo: hi");

    check_surfaces(&serving, &ci, &admin).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), ci.cancel()).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), admin.cancel()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_limited_token_sees_only_its_servers_in_the_proxy_exposure() {
    let (_dirs, serving) = serve("proxy");
    let (ci, admin) = both(&serving).await;
    let description = |tools: Vec<rmcp::model::Tool>| {
        assert_eq!(tools.len(), 1);
        tools[0]
            .description
            .as_deref()
            .unwrap_or_default()
            .to_string()
    };
    let mine = description(ci.list_all_tools().await.unwrap());
    assert!(mine.starts_with("Gateway to 1 MCP servers"), "{mine}");
    let all = description(admin.list_all_tools().await.unwrap());
    assert!(all.starts_with("Gateway to 2 MCP servers"), "{all}");

    let status = call(&ci, "mcp", json!({})).await;
    assert!(
        text(&status).contains("memory") && !text(&status).contains("everything"),
        "{}",
        text(&status)
    );
    assert!(text(&call(&admin, "mcp", json!({})).await).contains("everything"));

    let found = call(&ci, "mcp", json!({"search": "echo message", "limit": 50})).await;
    let matches = found.structured_content.clone().unwrap()["matches"].clone();
    assert!(
        matches
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["server"] == "memory"),
        "{matches}"
    );
    let found = call(&admin, "mcp", json!({"search": "echo message"})).await;
    assert_eq!(
        found.structured_content.unwrap()["matches"][0]["tool"],
        "everything__echo"
    );
    let in_everything = call(
        &ci,
        "mcp",
        json!({"search": "echo", "server": "everything"}),
    )
    .await;
    assert!(
        text(&in_everything).contains("no server has that name (servers: memory)"),
        "{}",
        text(&in_everything)
    );

    let kind = |r: &CallToolResult| r.structured_content.clone().unwrap()["error"].clone();
    let described = call(&ci, "mcp", json!({"describe": "everything__echo"})).await;
    assert_eq!(kind(&described), "tool_not_found", "{}", text(&described));
    let called = call(
        &ci,
        "mcp",
        json!({"tool": "everything__echo", "args": {"message": "hi"}}),
    )
    .await;
    assert_eq!(kind(&called), "tool_not_found", "{}", text(&called));
    let said = text(&called).replacen("everything__echo", "", 1);
    assert!(
        !said.contains("everything"),
        "no tool of everything is named: {said}"
    );
    let listed = call(&ci, "mcp", json!({"server": "everything"})).await;
    assert_eq!(kind(&listed), "not_found");
    let connected = call(&ci, "mcp", json!({"connect": "everything"})).await;
    assert_eq!(kind(&connected), "not_found");
    let via_server = call(
        &ci,
        "mcp",
        json!({"tool": "echo", "server": "everything", "args": {"message": "hi"}}),
    )
    .await;
    assert_eq!(kind(&via_server), "server_not_found");
    let echo = call(
        &admin,
        "mcp",
        json!({"tool": "everything__echo", "args": {"message": "hi"}}),
    )
    .await;
    assert_eq!(text(&echo), "Echo: hi");
    let graph = call(&ci, "mcp", json!({"tool": "memory__read_graph"})).await;
    assert_ne!(graph.is_error, Some(true), "{}", text(&graph));

    check_surfaces(&serving, &ci, &admin).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), ci.cancel()).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), admin.cancel()).await;
}

/// A broken `serve.tokens` entry keeps `serve --http` from starting (a client
/// would be admitted otherwise than written); the error says where.
#[test]
fn a_broken_client_token_keeps_http_serving_from_starting() {
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"serve": {"tokens": [
            {"name": "ok", "token": "a-token-value"},
            {"name": "ci", "tokenEnv": "MCPW_TEST_UNSET_TOKEN"}
        ]}})
        .to_string(),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpw"))
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("HOME", dirs.home())
        .env("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("MCPW_CONFIG")
        .env_remove("MCPW_TEST_UNSET_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("serve.tokens[1].tokenEnv")
            && stderr.contains("token \"ci\"")
            && stderr.contains("serve.tokens has errors"),
        "{stderr}"
    );
    assert!(!stderr.contains("a-token-value"), "{stderr}");
}

/// A client that passes on every `notifications/message` (`logger: data`).
struct Logs(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for Logs {
    #[allow(deprecated)] // mcpw serves the initialize-era revision that has it
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let logger = params.logger.unwrap_or_default();
        let _ = self.0.send(format!("{logger}: {}", params.data));
    }
}

/// A session that asked for every log message, and the messages it hears.
#[allow(deprecated)] // logging: mcpw serves the initialize-era revision that has it
async fn listening(
    url: &str,
    token: &str,
) -> (
    RunningService<RoleClient, Logs>,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(token);
    let client = Logs(tx)
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("a session");
    client
        .set_level(params(json!({"level": "debug"})))
        .await
        .unwrap();
    (client, rx)
}

/// Log messages of a server a client does not see never reach its session.
#[tokio::test(flavor = "multi_thread")]
async fn log_messages_reach_only_the_clients_that_see_their_server() {
    let s = servers();
    let dirs = ConfigDirs::new();
    let misbehave = json!({"command": "node", "args": [s.misbehave(), "ok"]});
    dirs.user(
        &json!({
            "mcpServers": {"a": misbehave, "b": misbehave},
            "serve": {"tokens": [
                {"name": "ci", "token": CI, "servers": ["a"]},
                {"name": "admin", "token": ADMIN}
            ]}
        })
        .to_string(),
    );
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let (ci, mut ci_heard) = listening(&serving.url(), CI).await;
    let (admin, mut admin_heard) = listening(&serving.url(), ADMIN).await;
    let flood = |server: &str| {
        let args = json!({"kind": "log", "count": 2});
        CallToolRequestParams::new(format!("{server}__flood"))
            .with_arguments(args.as_object().unwrap().clone())
    };
    admin.call_tool(flood("b")).await.unwrap();
    admin.call_tool(flood("a")).await.unwrap();
    let next = async |heard: &mut tokio::sync::mpsc::UnboundedReceiver<String>| {
        tokio::time::timeout(Duration::from_secs(10), heard.recv())
            .await
            .expect("a log message")
            .unwrap()
    };
    // The client's handlers may run out of order: compare sorted.
    let mut all = Vec::new();
    while all.len() < 4 {
        all.push(next(&mut admin_heard).await);
    }
    all.sort();
    let a = ["a/flood: \"message 0\"", "a/flood: \"message 1\""];
    let b = ["b/flood: \"message 0\"", "b/flood: \"message 1\""];
    assert_eq!(all, [a, b].concat());
    let mut mine = vec![next(&mut ci_heard).await, next(&mut ci_heard).await];
    mine.sort();
    assert_eq!(mine, a);
    // b's were sent to admin before a's; a round trip later, ci has none.
    ci.list_all_tools().await.unwrap();
    assert!(ci_heard.try_recv().is_err());
    let _ = tokio::time::timeout(Duration::from_secs(5), ci.cancel()).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), admin.cancel()).await;
}
