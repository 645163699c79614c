//! What mcpw forwards besides tools, through `mcpw serve --http` with two of
//! our conformance upstreams behind it: resources (two servers that offer the
//! same URIs stay reachable through the `mcpw:<server>/` mapping; updates reach
//! the session that subscribed, and only it), log messages (to the sessions
//! that asked, at their level, the server named) and completions.

use crate::common::ConfigDirs;
use crate::servers::{Background, MCPW, Serving, mcpw_in, servers};
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

/// A client that passes on every `notifications/resources/updated` (the URI)
/// and `notifications/message` (`logger: data`).
struct Updates(mpsc::UnboundedSender<String>);

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }

    #[allow(deprecated)] // mcpw serves the initialize-era revision that has it
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let logger = params.logger.unwrap_or_default();
        let _ = self.0.send(format!("{logger}: {}", params.data));
    }
}

/// Two conformance upstreams, `a` and `b`, behind `mcpw serve --http`.
struct Gateway {
    _servers: (Background, Background),
    _dirs: ConfigDirs,
    serving: Serving,
}

fn gateway() -> Gateway {
    gateway_with("direct")
}

fn gateway_with(exposure: &str) -> Gateway {
    let up = || Background::node(&[&servers().conformance_upstream()], &[]);
    let (a, b) = (up(), up());
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"a": {"url": a.url("/mcp")}, "b": {"url": b.url("/mcp")}}})
            .to_string(),
    );
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", exposure]);
    Gateway {
        _servers: (a, b),
        _dirs: dirs,
        serving,
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
    let g = gateway();
    let (one, mut one_updates) = session(&g.serving.url()).await;
    let (two, mut two_updates) = session(&g.serving.url()).await;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)] // logging: mcpw serves the initialize-era revision that has it
async fn log_messages_reach_the_sessions_that_asked_with_the_server_named() {
    let g = gateway();
    let (verbose, mut verbose_got) = session(&g.serving.url()).await;
    let (strict, mut strict_got) = session(&g.serving.url()).await;
    let (quiet, mut quiet_got) = session(&g.serving.url()).await;
    let level = |l: &str| serde_json::from_value(json!({"level": l})).unwrap();
    verbose.set_level(level("debug")).await.unwrap();
    strict.set_level(level("error")).await.unwrap();
    quiet
        .call_tool(CallToolRequestParams::new("b__test_tool_with_logging"))
        .await
        .unwrap();
    let mut heard = Vec::new();
    while heard.len() < 3 {
        let m = tokio::time::timeout(Duration::from_secs(10), verbose_got.recv())
            .await
            .expect("the session that asked for debug hears the info messages");
        heard.push(m.unwrap());
    }
    assert_eq!(
        heard,
        [
            "b/conformance: \"Tool execution started\"",
            "b/conformance: \"Tool processing data\"",
            "b/conformance: \"Tool execution completed\""
        ]
    );
    // A round trip after the last message: had they been sent, they were.
    strict
        .call_tool(CallToolRequestParams::new("a__test_simple_text"))
        .await
        .unwrap();
    assert!(
        strict_got.try_recv().is_err(),
        "error level: no info messages"
    );
    assert!(quiet_got.try_recv().is_err(), "no level asked: no messages");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_reach_the_server_of_the_prompt_or_template() {
    let g = gateway();
    let (client, _) = session(&g.serving.url()).await;
    let complete = |r: serde_json::Value| {
        let params = serde_json::from_value(
            json!({"ref": r, "argument": {"name": "arg1", "value": "test"}}),
        )
        .unwrap();
        client.complete(params)
    };
    let prompt = complete(json!({"type": "ref/prompt", "name": "b__test_prompt_with_arguments"}))
        .await
        .unwrap();
    assert_eq!(prompt.completion.values, ["test1", "test2", "testValue"]);
    let unknown =
        complete(json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"})).await;
    assert!(
        unknown.is_err(),
        "prompts go by their exposed names: {unknown:?}"
    );
    let template =
        complete(json!({"type": "ref/resource", "uri": "mcpw:a/test://template/{id}/data"})).await;
    assert!(
        template.is_ok(),
        "a mapped template reaches its server: {template:?}"
    );
}

/// A client that declares sampling and answers every sampling request with
/// its own name.
#[derive(Clone)]
struct Sampler {
    name: &'static str,
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

#[allow(deprecated)] // sampling: mcpw serves the initialize-era revision that has it
impl ClientHandler for Sampler {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": self.name, "version": "1.0.0"}
        }))
        .unwrap()
    }

    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        // Slow enough that both sessions' calls are in flight together.
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok(serde_json::from_value(json!({
            "role": "assistant", "model": "test",
            "content": {"type": "text", "text": format!("answered by {}", self.name)}
        }))
        .unwrap())
    }
}

fn call_text(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_reaches_the_session_whose_call_asked_and_no_other() {
    let g = gateway();
    let sampler = |name| Sampler {
        name,
        asked: Default::default(),
    };
    let (a, b) = (sampler("A"), sampler("B"));
    let url = g.serving.url();
    let transport = |u: &str| StreamableHttpClientTransport::from_uri(u.to_string());
    let session_a = a.clone().serve(transport(&url)).await.unwrap();
    let session_b = b.clone().serve(transport(&url)).await.unwrap();
    let (plain, _) = session(&url).await;
    let sample = |args: serde_json::Value| {
        CallToolRequestParams::new("a__test_sampling")
            .with_arguments(args.as_object().unwrap().clone())
    };
    // Both sessions' calls reach the same upstream connection at once.
    let (from_a, from_b) = tokio::join!(
        session_a.call_tool(sample(json!({"prompt": "from A"}))),
        session_b.call_tool(sample(json!({"prompt": "from B"})))
    );
    assert!(call_text(&from_a.unwrap()).contains("LLM response: answered by A"));
    assert!(call_text(&from_b.unwrap()).contains("LLM response: answered by B"));
    use std::sync::atomic::Ordering::SeqCst;
    assert_eq!((a.asked.load(SeqCst), b.asked.load(SeqCst)), (1, 1));
    // A session whose client cannot sample is never asked for another's sake.
    let refused = plain
        .call_tool(sample(json!({"prompt": "from nobody"})))
        .await
        .unwrap();
    assert!(!call_text(&refused).contains("LLM response"), "{refused:?}");
    assert_eq!((a.asked.load(SeqCst), b.asked.load(SeqCst)), (1, 1));
}

/// Calls the `mcp` tool with `args` from a session whose client samples as
/// "A", in front of the conformance upstreams; the result and how often the
/// client was asked.
async fn sampled_through_mcp(args: serde_json::Value) -> (rmcp::model::CallToolResult, usize) {
    let g = gateway_with("proxy");
    let a = Sampler {
        name: "A",
        asked: Default::default(),
    };
    let session_a = a
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(g.serving.url()))
        .await
        .unwrap();
    let request =
        CallToolRequestParams::new("mcp").with_arguments(args.as_object().unwrap().clone());
    let result = session_a.call_tool(request).await.unwrap();
    (result, a.asked.load(std::sync::atomic::Ordering::SeqCst))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_during_a_call_through_the_mcp_tool_reaches_its_session() {
    let args = json!({"tool": "a__test_sampling", "args": {"prompt": "through mcp"}});
    let (result, asked) = sampled_through_mcp(args).await;
    assert!(
        call_text(&result).contains("LLM response: answered by A"),
        "{result:?}"
    );
    assert_eq!(asked, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_during_a_scripts_call_reaches_the_session_that_runs_it() {
    let code = "return await tools.a__test_sampling({prompt: 'from a script'})";
    let (result, asked) = sampled_through_mcp(json!({"code": code})).await;
    assert!(
        call_text(&result).contains("LLM response: answered by A"),
        "{result:?}"
    );
    assert_eq!(asked, 1);
}

/// A client that declares roots and offers one directory.
struct Rooted(std::path::PathBuf);

#[allow(deprecated)] // roots: mcpw serves the initialize-era revision that has them
impl ClientHandler for Rooted {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {"listChanged": true}},
            "clientInfo": {"name": "rooted", "version": "1.0.0"}
        }))
        .unwrap()
    }

    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        let uri = format!("file://{}", self.0.display());
        Ok(serde_json::from_value(json!({"roots": [{"uri": uri, "name": "work"}]})).unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eager_server_on_stdio_gets_the_roots_of_the_one_session() {
    // server-filesystem started without directories asks the client for roots.
    let dirs = ConfigDirs::new();
    let work = dirs.root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work = work.canonicalize().unwrap();
    dirs.user(
        &json!({"mcpServers": {"fs": {"command": "node", "args": [servers().filesystem()], "lifecycle": "eager"}}})
            .to_string(),
    );
    let mut cmd = mcpw_in(&dirs.home());
    cmd.args(["serve", "--exposure", "direct"]);
    let (transport, _) =
        rmcp::transport::TokioChildProcess::builder(tokio::process::Command::from(cmd))
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
    let client = Rooted(work.clone()).serve(transport).await.unwrap();
    // The server asks for roots on its own once connected, and takes their
    // answer in when it gets it: a first call can come before that.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let allowed = client
            .call_tool(CallToolRequestParams::new("fs__list_allowed_directories"))
            .await
            .unwrap();
        let text = call_text(&allowed);
        if text.contains(&work.display().to_string()) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = client.cancel().await;
}

#[test]
fn mcpw_call_without_a_terminal_declines_an_elicitation_and_says_what_was_asked() {
    let up = Background::node(&[&servers().conformance_upstream()], &[]);
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"up": {"url": up.url("/mcp")}}}).to_string());
    let out = mcpw_in(&dirs.home())
        .args([
            "call",
            "up__test_elicitation",
            r#"{"message": "Who are you?"}"#,
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("action=decline"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(r#"server "up" asked for input ("Who are you?", fields: username, email); declined: no terminal"#),
        "{stderr}"
    );
}

/// A client that takes elicitations and never answers one; it reports each
/// request it sees cancelled.
struct Silent(mpsc::UnboundedSender<&'static str>);

impl ClientHandler for Silent {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "silent", "version": "1.0.0"}
        }))
        .unwrap()
    }

    async fn create_elicitation(
        &self,
        _params: rmcp::model::ElicitRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let _ = self.0.send("asked");
        context.ct.cancelled().await;
        let _ = self.0.send("cancelled");
        Err(rmcp::ErrorData::internal_error("cancelled", None))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_cancelling_its_request_cancels_it_at_the_client() {
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"m": {"command": "node", "args": [servers().misbehave(), "ok"]}}})
            .to_string(),
    );
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let (tx, mut seen) = mpsc::unbounded_channel();
    let client = Silent(tx)
        .serve(StreamableHttpClientTransport::from_uri(serving.url()))
        .await
        .unwrap();
    let call = CallToolRequestParams::new("m__ask_then_give_up")
        .with_arguments(json!({"ms": 500}).as_object().unwrap().clone());
    let result = client.call_tool(call).await.unwrap();
    assert!(call_text(&result).contains("gave up"), "{result:?}");
    let mut events = Vec::new();
    while events.len() < 2 {
        let next = tokio::time::timeout(Duration::from_secs(10), seen.recv()).await;
        events.push(next.expect("the client to hear of the cancel").unwrap());
    }
    assert_eq!(events, ["asked", "cancelled"]);
}

/// A client that can sample and elicit, counting what it is asked (and
/// answering at once); the progress it hears goes to a channel.
#[derive(Clone)]
struct Asked {
    name: &'static str,
    sampled: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    elicited: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    progress: mpsc::UnboundedSender<()>,
}

impl Asked {
    fn new(name: &'static str) -> (Asked, mpsc::UnboundedReceiver<()>) {
        let (progress, heard) = mpsc::unbounded_channel();
        let asked = Asked {
            name,
            sampled: Default::default(),
            elicited: Default::default(),
            progress,
        };
        (asked, heard)
    }

    fn counts(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::SeqCst;
        (self.sampled.load(SeqCst), self.elicited.load(SeqCst))
    }
}

#[allow(deprecated)] // sampling: mcpw serves the initialize-era revision that has it
impl ClientHandler for Asked {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}, "elicitation": {"form": {}}},
            "clientInfo": {"name": self.name, "version": "1.0.0"}
        }))
        .unwrap()
    }

    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.sampled
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(serde_json::from_value(json!({
            "role": "assistant", "model": "test",
            "content": {"type": "text", "text": format!("answered by {}", self.name)}
        }))
        .unwrap())
    }

    async fn create_elicitation(
        &self,
        _params: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.elicited
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(serde_json::from_value(json!({"action": "decline"})).unwrap())
    }

    async fn on_progress(
        &self,
        _params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(());
    }
}

/// Over stdio, a server's request carries nothing that says which call it
/// is for. While calls of two sessions are in flight on the server, neither
/// session is asked: sampling fails and elicitation is declined. With one
/// call in flight, its own session is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_servers_request_asks_no_session_while_two_have_calls_in_flight() {
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"e": {"command": "node", "args": [servers().everything(), "stdio"]}}})
            .to_string(),
    );
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "proxy"]);
    let url = serving.url();
    let transport = || StreamableHttpClientTransport::from_uri(url.clone());
    let ((a, _), (b, mut b_progress)) = (Asked::new("A"), Asked::new("B"));
    let session_a = a.clone().serve(transport()).await.unwrap();
    let session_b = b.clone().serve(transport()).await.unwrap();
    let mcp = |args: serde_json::Value| {
        CallToolRequestParams::new("mcp").with_arguments(args.as_object().unwrap().clone())
    };
    // Connected again now that both sessions are open: the server is offered
    // sampling and elicitation, and so offers the tools that ask for them.
    let connected = session_a
        .call_tool(mcp(json!({"connect": "e"})))
        .await
        .unwrap();
    let connected = call_text(&connected);
    for tool in ["trigger-sampling-request", "trigger-elicitation-request"] {
        assert!(connected.contains(tool), "{tool} offered: {connected}");
    }
    // B's call runs at the server (its first progress says so) ...
    let b_peer = session_b.peer().clone();
    let long = tokio::spawn(async move {
        let args = json!({"tool": "e__trigger-long-running-operation", "args": {"duration": 8, "steps": 8}});
        b_peer
            .call_tool(
                CallToolRequestParams::new("mcp").with_arguments(args.as_object().unwrap().clone()),
            )
            .await
    });
    tokio::time::timeout(Duration::from_secs(20), b_progress.recv())
        .await
        .expect("B's call to report progress");
    // ... while A's calls ask: no session is asked.
    let sampling = json!({"tool": "e__trigger-sampling-request", "args": {"prompt": "whose?"}});
    let sampled = call_text(&session_a.call_tool(mcp(sampling)).await.unwrap());
    let eliciting = json!({"tool": "e__trigger-elicitation-request", "args": {}});
    let elicited = call_text(&session_a.call_tool(mcp(eliciting)).await.unwrap());
    assert!(!long.is_finished(), "B's call was in flight all along");
    assert_eq!((a.counts(), b.counts()), ((0, 0), (0, 0)));
    assert!(
        !sampled.contains("answered by"),
        "sampling failed: {sampled}"
    );
    assert!(
        elicited.to_lowercase().contains("declin"),
        "elicitation declined: {elicited}"
    );
    long.await.unwrap().unwrap();
    // One call in flight: its own session is asked.
    let sampling = json!({"tool": "e__trigger-sampling-request", "args": {"prompt": "mine"}});
    let sampled = call_text(&session_a.call_tool(mcp(sampling)).await.unwrap());
    assert!(sampled.contains("answered by A"), "{sampled}");
    assert_eq!((a.counts(), b.counts()), ((1, 0), (0, 0)));
}
