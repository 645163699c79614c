//! A server span for every request a session makes of the gateway, under the
//! trace its client passed (`_meta.traceparent`, else the HTTP
//! `traceparent` header), with the request's own work (upstream calls,
//! guests, searches) as its children.

use crate::telemetry::{self, Attribute, Span};
use opentelemetry::trace::SpanKind;
use rmcp::ErrorData as McpError;
use rmcp::service::{RequestContext, RoleServer};

/// The span of the request `context` for `method` (on `target`: a tool,
/// prompt or resource), named as the MCP semantic conventions say
/// (`tools/call echo`). A no-op when tracing is off.
pub(super) fn span(
    context: &RequestContext<RoleServer>,
    method: &'static str,
    target: Option<&str>,
) -> Span {
    if !telemetry::enabled() {
        return Span::default();
    }
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let header = |name: &str| {
        parts
            .and_then(|p| p.headers.get(name))
            .and_then(|v| v.to_str().ok())
    };
    let parent = telemetry::extract(
        context.meta.get_traceparent(),
        context.meta.get_tracestate(),
    )
    .or_else(|| telemetry::extract(header("traceparent"), header("tracestate")))
    .unwrap_or_default();
    let name = match target {
        Some(t) => format!("{method} {t}"),
        None => method.to_string(),
    };
    Span::start(name, SpanKind::Server, &parent, || {
        let mut a = vec![
            Attribute::new("mcp.method.name", method),
            Attribute::new("jsonrpc.request.id", context.id.to_string()),
            Attribute::new(
                "network.transport",
                if parts.is_some() { "tcp" } else { "pipe" },
            ),
        ];
        if let Some(session) = header("mcp-session-id") {
            a.push(Attribute::new("mcp.session.id", session.to_string()));
        }
        // Who asked: a token's name or a principal's, never the token.
        let client = parts.and_then(|p| p.extensions.get::<super::ClientScope>());
        if let Some(client) = client.filter(|c| !c.name().is_empty()) {
            a.push(Attribute::new("enduser.id", client.name().to_string()));
        }
        if let Some(t) = target {
            let key = match method {
                "tools/call" => "gen_ai.tool.name",
                "prompts/get" => "gen_ai.prompt.name",
                _ => "mcp.resource.uri",
            };
            a.push(Attribute::new(key, t.to_string()));
        }
        a
    })
}

/// Runs a request's handling in its span, and marks the span with how it
/// ended.
pub(super) async fn run<T: Outcome>(
    span: Span,
    work: impl Future<Output = Result<T, McpError>>,
) -> Result<T, McpError> {
    // On the heap: a handler's future is large, and a session's requests
    // nest several (the proxy tool's call inside its request, say), which a
    // worker thread's stack must otherwise hold at once.
    let answer = span.run(Box::pin(work)).await;
    match &answer {
        Err(e) => span.fail("jsonrpc_error", || e.message.to_string()),
        Ok(r) if r.is_tool_error() => {
            span.fail("tool_error", || "the tool reported an error".into())
        }
        Ok(_) => {}
    }
    answer
}

/// What an answer says of its own failure.
pub(super) trait Outcome {
    /// Did a tool report an error (`isError`)?
    fn is_tool_error(&self) -> bool {
        false
    }
}

impl Outcome for rmcp::model::CallToolResponse {
    fn is_tool_error(&self) -> bool {
        matches!(self, rmcp::model::CallToolResponse::Complete(r) if r.is_error == Some(true))
    }
}

macro_rules! no_tool_error {
    ($($t:ty),*) => { $(impl Outcome for $t {})* };
}
no_tool_error!(
    (),
    rmcp::model::DiscoverResult,
    rmcp::model::InitializeResult,
    rmcp::model::ListToolsResult,
    rmcp::model::ListPromptsResult,
    rmcp::model::GetPromptResponse,
    rmcp::model::GetPromptResult,
    rmcp::model::ReadResourceResult,
    rmcp::model::ListResourcesResult,
    rmcp::model::ListResourceTemplatesResult,
    rmcp::model::ReadResourceResponse,
    rmcp::model::GetTaskResult,
    rmcp::model::ListSkillsResult,
    rmcp::model::GetSkillResult,
    rmcp::model::CompleteResult
);
