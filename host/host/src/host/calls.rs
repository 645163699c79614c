//! Calling a resolved tool: the server's result as it sent it, for the gateway
//! to forward, or presented for an agent (content mapped, a tool error with
//! the expected parameters), for the CLI, the proxy tool and Rust callers.

use super::call_path::CallPath;
use super::{Host, HostError};
use crate::catalog::{Entry, ToolKind};
use crate::host::pipeline::{Caller, Ran};
use crate::lifecycle::{LifecycleError, Who};
use crate::present::{self, Content};
use crate::telemetry::{self, Attribute, Span};
use crate::upstream::{Called, Need};
use rmcp::model::{CallToolResult, CreateTaskResult, GetPromptResult, ReadResourceResult};
use serde_json::{Map, Value};

pub use crate::upstream::CallOptions;

/// What the server answered, decoded once and not converted: the one type
/// every result has on its way to the caller, which the guards see after
/// the call (see [`crate::host::pipeline`]).
#[derive(Clone, Debug)]
pub enum RawResult {
    /// A tool's `tools/call` result.
    Tool(CallToolResult),
    /// A `resources/read` result: a resource tool's, or a read's.
    Resource(ReadResourceResult),
    /// A `prompts/get` result.
    Prompt(GetPromptResult),
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
    /// connecting its server if needed, through the checks every call passes
    /// (rate limits, guards, approval, the audit line), as a local caller
    /// that nobody can be asked for (`settings.approveWithoutClient` decides).
    /// A tool error is an outcome with `is_error`, the expected parameters
    /// appended; failing to reach the server, or a refusal, is an `Err`.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<CallOutcome, HostError> {
        let caller = Caller::local(std::sync::Arc::new(crate::host::pipeline::Unattended));
        self.call_as(&caller, name, arguments, CallOptions::default())
            .await
    }

    /// [`Host::call`] for `caller`, with options (progress notifications).
    pub async fn call_as(
        &self,
        caller: &Caller,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<CallOutcome, HostError> {
        let entry = self.resolve(name).await?;
        match self.run_call(caller, &entry, arguments, options).await {
            Ran::Done(raw) => Ok(present_result(&entry, raw?)),
            Ran::Refused(why) => Err(HostError::Refused(why)),
            Ran::Withheld(why) => Err(HostError::Withheld(why)),
        }
    }

    /// The result of a call of `entry` that ran as a task, as `tasks/get`
    /// brings it: the guards see it after, as any call's, and it is
    /// observed once (the audit line, the metrics).
    pub async fn task_result(&self, caller: &Caller, entry: &Entry, result: CallToolResult) -> Ran {
        let started = tokio::time::Instant::now();
        crate::host::pipeline::task_result(&*self.calls, caller, entry, None, result, started).await
    }

    /// The client's answers to the questions of a task that a call of
    /// `entry` made, as the guards before let them go to its server (see
    /// `crate::host::pipeline::task_update`), or why they do not go.
    pub async fn task_update(
        &self,
        caller: &Caller,
        entry: &Entry,
        params: rmcp::model::UpdateTaskParams,
    ) -> Result<rmcp::model::UpdateTaskParams, HostError> {
        let Ok(Value::Object(asked)) = serde_json::to_value(&params) else {
            return Ok(params);
        };
        let sent = crate::host::pipeline::task_update(&*self.calls, caller, entry, asked)
            .await
            .map_err(HostError::Refused)?;
        serde_json::from_value(Value::Object(sent)).map_err(|e| {
            HostError::Refused(format!(
                "a guard's rewrite of a task's answers cannot be sent ({e})"
            ))
        })
    }

    /// Runs the call of a resolved entry for `caller` along the one call
    /// path (see [`crate::host::pipeline`]).
    pub async fn run_call(
        &self,
        caller: &Caller,
        entry: &Entry,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Ran {
        // On the heap: a call nested in another request's handling (the
        // proxy's call on a replica that took the session up) would
        // otherwise overflow a worker's stack in debug builds.
        Box::pin(crate::host::pipeline::run(
            &*self.calls,
            caller,
            entry,
            arguments,
            options,
        ))
        .await
    }
}

impl CallPath {
    /// The call of a resolved entry on its server, in a client span: what
    /// the server sent. Only the call path ([`crate::host::pipeline`]) calls it,
    /// after its checks.
    pub(crate) async fn upstream_call(
        &self,
        who: Who<'_>,
        entry: &Entry,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<RawResult, HostError> {
        let tool = &entry.tool;
        let timeout = self.manager.call_timeout(&tool.server);
        let span = self.call_span(entry, arguments.as_ref());
        let call = async {
            match (&tool.kind, &tool.resource_uri) {
                (ToolKind::Resource, Some(uri)) => self
                    .manager
                    .with_connection_as(&tool.server, who, Need::Any, |c| async move {
                        c.read_resource(uri, timeout, &options).await
                    })
                    .await
                    .map(RawResult::Resource),
                _ => {
                    let args = arguments.unwrap_or_default();
                    self.manager
                        .with_connection_as(
                            &tool.server,
                            who,
                            options.need(&tool.name),
                            |c| async move {
                                c.call_tool(&tool.name, Some(args), timeout, options).await
                            },
                        )
                        .await
                        .map(|called| match called {
                            Called::Done(result) => RawResult::Tool(result),
                            Called::Task(task) => RawResult::Task(task),
                        })
                }
            }
        };
        let result = match span.run(call).await {
            Err(LifecycleError::Connect {
                error: crate::upstream::ConnectError::Rpc(message),
                ..
            }) => Ok(RawResult::Rpc(message)),
            other => other.map_err(HostError::from),
        };
        end_call_span(&span, &result);
        result
    }

    /// Counts a call that ran in the metrics, the live page's history and,
    /// when they are on, the statistics.
    pub(crate) fn count_call(
        &self,
        seen: &crate::host::pipeline::Observed,
        call: &crate::host::pipeline::CallSeen,
    ) {
        let failed = call.failure.is_some();
        self.metrics
            .record(&seen.server, &seen.tool, call.elapsed, failed);
        if let Some(p) = &seen.labels {
            let client = crate::metrics::ClientLabel {
                token: &p.token,
                groups: &p.groups,
            };
            self.metrics
                .record_client(client, &seen.server, &seen.tool, failed);
        }
        self.recent.record(
            &seen.server,
            &seen.tool,
            call.elapsed,
            call.failure.as_ref().map(|f| f.1.as_str()),
            crate::clock::now_ms(),
        );
        if let Some(stats) = &self.stats {
            self.record(stats, seen, call);
        }
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
        seen: &crate::host::pipeline::Observed,
        call: &crate::host::pipeline::CallSeen,
    ) {
        stats.record(
            &seen.name,
            &seen.server,
            &seen.tool,
            call.elapsed,
            call.failure.is_some(),
            call.content_bytes,
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

/// Marks a call's span with its outcome: `ok`, or how it failed.
fn end_call_span(span: &Span, result: &Result<RawResult, HostError>) {
    if !span.is_recording() {
        return;
    }
    let failure = crate::host::pipeline::CallSeen::of(result, Default::default(), false).failure;
    span.set(|| {
        let outcome = failure.as_ref().map_or("ok", |f| f.0);
        let mut a = vec![Attribute::new("mcpw.outcome", outcome)];
        if let Ok(RawResult::Tool(r)) = result {
            a.extend(telemetry::content("gen_ai.tool.call.result", &r.content));
        }
        a
    });
    if let Some((kind, why)) = failure {
        span.fail(kind, || why);
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
        RawResult::Prompt(p) => {
            let raw = serde_json::to_value(&p).unwrap_or(Value::Null);
            let blocks: Vec<Value> = p
                .messages
                .iter()
                .filter_map(|m| serde_json::to_value(&m.content).ok())
                .collect();
            outcome(present::map_content(&blocks), None, false, raw)
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
