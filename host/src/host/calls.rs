//! Calling a resolved tool: the server's result as it sent it, for the gateway
//! to forward, or presented for an agent (content mapped, a tool error with
//! the expected parameters), for the CLI, the proxy tool and Rust callers.

use super::{Host, HostError};
use crate::catalog::{Entry, ToolKind};
use crate::lifecycle::LifecycleError;
use crate::present::{self, Content};
use crate::telemetry::{self, Attribute, Span};
use crate::upstream::Called;
use rmcp::model::{CallToolResult, CreateTaskResult, ReadResourceResult};
use serde_json::{Map, Value};

pub use crate::upstream::CallOptions;

/// What the server answered, decoded once and not converted.
#[derive(Clone, Debug)]
pub enum RawResult {
    /// A tool's `tools/call` result.
    Tool(CallToolResult),
    /// A resource tool's `resources/read` result.
    Resource(ReadResourceResult),
    /// A task that will produce the tool's result (only for a call with
    /// [`CallOptions::accept_task`]).
    Task(CreateTaskResult),
    /// The server answered the request with a JSON-RPC error.
    Rpc(String),
}

/// The result of calling a tool (or reading a resource tool).
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallOutcome {
    /// The server.
    pub server: String,
    /// The tool's original name.
    pub tool: String,
    /// The agent-facing name.
    pub name: String,
    /// Content for the agent.
    pub content: Vec<Content>,
    /// `structuredContent`, when the tool returned one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reported an error.
    pub is_error: bool,
    /// For a resource tool: the URI read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// The raw MCP result.
    pub mcp_result: Value,
}

impl Host {
    /// Calls a tool by agent-facing name (reads the resource of a resource tool),
    /// connecting its server if needed. A tool error is an outcome with
    /// `is_error`, the expected parameters appended; only failing to reach the
    /// server is an `Err`.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<CallOutcome, HostError> {
        self.call_with(name, arguments, CallOptions::default())
            .await
    }

    /// [`Host::call`] with options (progress notifications).
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<CallOutcome, HostError> {
        let entry = self.resolve(name).await?;
        let raw = self.call_raw(&entry, arguments, options).await?;
        Ok(present_result(&entry, raw))
    }

    /// Calls a resolved entry and returns what the server sent. Counts the
    /// call in the metrics, and in the statistics when they are on.
    pub async fn call_raw(
        &self,
        entry: &Entry,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<RawResult, HostError> {
        let started = std::time::Instant::now();
        let tool = &entry.tool;
        let timeout = self.manager.call_timeout(&tool.server);
        let span = self.call_span(entry, arguments.as_ref());
        let call = async {
            match (&tool.kind, &tool.resource_uri) {
                (ToolKind::Resource, Some(uri)) => self
                    .manager
                    .with_connection(&tool.server, |c| async move {
                        c.read_resource(uri, timeout).await
                    })
                    .await
                    .map(RawResult::Resource),
                _ => {
                    let args = arguments.unwrap_or_default();
                    self.manager
                        .with_connection(&tool.server, |c| async move {
                            c.call_tool(&tool.name, Some(args), timeout, options).await
                        })
                        .await
                        .map(|called| match called {
                            Called::Done(result) => RawResult::Tool(result),
                            Called::Task(task) => RawResult::Task(task),
                        })
                }
            }
        };
        let result = span.run(call).await;
        let result = match result {
            Err(LifecycleError::Connect {
                error: crate::upstream::ConnectError::Rpc(message),
                ..
            }) => Ok(RawResult::Rpc(message)),
            other => other.map_err(HostError::from),
        };
        let elapsed = started.elapsed();
        let failure = Failure::of(&result);
        let failed = failure.is_some();
        end_call_span(&span, &result, failure.as_ref());
        self.metrics
            .record(&entry.tool.server, &entry.tool.name, elapsed, failed);
        self.recent.record(
            &entry.tool.server,
            &entry.tool.name,
            elapsed,
            failure.as_ref().map(|f| f.why.as_str()),
            crate::clock::now_ms(),
        );
        if let Some(stats) = &self.stats {
            self.record(stats, entry, &result, elapsed, failed);
        }
        result
    }

    /// The client span of a call to an upstream server: its server, tool
    /// and transport (the MCP semantic conventions' names, plus mcpw's).
    fn call_span(&self, entry: &Entry, arguments: Option<&Map<String, Value>>) -> Span {
        let tool = &entry.tool;
        let (method, name) = match tool.kind {
            ToolKind::Resource => ("resources/read", tool.resource_uri.as_deref().unwrap_or("")),
            _ => ("tools/call", tool.name.as_str()),
        };
        Span::client(format!("{method} {name}"), || {
            let config = self.config();
            let transport = config
                .server(&tool.server)
                .map(|s| s.config.transport.family());
            let mut a = vec![
                Attribute::new("mcp.method.name", method),
                Attribute::new("gen_ai.tool.name", tool.name.clone()),
                Attribute::new("mcpw.server", tool.server.clone()),
                Attribute::new("mcpw.tool", entry.name.clone()),
                Attribute::new("mcpw.transport", transport.unwrap_or("unknown")),
            ];
            a.extend(telemetry::content("gen_ai.tool.call.arguments", &arguments));
            a
        })
    }

    fn record(
        &self,
        stats: &std::sync::Arc<crate::stats::Stats>,
        entry: &Entry,
        result: &Result<RawResult, HostError>,
        elapsed: std::time::Duration,
        error: bool,
    ) {
        let bytes = match result {
            Ok(RawResult::Tool(r)) => serde_json::to_vec(&r.content).map_or(0, |b| b.len() as u64),
            Ok(RawResult::Resource(r)) => {
                serde_json::to_vec(&r.contents).map_or(0, |b| b.len() as u64)
            }
            _ => 0,
        };
        stats.record(
            &entry.name,
            &entry.tool.server,
            &entry.tool.name,
            elapsed,
            error,
            bytes,
        );
        if stats.claim_flush() {
            let s = stats.clone();
            tokio::spawn(async move {
                tokio::time::sleep(s.flush_delay()).await;
                if let Err(e) = tokio::task::spawn_blocking(move || s.flush())
                    .await
                    .unwrap_or(Ok(()))
                {
                    tracing::warn!("cannot write call statistics: {e}");
                }
            });
        }
    }
}

/// Runs `work`, a `method` request (on `target`) to `server` other than a
/// tool call, in a client span.
pub(crate) async fn upstream_span<T, E: std::fmt::Display>(
    method: &'static str,
    server: &str,
    target: &str,
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let name = match target {
        "" => method.to_string(),
        t => format!("{method} {t}"),
    };
    let span = Span::client(name, || {
        vec![
            Attribute::new("mcp.method.name", method),
            Attribute::new("mcpw.server", server.to_string()),
        ]
    });
    let done = span.run(work).await;
    match &done {
        Ok(_) => span.set(|| vec![Attribute::new("mcpw.outcome", "ok")]),
        Err(e) => span.fail("unreached", || e.to_string()),
    }
    done
}

/// Why a call failed: the tool said `isError`, the server answered with a
/// JSON-RPC error, or it could not be reached.
struct Failure {
    /// `tool_error`, `rpc_error` or `unreached` (a span's `error.type`).
    kind: &'static str,
    why: String,
}

impl Failure {
    fn of(result: &Result<RawResult, HostError>) -> Option<Failure> {
        let (kind, why) = match result {
            Ok(RawResult::Tool(r)) if r.is_error == Some(true) => {
                ("tool_error", "the tool reported an error".to_string())
            }
            Ok(RawResult::Rpc(e)) => ("rpc_error", e.clone()),
            Err(e) => ("unreached", e.to_string()),
            Ok(_) => return None,
        };
        Some(Failure { kind, why })
    }
}

/// Marks a call's span with its outcome: `ok`, or how it failed.
fn end_call_span(span: &Span, result: &Result<RawResult, HostError>, failure: Option<&Failure>) {
    if !span.is_recording() {
        return;
    }
    span.set(|| {
        let outcome = failure.map_or("ok", |f| f.kind);
        let mut a = vec![Attribute::new("mcpw.outcome", outcome)];
        if let Ok(RawResult::Tool(r)) = result {
            a.extend(telemetry::content("gen_ai.tool.call.result", &r.content));
        }
        a
    });
    if let Some(f) = failure {
        span.fail(f.kind, || f.why.clone());
    }
}

/// The agent's view of a result: content blocks mapped, a tool error (or a
/// JSON-RPC error) as text with the tool's expected parameters appended.
pub fn present_result(entry: &Entry, raw: RawResult) -> CallOutcome {
    let tool = &entry.tool;
    let schema = (tool.kind == ToolKind::Tool).then(|| &**tool.input_schema.object());
    let outcome = |content: Vec<Content>, structured, is_error, raw: Value| CallOutcome {
        server: tool.server.clone(),
        tool: tool.name.clone(),
        name: entry.name.clone(),
        content,
        structured_content: structured,
        is_error,
        resource_uri: tool.resource_uri.clone(),
        mcp_result: raw,
    };
    match raw {
        RawResult::Resource(r) => {
            let raw = serde_json::to_value(&r).unwrap_or(Value::Null);
            let contents = raw
                .get("contents")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            outcome(present::map_resource_contents(contents), None, false, raw)
        }
        RawResult::Tool(r) => {
            let raw = serde_json::to_value(&r).unwrap_or(Value::Null);
            let blocks = raw
                .get("content")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut content = present::map_content(blocks);
            let is_error = r.is_error == Some(true);
            if is_error {
                let text: Vec<&str> = content
                    .iter()
                    .filter_map(|c| match c {
                        Content::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let message = if text.is_empty() {
                    "Error: the tool reported an error".to_string()
                } else {
                    text.join("\n")
                };
                content.retain(|c| !matches!(c, Content::Text { .. }));
                content.insert(
                    0,
                    Content::text(present::error_with_parameters(&message, schema)),
                );
            }
            outcome(content, r.structured_content, is_error, raw)
        }
        RawResult::Task(t) => {
            let raw = serde_json::to_value(&t).unwrap_or(Value::Null);
            let text = format!(
                "The server started task \"{}\" for this call; its result comes with tasks/get.",
                t.task.task_id
            );
            outcome(vec![Content::text(text)], None, false, raw)
        }
        RawResult::Rpc(message) => {
            let text = present::error_with_parameters(&format!("Error: {message}"), schema);
            outcome(vec![Content::text(text)], None, true, Value::Null)
        }
    }
}
