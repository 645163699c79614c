//! Change notifications in the stateless revision (2026-07-28), where they
//! come only on `subscriptions/listen` streams: a client of that revision
//! listens to `mcpw serve --http`, and mcpw listens to a server of that
//! revision (made with rmcp, whose server speaks it). A resource update and a
//! tool list change at the server reach the client's stream.

use crate::common::ConfigDirs;
use crate::servers::{Serving, rmcp_tool, rmcp_upstream};
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
    let serving = Serving::start(&dirs.home(), &["--exposure", "direct"]);

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
