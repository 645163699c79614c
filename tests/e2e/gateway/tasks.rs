//! Tasks (the `io.modelcontextprotocol/tasks` extension) through `mcpw serve
//! --http`, in front of a server made with rmcp's own task runtime (the only
//! implementation of the extension among the SDKs here). A client that takes
//! tasks gets the server's task and drives it through mcpw; a client that does
//! not gets the result, with the task's questions asked of it, and a task it
//! gives up on is cancelled at the server.

use crate::common::ConfigDirs;
use crate::servers::{MCPW, Serving, rmcp_tool, rmcp_upstream};
use mcpw_test_support::eventually;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, GetTaskParams, GetTaskResult, InputRequest, ListToolsResult,
    PaginatedRequestParams, TaskPayload, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData as McpError, ServiceExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// A server whose tools run as tasks when the client takes them:
/// `sum` adds, `confirm` asks the client a question mid-task, `forever` runs
/// until cancelled (and reports that it was).
#[derive(Clone)]
struct TaskServer {
    tasks: TaskManager,
    cancelled: mpsc::UnboundedSender<String>,
}

fn tool(name: &str) -> rmcp::model::Tool {
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}});
    rmcp_tool(name, &format!("{name} (runs as a task)"), schema)
}

fn text_result(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

impl TaskServer {
    async fn run(
        name: String,
        args: serde_json::Map<String, Value>,
        ctx: rmcp::task_manager::TaskContext,
        cancelled: mpsc::UnboundedSender<String>,
    ) -> Result<CallToolResult, TaskExit> {
        match name.as_str() {
            "sum" => {
                let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                Ok(text_result(format!("sum = {}", n("a") + n("b"))))
            }
            "confirm" => {
                let ask = json!({"method": "elicitation/create", "params": {
                    "message": "Go ahead?",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
                }});
                let request: InputRequest = serde_json::from_value(ask).unwrap();
                let answer = ctx.request_input("go", request).await?;
                Ok(text_result(format!("answered {answer}")))
            }
            _ => {
                ctx.cancelled().await;
                let _ = cancelled.send(ctx.task_id().to_string());
                Err(TaskExit::Cancelled)
            }
        }
    }
}

impl ServerHandler for TaskServer {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "extensions": {rmcp::model::TASKS_EXTENSION_ID: {}}},
            "serverInfo": {"name": "task-server", "version": "1.0.0"}
        }))
        .unwrap()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![
            tool("sum"),
            tool("confirm"),
            tool("forever"),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let takes_tasks = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        assert!(takes_tasks, "mcpw offers every server tasks");
        let (name, args) = (
            request.name.to_string(),
            request.arguments.unwrap_or_default(),
        );
        let cancelled = self.cancelled.clone();
        let options = TaskOptions::new().with_poll_interval_ms(20);
        let task = self.tasks.spawn(options, move |ctx| {
            Box::pin(TaskServer::run(name, args, ctx, cancelled))
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.tasks
            .get_task(&request.task_id)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }
}

/// The task server on a loopback port, `mcpw serve --http --exposure direct`
/// in front of it (calls time out after `call_timeout_ms`), and the ids of the
/// tasks the server saw cancelled.
struct Setup {
    _dirs: ConfigDirs,
    serving: Serving,
    cancelled: mpsc::UnboundedReceiver<String>,
}

async fn setup(call_timeout_ms: u64) -> Setup {
    setup_with(call_timeout_ms, json!({})).await
}

/// [`setup`] with more of the user's config (`serve`, `settings`).
async fn setup_with(call_timeout_ms: u64, more: Value) -> Setup {
    let (tx, cancelled) = mpsc::unbounded_channel();
    let server = TaskServer {
        tasks: TaskManager::new(),
        cancelled: tx,
    };
    let url = rmcp_upstream(server).await;
    let dirs = ConfigDirs::new();
    let mut config = json!({"mcpServers": {"up": {"url": url, "callTimeoutMs": call_timeout_ms}}});
    config
        .as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    dirs.user(&config.to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    Setup {
        _dirs: dirs,
        serving,
        cancelled,
    }
}

/// A client of the 2025-11-25 revision that takes tasks (or not) and answers
/// elicitations with `{"ok": true}`, counting them.
#[derive(Clone)]
struct Client {
    tasks: bool,
    asked: Arc<std::sync::atomic::AtomicUsize>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut caps = json!({"elicitation": {"form": {}}});
        if self.tasks {
            caps["extensions"] = json!({rmcp::model::TASKS_EXTENSION_ID: {}});
        }
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": caps,
            "clientInfo": {"name": "task-client", "version": "1.0.0"}
        }))
        .unwrap()
    }

    async fn create_elicitation(
        &self,
        _params: rmcp::model::ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, McpError> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(serde_json::from_value(json!({"action": "accept", "content": {"ok": true}})).unwrap())
    }
}

async fn client(url: &str, tasks: bool) -> (RunningService<RoleClient, Client>, Client) {
    client_with(url, tasks, None).await
}

/// [`client`] with a client token.
async fn client_with(
    url: &str,
    tasks: bool,
    token: Option<&str>,
) -> (RunningService<RoleClient, Client>, Client) {
    let handler = Client {
        tasks,
        asked: Default::default(),
    };
    let mut config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    (handler.clone().serve(transport).await.unwrap(), handler)
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string()).with_arguments(args.as_object().unwrap().clone())
}

fn result_text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap().to_string()
}

/// Polls `tasks/get` through mcpw (a state the client has no notification
/// for) until `done` accepts the task's payload.
async fn wait_for_task(
    session: &RunningService<RoleClient, Client>,
    id: &str,
    mut done: impl FnMut(&TaskPayload) -> bool,
) -> GetTaskResult {
    let mut last = None;
    let what = format!("task {id} to reach the state awaited");
    eventually(&what, Duration::from_secs(10), async || {
        let got = session.get_task(GetTaskParams::new(id)).await.unwrap();
        assert_eq!(got.task.task.task_id, id, "the id the client knows");
        let reached = done(&got.task.payload);
        last = Some(got);
        reached
    })
    .await;
    last.expect("looked at least once")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_takes_tasks_gets_the_servers_task_and_drives_it_through_mcpw() {
    let mut s = setup(30_000).await;
    let (session, handler) = client(&s.serving.url(), true).await;

    let started = |r: CallToolResponse| match r {
        CallToolResponse::Task(t) => t.task.task_id,
        other => panic!("not a task: {other:?}"),
    };
    // A task's result.
    let id = started(
        session
            .call_tool_once(call("up__sum", json!({"a": 2, "b": 3})))
            .await
            .unwrap(),
    );
    assert!(id.starts_with("up/"), "{id}");
    let done = wait_for_task(&session, &id, |p| {
        matches!(p, TaskPayload::Completed { .. })
    })
    .await;
    let TaskPayload::Completed { result } = done.task.payload else {
        unreachable!()
    };
    assert_eq!(result["content"][0]["text"], "sum = 5");

    // A task's question, answered with tasks/update.
    let id = started(
        session
            .call_tool_once(call("up__confirm", json!({})))
            .await
            .unwrap(),
    );
    let asking = wait_for_task(&session, &id, |p| {
        matches!(p, TaskPayload::InputRequired { .. })
    })
    .await;
    let TaskPayload::InputRequired { input_requests } = asking.task.payload else {
        unreachable!()
    };
    assert!(
        serde_json::to_string(&input_requests["go"])
            .unwrap()
            .contains("Go ahead?")
    );
    let answer = [(
        "go".to_string(),
        json!({"action": "accept", "content": {"ok": true}}),
    )];
    session
        .update_task(UpdateTaskParams::new(&id, answer.into_iter().collect()))
        .await
        .unwrap();
    let done = wait_for_task(&session, &id, |p| {
        matches!(p, TaskPayload::Completed { .. })
    })
    .await;
    let TaskPayload::Completed { result } = done.task.payload else {
        unreachable!()
    };
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(r#""ok":true"#)
    );
    // The question went into the task, not to the client as a request.
    assert_eq!(handler.asked.load(std::sync::atomic::Ordering::SeqCst), 0);

    // A task cancelled through mcpw.
    let id = started(
        session
            .call_tool_once(call("up__forever", json!({})))
            .await
            .unwrap(),
    );
    session
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), s.cancelled.recv())
        .await
        .expect("the server saw the cancel");
    assert_eq!(seen.map(|t| format!("up/{t}")), Some(id.clone()));
    wait_for_task(&session, &id, |p| matches!(p, TaskPayload::Cancelled)).await;

    // An id that names no server.
    let unknown = session.get_task(GetTaskParams::new("nowhere/1")).await;
    assert!(
        format!("{unknown:?}").contains("unknown task"),
        "{unknown:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_tasks_gets_results_its_questions_and_a_cancel_on_timeout() {
    let mut s = setup(1_500).await;
    let (session, handler) = client(&s.serving.url(), false).await;

    let sum = session
        .call_tool(call("up__sum", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(result_text(&sum), r#"[{"type":"text","text":"sum = 5"}]"#);

    // The task's question reaches this session as an elicitation.
    let confirmed = session
        .call_tool(call("up__confirm", json!({})))
        .await
        .unwrap();
    assert!(
        result_text(&confirmed).contains(r#"\"ok\":true"#),
        "{confirmed:?}"
    );
    assert_eq!(handler.asked.load(std::sync::atomic::Ordering::SeqCst), 1);

    // mcpw gives up on the task at the call timeout and cancels it upstream.
    let timed_out = session
        .call_tool(call("up__forever", json!({})))
        .await
        .unwrap();
    assert_eq!(timed_out.is_error, Some(true), "{timed_out:?}");
    assert!(result_text(&timed_out).contains("1500"), "{timed_out:?}");
    let seen = tokio::time::timeout(Duration::from_secs(10), s.cancelled.recv())
        .await
        .expect("the server saw the cancel");
    assert!(seen.is_some());
}

/// A task is the client's it was given to: another client that sees the
/// same server is told it is unknown, and can neither poll, answer nor
/// cancel it. Polls write no audit line; the task's end writes one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_reached_only_by_the_client_it_was_given_to() {
    let audit = tempfile::tempdir().unwrap();
    let trail = audit.path().join("audit.jsonl");
    let more = json!({
        "serve": {"tokens": [{"name": "alice", "token": "alice-token-0001"},
                             {"name": "bob", "token": "bob-token-0002"}]},
        "settings": {"audit": {"path": trail.display().to_string()}}});
    let mut s = setup_with(30_000, more).await;
    let (alice, _) = client_with(&s.serving.url(), true, Some("alice-token-0001")).await;
    let (bob, _) = client_with(&s.serving.url(), true, Some("bob-token-0002")).await;
    let id = match alice
        .call_tool_once(call("up__forever", json!({})))
        .await
        .unwrap()
    {
        CallToolResponse::Task(t) => t.task.task_id,
        other => panic!("not a task: {other:?}"),
    };
    let unknown = |r: String| assert!(r.contains("unknown task"), "{r}");
    unknown(format!("{:?}", bob.get_task(GetTaskParams::new(&id)).await));
    unknown(format!(
        "{:?}",
        bob.cancel_task(CancelTaskParams::new(&id)).await
    ));
    let answer = UpdateTaskParams::new(&id, Default::default());
    unknown(format!("{:?}", bob.update_task(answer).await));
    assert!(
        alice.get_task(GetTaskParams::new(&id)).await.is_ok(),
        "alice's own"
    );
    alice.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), s.cancelled.recv()).await;
    assert!(seen.is_ok(), "the server saw alice's cancel");
    wait_for_task(&alice, &id, |p| matches!(p, TaskPayload::Cancelled)).await;
    alice.get_task(GetTaskParams::new(&id)).await.ok();
    let lines: Vec<Value> = std::fs::read_to_string(&trail)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ended: Vec<&Value> = lines.iter().filter(|l| l["via"] == "task").collect();
    assert_eq!(ended.len(), 1, "one line for the task's end: {lines:#?}");
    assert_eq!(ended[0]["client"], "alice");
    assert_eq!(ended[0]["tool"], "forever");
    assert!(
        ended[0]["reason"].as_str().unwrap().contains("cancelled"),
        "{lines:#?}"
    );
    let calls = lines.iter().filter(|l| l["via"] == "call").count();
    assert_eq!(calls, 1, "polls write no line: {lines:#?}");
}

/// A tool that runs as a task answers with its result on every way in that
/// cannot hand the client a task, whatever the client takes: the proxy's
/// `mcp`, a script in code mode (its questions asked of the client), the
/// Rust API's `Host::call` and `mcpw call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_tools_result_comes_on_every_way_in() {
    let (tx, _cancelled) = mpsc::unbounded_channel();
    let server = TaskServer {
        tasks: TaskManager::new(),
        cancelled: tx,
    };
    let url = rmcp_upstream(server).await;
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"up": {"url": url}}}).to_string());
    let sum = json!({"a": 2, "b": 3});
    let ways = [
        ("proxy", "mcp", json!({"tool": "up__sum", "args": sum})),
        (
            "code",
            "code",
            json!({"code": "const s = await tools.up__sum({a: 2, b: 3}); const c = await tools.up__confirm({}); return [s, c];"}),
        ),
    ];
    for (exposure, tool, arguments) in ways {
        let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", exposure]);
        let (session, handler) = client(&serving.url(), true).await;
        let answer = session.call_tool_once(call(tool, arguments)).await.unwrap();
        let CallToolResponse::Complete(result) = answer else {
            panic!("{exposure}: a task where a result was due: {answer:?}")
        };
        let text = result_text(&result);
        assert!(text.contains("sum = 5"), "{exposure}: {text}");
        if exposure == "code" {
            assert!(text.contains("ok"), "the task's question answered: {text}");
            let asked = handler.asked.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(asked, 1, "the script's task asked its client");
        }
        session.cancel().await.unwrap();
    }
    let host = crate::common::host_with_config(&dirs, |_| {}).await;
    let result = host
        .call("up__sum", json!({"a": 2, "b": 3}).as_object().cloned())
        .await
        .unwrap();
    let told = serde_json::to_string(&result.content).unwrap();
    assert!(told.contains("sum = 5"), "{told}");
    host.shutdown().await;
    let out = crate::servers::mcpw_in(&dirs.home())
        .args(["call", "up__sum", r#"{"a": 2, "b": 3}"#])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("sum = 5"), "{said}");
}
