//! Between mcpw's values and rmcp's model types: errors, results, and what
//! a request's client declares.

use crate::present::Content;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, Tool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

pub(super) fn internal(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(e.to_string(), None)
}

/// Builds an rmcp value from JSON (rmcp's model types are non-exhaustive).
pub(super) fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(internal)
}

/// rmcp reads a request whose params do not fit its method's type as a custom
/// request: for a method MCP defines, that is invalid params (-32602), not an
/// unknown method.
#[allow(deprecated)] // logging and resources/subscribe are in every revision before 2026-07-28
pub(super) fn custom_request_error(request: &rmcp::model::CustomRequest) -> McpError {
    use rmcp::model::*;
    let body = || json!({"method": request.method, "params": request.params});
    macro_rules! known {
        ($($method:ty => $request:ty),* $(,)?) => {$(
            if request.method == <$method as ConstString>::VALUE {
                let why = serde_json::from_value::<$request>(body())
                    .err()
                    .map_or_else(|| "they do not fit".to_string(), |e| e.to_string());
                let message = format!("invalid params for {}: {why}", request.method);
                return McpError::invalid_params(message, None);
            }
        )*};
    }
    known!(
        InitializeResultMethod => InitializeRequest, DiscoverRequestMethod => DiscoverRequest,
        CompleteRequestMethod => CompleteRequest, SetLevelRequestMethod => SetLevelRequest,
        GetPromptRequestMethod => GetPromptRequest, ListPromptsRequestMethod => ListPromptsRequest,
        ListResourcesRequestMethod => ListResourcesRequest,
        ListResourceTemplatesRequestMethod => ListResourceTemplatesRequest,
        ReadResourceRequestMethod => ReadResourceRequest,
        SubscriptionsListenRequestMethod => SubscriptionsListenRequest,
        SubscribeRequestMethod => SubscribeRequest, UnsubscribeRequestMethod => UnsubscribeRequest,
        CallToolRequestMethod => CallToolRequest, ListToolsRequestMethod => ListToolsRequest,
        GetTaskMethod => GetTaskRequest, UpdateTaskMethod => UpdateTaskRequest,
        CancelTaskMethod => CancelTaskRequest, ListSkillsRequestMethod => ListSkillsRequest,
        GetSkillRequestMethod => GetSkillRequest,
        ReadResourceDirectoryRequestMethod => ReadResourceDirectoryRequest,
    );
    McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method.clone(), None)
}
/// Whether the client of a request declares MCP Apps.
pub(super) fn takes_apps(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| serde_json::to_value(c).ok())
        .is_some_and(|c| c.as_object().is_some_and(crate::apps::declared))
}

/// Tools as a client that does not declare MCP Apps gets them: without
/// the views only a host of apps uses.
pub(super) fn apps_left_out(tools: &mut [Tool]) {
    for tool in tools {
        let Some(meta) = tool.meta.as_ref().filter(|m| crate::apps::has_ui(m)) else {
            continue;
        };
        let kept = crate::apps::without_ui(meta);
        tool.meta = kept.map(rmcp::model::MetaObject);
    }
}

/// A `tools/call` result from content, details and the error flag.
pub(crate) fn result(
    content: &[Content],
    structured: Option<Value>,
    is_error: bool,
) -> Result<CallToolResult, McpError> {
    let mut v = json!({"content": content, "isError": is_error});
    if let Some(s) = structured {
        v["structuredContent"] = s;
    }
    from_json(v)
}
