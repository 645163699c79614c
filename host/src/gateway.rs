//! `mcpw serve`: mcpw as an MCP server in front of every configured server.
//!
//! Three exposures: `proxy` (one `mcp` tool, ~200 tokens however many tools
//! exist), `tool-search` (direct tools plus `ToolSearch`, which loads more on
//! demand and announces them with `notifications/tools/list_changed`), and
//! `direct` (every tool). Upstream prompts are forwarded under prefixed names;
//! progress notifications and cancellation pass through calls.

pub mod http;
mod proxy;
mod tool_search;

use crate::host::{CallOptions, Host, HostError};
use crate::lifecycle::LifecycleEvent;
use crate::present::Content;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListToolsResult, PaginatedRequestParams, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// How upstream tools are shown to the agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Exposure {
    /// One `mcp` tool.
    #[default]
    Proxy,
    /// Direct tools plus `ToolSearch`.
    ToolSearch,
    /// Every tool.
    Direct,
}

impl Exposure {
    /// Parses `proxy`, `tool-search` or `direct`.
    pub fn parse(s: &str) -> Option<Exposure> {
        match s {
            "proxy" => Some(Exposure::Proxy),
            "tool-search" => Some(Exposure::ToolSearch),
            "direct" => Some(Exposure::Direct),
            _ => None,
        }
    }
}

/// Default `settings.toolSearchBudget`: tokens the ToolSearch description may
/// spend listing deferred tools.
pub const DEFAULT_TOOL_SEARCH_BUDGET: usize = 1000;

/// What every session of one `mcpw serve` shares.
pub struct Shared {
    host: Arc<Host>,
    /// Connects servers whose tools are unknown (nothing cached), once, before
    /// the first answer that needs the catalog.
    bootstrap: tokio::sync::OnceCell<()>,
    exposure: Exposure,
    budget: usize,
}

impl Shared {
    /// State for serving `host` with `exposure`.
    pub fn new(host: Arc<Host>, exposure: Exposure) -> Arc<Shared> {
        let budget = host
            .config()
            .settings
            .raw
            .get("toolSearchBudget")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_TOOL_SEARCH_BUDGET, |b| b as usize);
        Arc::new(Shared {
            host,
            exposure,
            bootstrap: tokio::sync::OnceCell::new(),
            budget,
        })
    }

    /// Waits until every server has been listed at least once (from the cache
    /// or by connecting); failures are recorded in the status, not returned.
    pub async fn ready(&self) {
        self.bootstrap
            .get_or_init(|| self.host.bootstrap(|_, _| {}))
            .await;
    }

    /// Has every server been listed at least once?
    fn is_ready(&self) -> bool {
        self.bootstrap.initialized()
    }

    /// Resolves a tool name for a call. A known name (or one whose server
    /// prefix says where it lives) resolves at once; only an unknown one waits
    /// until every server has been listed, then is looked up again.
    pub async fn resolve(&self, name: &str) -> Result<crate::catalog::Entry, HostError> {
        let resolved = self.host.resolve(name).await;
        if matches!(resolved, Err(HostError::ToolNotFound { .. })) && !self.is_ready() {
            self.ready().await;
            return self.host.resolve(name).await;
        }
        resolved
    }

    /// The host behind the gateway.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }
}

/// One MCP session of the gateway.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
    /// Tools this session loaded with ToolSearch: each agent its own list.
    activated: Arc<Mutex<BTreeSet<String>>>,
}

impl Gateway {
    /// A session over shared state.
    pub fn new(shared: Arc<Shared>) -> Self {
        Gateway {
            shared,
            activated: Default::default(),
        }
    }
}

fn internal(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(e.to_string(), None)
}

/// Builds an rmcp value from JSON (rmcp's model types are non-exhaustive).
fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(internal)
}

/// An MCP tool definition for a catalog entry.
pub(crate) fn tool_json(entry: &crate::catalog::Entry) -> Value {
    let t = &entry.tool;
    let mut schema = match &t.input_schema {
        Value::Object(m) => Value::Object(m.clone()),
        _ => json!({}),
    };
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    let mut tool = json!({"name": entry.name, "description": t.description, "inputSchema": schema});
    if let Some(title) = &t.title {
        tool["title"] = json!(title);
    }
    if let Some(a) = &t.annotations {
        tool["annotations"] = a.clone();
    }
    tool
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

impl Gateway {
    async fn tools(&self) -> Result<Vec<Tool>, McpError> {
        let host = &self.shared.host;
        if self.shared.exposure != Exposure::Proxy {
            self.shared.ready().await;
        }
        let values: Vec<Value> = match self.shared.exposure {
            Exposure::Proxy => vec![proxy::tool_definition(host)],
            Exposure::Direct => host
                .entries()
                .await
                .map_err(internal)?
                .iter()
                .map(tool_json)
                .collect(),
            Exposure::ToolSearch => {
                let entries = host.entries().await.map_err(internal)?;
                let mut shown: BTreeSet<String> = host
                    .direct_entries()
                    .await
                    .map_err(internal)?
                    .into_iter()
                    .map(|e| e.name)
                    .collect();
                shown.extend(
                    self.activated
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .iter()
                        .cloned(),
                );
                let mut v = vec![tool_search::definition(
                    host,
                    &entries,
                    &shown,
                    self.shared.budget,
                )];
                v.extend(
                    entries
                        .iter()
                        .filter(|e| shown.contains(&e.name))
                        .map(tool_json),
                );
                v
            }
        };
        values.into_iter().map(from_json).collect()
    }

    /// One attempt at a call; the client cancelling it is an error of its own.
    async fn call_once(
        &self,
        name: &str,
        args: Option<serde_json::Map<String, Value>>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Result<crate::host::CallOutcome, HostError>, McpError> {
        let call = self
            .shared
            .host
            .call_with(name, args, progress_forwarding(context));
        tokio::select! {
            r = call => Ok(r),
            _ = context.ct.cancelled() => Err(McpError::internal_error("cancelled by the client", None)),
        }
    }

    /// Calls an upstream tool for the agent, forwarding progress and cancellation.
    async fn call_upstream(
        &self,
        name: &str,
        args: Option<serde_json::Map<String, Value>>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let outcome = match self.shared.resolve(name).await {
            Ok(entry) => self.call_once(&entry.name, args, context).await?,
            Err(e) => Err(e),
        };
        match outcome {
            // An MCP client takes every kind of content: the server's blocks
            // (audio, resource links, annotations) pass through as they are.
            Ok(out)
                if !out.is_error
                    && out.resource_uri.is_none()
                    && out.mcp_result.get("content").is_some_and(Value::is_array) =>
            {
                let mut v = json!({"content": out.mcp_result["content"], "isError": false});
                if let Some(s) = out.structured_content {
                    v["structuredContent"] = s;
                }
                from_json(v)
            }
            Ok(out) => result(&out.content, out.structured_content, out.is_error),
            Err(e @ HostError::ToolNotFound { .. }) => {
                result(&[Content::text(e.to_string())], None, true)
            }
            Err(e) => result(&[Content::text(format!("Error: {e}"))], None, true),
        }
    }
}

/// Forwards the upstream call's progress to the client, when the client asked
/// for progress (a `progressToken` in `_meta`).
fn progress_forwarding(context: &RequestContext<RoleServer>) -> CallOptions {
    let Some(token) = context.meta.get_progress_token() else {
        return CallOptions::default();
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<crate::upstream::ProgressUpdate>();
    let peer = context.peer.clone();
    tokio::spawn(async move {
        while let Some(u) = rx.recv().await {
            let mut p = json!({"progressToken": token.0, "progress": u.progress});
            if let Some(t) = u.total {
                p["total"] = json!(t);
            }
            if let Some(m) = u.message {
                p["message"] = json!(m);
            }
            if let Ok(param) = serde_json::from_value(p) {
                let _ = peer.notify_progress(param).await;
            }
        }
    });
    CallOptions { progress: Some(tx) }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let instructions = match self.shared.exposure {
            Exposure::Proxy => {
                "Every MCP server configured in mcpw is reachable through the `mcp` tool: call it with no arguments for status, `search` to find tools, `describe` for parameters, `tool` + `args` to call."
            }
            Exposure::ToolSearch => {
                "Tools of many MCP servers are available. Most are loaded on demand: call `ToolSearch` with keywords (or `select:name`) and the matching tools join your tool list."
            }
            Exposure::Direct => {
                "Tools of every MCP server configured in mcpw, named <server>__<tool>."
            }
        };
        serde_json::from_value(json!({
            "protocolVersion": rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": {"tools": {"listChanged": self.shared.exposure != Exposure::Proxy}, "prompts": {"listChanged": true}},
            "serverInfo": {"name": "mcpw", "version": env!("CARGO_PKG_VERSION")},
            "instructions": instructions,
        }))
        .expect("a valid server info")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        from_json(json!({"tools": self.tools().await?}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request.arguments.clone();
        let result = match (self.shared.exposure, name.as_str()) {
            (Exposure::Proxy, proxy::TOOL_NAME) => {
                proxy::call(self, args.unwrap_or_default(), &context).await?
            }
            (Exposure::Proxy, _) => result(
                &[Content::text(format!(
                    "Unknown tool \"{name}\": this gateway exposes one tool, `mcp`."
                ))],
                None,
                true,
            )?,
            (Exposure::ToolSearch, tool_search::TOOL_NAME) => {
                tool_search::call(self, args.unwrap_or_default(), &context).await?
            }
            _ => self.call_upstream(&name, args, &context).await?,
        };
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.shared.ready().await;
        let prompts: Vec<Value> = self
            .shared
            .host
            .prompts()
            .into_iter()
            .map(|p| {
                let mut v = p.prompt.clone();
                v["name"] = json!(p.name);
                v
            })
            .collect();
        from_json(json!({"prompts": prompts}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        let args = request.arguments.clone();
        match self.shared.host.get_prompt(&request.name, args).await {
            Ok(v) => from_json::<GetPromptResult>(v).map(Into::into),
            Err(HostError::PromptNotFound(n)) => Err(McpError::invalid_params(
                format!("prompt \"{n}\" not found"),
                None,
            )),
            Err(e) => Err(internal(e)),
        }
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        // Upstream tools changing changes what direct and tool-search sessions
        // list; upstream prompts are served in every mode.
        let tools_change = self.shared.exposure != Exposure::Proxy;
        let mut events = self.shared.host.manager().subscribe();
        let peer = context.peer.clone();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(LifecycleEvent::CatalogChanged(_)) => {
                        if tools_change && peer.notify_tool_list_changed().await.is_err()
                            || peer.notify_prompt_list_changed().await.is_err()
                        {
                            return;
                        }
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(_) => return,
                }
            }
        });
    }
}
