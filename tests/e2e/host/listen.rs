//! Change notifications in the stateless revision (2026-07-28), where they
//! come only on `subscriptions/listen` streams: a client of that revision
//! listens to `mcpw serve --http`, and mcpw listens to a server of that
//! revision (made with rmcp, whose server speaks it). A resource update and a
//! tool list change at the server reach the client's stream.

use crate::common::ConfigDirs;
use crate::servers::{MCPW, Serving, rmcp_tool, rmcp_upstream};
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleServer, SubscriptionContext,
    SubscriptionSink,
};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A server that offers `res://a`, and tools `touch` (the resource is
/// updated) and `grow` (a tool `grown` appears), telling its listeners.
#[derive(Clone, Default)]
struct Changing {
    listeners: Arc<Mutex<Vec<SubscriptionSink>>>,
    grown: Arc<std::sync::atomic::AtomicBool>,
}

fn tool(name: &str) -> rmcp::model::Tool {
    rmcp_tool(name, "does something", json!({"type": "object"}))
}

impl Changing {
    async fn tell(&self, notification: serde_json::Value) {
        let sinks = self.listeners.lock().unwrap().clone();
        for sink in sinks {
            let n: ServerNotification = serde_json::from_value(notification.clone()).unwrap();
            // A stream that did not ask for it refuses it.
            let _ = sink.send(n).await;
        }
    }
}

impl ServerHandler for Changing {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2026-07-28",
            "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}},
            "serverInfo": {"name": "changing", "version": "1.0.0"}
        }))
        .unwrap()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut tools = vec![tool("touch"), tool("grow")];
        if self.grown.load(std::sync::atomic::Ordering::SeqCst) {
            tools.push(tool("grown"));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(
            serde_json::from_value(json!({"resources": [{"uri": "res://a", "name": "a"}]}))
                .unwrap(),
        )
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        match &*request.name {
            "touch" => {
                self.tell(json!({"method": "notifications/resources/updated", "params": {"uri": "res://a"}}))
                    .await;
            }
            _ => {
                self.grown.store(true, std::sync::atomic::Ordering::SeqCst);
                self.tell(json!({"method": "notifications/tools/list_changed"}))
                    .await;
            }
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("done")]).into())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.listeners.lock().unwrap().push(context.sink().clone());
        context.cancelled().await;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_and_list_changes_reach_a_listening_client_from_a_listened_server() {
    let url = rmcp_upstream(Changing::default()).await;
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"up": {"url": url}}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);

    let stateless = ClientLifecycleMode::Auto {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    };
    let client = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(serving.url()),
            stateless,
        )
        .await
        .unwrap();
    let version = client.peer_info().unwrap().protocol_version.clone();
    assert_eq!(version.as_str(), "2026-07-28");
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .resource_subscription("res://a")
        .build();
    let mut stream = client.peer().listen(filter).await.unwrap();
    assert_eq!(
        stream.acknowledged().resource_subscriptions.as_deref(),
        Some(&["res://a".to_string()][..])
    );

    // mcpw starts listening to the server for res://a once the client's
    // stream is up, which the client cannot see: touch until it hears.
    let deadline = Instant::now() + Duration::from_secs(10);
    let updated = loop {
        client
            .call_tool(CallToolRequestParams::new("up__touch"))
            .await
            .unwrap();
        if let Ok(n) = tokio::time::timeout(Duration::from_millis(200), stream.next()).await {
            break n.unwrap().expect("the stream is open");
        }
        assert!(Instant::now() < deadline, "no update reached the client");
    };
    let updated = serde_json::to_value(&updated).unwrap();
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "res://a");

    client
        .call_tool(CallToolRequestParams::new("up__grow"))
        .await
        .unwrap();
    let changed = loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("a list change")
            .unwrap()
            .expect("the stream is open");
        let n = serde_json::to_value(&n).unwrap();
        // Updates from the touches above may still be on their way.
        if n["method"] != "notifications/resources/updated" {
            break n;
        }
    };
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "up__grown"), "{tools:?}");
}

/// The conformance suite's reference server behind the listen proxy
/// (`listen` = "forward" or "hold"), recording the methods it gets.
struct Reference {
    _server: crate::servers::Background,
    proxy: crate::servers::Background,
    methods: std::path::PathBuf,
}

impl Reference {
    fn start(dirs: &ConfigDirs, listen: &str) -> Reference {
        let s = crate::servers::servers();
        let args = s.reference_server();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = crate::servers::Background::node(&args, &[]);
        let methods = dirs.root.path().join("methods");
        let proxy = crate::servers::Background::node(
            &[&s.listen_proxy()],
            &[
                ("UPSTREAM", &server.url("/mcp")),
                ("LISTEN", listen),
                ("METHODS_FILE", methods.to_str().unwrap()),
            ],
        );
        Reference {
            _server: server,
            proxy,
            methods,
        }
    }

    /// Another client changes the server's tools: the server tells its
    /// listen streams (its unlisted helper tool, called at 2026-07-28).
    async fn trigger_tool_change(&self) {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}});
        let answer = reqwest::Client::new()
            .post(self._server.url("/mcp"))
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "test_trigger_tool_change", "arguments": {}, "_meta": meta}}))
            .send()
            .await
            .unwrap();
        let text = answer.text().await.unwrap();
        assert!(text.contains("Mutation triggered"), "{text}");
    }

    /// How many `tools/list` requests the server got.
    fn tool_lists(&self) -> usize {
        std::fs::read_to_string(&self.methods)
            .unwrap_or_default()
            .lines()
            .filter(|m| *m == "tools/list")
            .count()
    }

    fn config(&self) -> serde_json::Value {
        json!({"up": {"url": self.proxy.url("/mcp"), "startupTimeoutMs": 5000}})
    }
}

fn listen_of(host: &mcpw::host::Host) -> Option<mcpw::catalog::ListenReport> {
    host.status().into_iter().find(|s| s.name == "up")?.listen
}

/// The reference server answers `subscriptions/listen` with a JSON body of
/// one message per line that never ends, and sends the subscription id back
/// as a string: mcpw listens all the same, and relists on what it hears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_answer_streamed_as_json_lines_is_heard() {
    let dirs = ConfigDirs::new();
    let reference = Reference::start(&dirs, "forward");
    let host = crate::common::host(&dirs, reference.config(), |_| {}).await;
    host.servers().connect("up", false).await.unwrap();
    host.servers().listen_settled().await;
    assert_eq!(
        listen_of(&host),
        Some(mcpw::catalog::ListenReport::Listening)
    );
    let before = reference.tool_lists();
    reference.trigger_tool_change().await;
    crate::servers::wait_until(
        "a relist after the server's list_changed",
        Duration::from_secs(10),
        || reference.tool_lists() > before,
    );
    host.shutdown().await;
}

/// A server that never acknowledges a listen stream is connected all the
/// same (before, the connect waited for it until `startupTimeoutMs` and
/// failed); its status says the stream is down, and a call has its lists
/// fetched again, since no change would be heard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_acknowledges_listen_stays_connected() {
    let dirs = ConfigDirs::new();
    let reference = Reference::start(&dirs, "hold");
    let host = crate::common::host(&dirs, reference.config(), |o| {
        o.lifecycle.unheard_lists_fresh = Duration::ZERO;
    })
    .await;
    host.servers().connect("up", false).await.unwrap();
    host.servers().listen_settled().await;
    match listen_of(&host) {
        Some(mcpw::catalog::ListenReport::Retrying { error, .. }) => {
            assert!(error.contains("not acknowledged within 5000 ms"), "{error}")
        }
        other => panic!("a stream down and retried, not {other:?}"),
    }
    let before = reference.tool_lists();
    let out = host.call("up__test_simple_text", None).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    crate::servers::wait_until(
        "a relist asked by the call",
        Duration::from_secs(10),
        || reference.tool_lists() > before,
    );
    host.shutdown().await;

    // The same, as `mcpw status --connect` shows it.
    let status = crate::servers::mcpw_in(&dirs.home())
        .args(["status", "--connect", "--json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let up = &status["servers"][0];
    assert_eq!(up["state"], "connected", "{status}");
    assert_eq!(up["listen"]["state"], "retrying", "{status}");
}
