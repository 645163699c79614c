//! Resources through `mcpw serve --http`: two servers that offer the same URIs
//! stay reachable through the `mcpw:<server>/` mapping, and updates reach the
//! session that subscribed, and only it.

use crate::common::ConfigDirs;
use crate::servers::{Background, Serving, servers};
use rmcp::model::{
    CallToolRequestParams, ReadResourceRequestParams, ResourceContents,
    ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;
use std::time::Duration;
use tokio::sync::mpsc;

/// A client that passes on every `notifications/resources/updated`.
struct Updates(mpsc::UnboundedSender<String>);

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

async fn session(
    url: &str,
) -> (
    RunningService<RoleClient, Updates>,
    mpsc::UnboundedReceiver<String>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Updates(tx)
        .serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .expect("a session with mcpw");
    (client, rx)
}

fn text(contents: &[ResourceContents]) -> String {
    match &contents[0] {
        ResourceContents::TextResourceContents { text, uri, .. } => format!("{uri} {text}"),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_sharing_uris_stay_reachable_and_updates_reach_their_subscriber_only() {
    let up = || Background::node(&[&servers().conformance_upstream()], &[]);
    let (a, b) = (up(), up());
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"a": {"url": a.url("/mcp")}, "b": {"url": b.url("/mcp")}}})
            .to_string(),
    );
    let serving = Serving::start(&dirs.home(), &["--exposure", "direct"]);
    let (one, mut one_updates) = session(&serving.url()).await;
    let (two, mut two_updates) = session(&serving.url()).await;

    let listed: Vec<String> = one
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    for uri in ["mcpw:a/test://static-text", "mcpw:b/test://static-text"] {
        assert!(listed.contains(&uri.to_string()), "{uri} in {listed:?}");
    }
    assert!(
        !listed.contains(&"test://static-text".to_string()),
        "{listed:?}"
    );
    let templates: Vec<String> = one
        .list_all_resource_templates()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.uri_template.clone())
        .collect();
    assert!(
        templates.contains(&"mcpw:b/test://template/{id}/data".to_string()),
        "{templates:?}"
    );

    let read = |uri: &str| ReadResourceRequestParams::new(uri);
    let static_b = one
        .read_resource(read("mcpw:b/test://static-text"))
        .await
        .unwrap();
    assert_eq!(
        text(&static_b.contents),
        "mcpw:b/test://static-text This is the content of the static text resource."
    );
    let templated = one
        .read_resource(read("mcpw:a/test://template/7/data"))
        .await
        .unwrap();
    assert!(text(&templated.contents).starts_with("mcpw:a/test://template/7/data {\"id\":\"7\""));
    let ambiguous = one.read_resource(read("test://static-text")).await;
    assert!(
        ambiguous.is_err(),
        "a shared URI needs its server: {ambiguous:?}"
    );

    #[allow(deprecated)] // mcpw serves the initialize-era revision that has it
    one.subscribe(SubscribeRequestParams::new(
        "mcpw:a/test://watched-resource",
    ))
    .await
    .unwrap();
    // The update comes from server a's session with mcpw, whoever triggers it.
    two.call_tool(CallToolRequestParams::new("a__update_watched_resource"))
        .await
        .unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), one_updates.recv())
        .await
        .expect("the subscriber hears of the update");
    assert_eq!(got.as_deref(), Some("mcpw:a/test://watched-resource"));
    // Session two learns nothing of it: a call of its own, answered after the
    // notification would have been sent, proves the channel had its chance.
    two.call_tool(CallToolRequestParams::new("a__test_simple_text"))
        .await
        .unwrap();
    assert!(
        two_updates.try_recv().is_err(),
        "only the subscriber is told"
    );
}
