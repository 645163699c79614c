//! `mcpw serve`: mcpw as an MCP server in front of every configured server.
//!
//! Exposures: `proxy` (one `mcp` tool, ~340 tokens however many tools
//! exist), `tool-search` (direct tools plus `ToolSearch`, which loads more on
//! demand and announces them with `notifications/tools/list_changed`),
//! `direct` (every tool), `code` (one tool that runs scripts), and `auto`
//! (direct while the tools fit a budget, else tool-search). Upstream prompts
//! are forwarded under prefixed names; progress notifications and
//! cancellation pass through calls.

mod app_host;
mod approval;
mod calls;
pub mod code;
mod era;
mod exposures;
mod held;
mod hints;
pub mod http;
mod in_flight;
mod listen;
mod listing;
mod page;
mod peer_client;
mod proxy;
mod reads;
mod replicas;
mod request_logs;
mod resources;
mod results;
mod scope;
mod session_events;
mod task_book;
mod tasks;
mod tool_call;
mod tool_search;
mod traced;

pub use crate::config::{DEFAULT_AUTO_EXPOSURE_BUDGET, Exposure};
pub use in_flight::Gated;
pub use scope::ClientScope;

use crate::downstream::SessionGuard;
use crate::host::{EntryRef, Host, HostError};
use crate::log_level::LogLevel;
use crate::present::Content;
use arc_swap::ArcSwapOption;
use era::Complete;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListToolsResult, PaginatedRequestParams, ServerConfig, Tool,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// What every session of one `mcpw serve` shares.
pub struct Gateway {
    host: Arc<Host>,
    /// Connects servers whose tools are unknown (nothing cached), once, before
    /// the first answer that needs the catalog.
    bootstrap: tokio::sync::OnceCell<()>,
    /// The exposure served: what sessions list, and where their calls go.
    exposed: &'static dyn exposures::Exposed,
    budget: usize,
    /// Tokens the tool definitions may take for `auto` exposure to list them.
    auto_budget: usize,
    /// The tool lists of the current snapshot, made once per snapshot.
    listing: ArcSwapOption<listing::Listing>,
    /// How to write a script, from the script guest (for the code tool).
    code_usage: tokio::sync::OnceCell<String>,
    /// Sessions shared with other replicas, with shared state.
    replicas: Option<Arc<replicas::Replicas>>,
    /// Open sessions per client, for the live page.
    sessions_by_client: page::SessionCounts,
    /// Calls of clients of the stateless revision waiting for their answers.
    held: Arc<held::HeldCalls>,
    /// Views of MCP Apps shown on the page, once a page is served.
    views: std::sync::OnceLock<Arc<app_host::Views>>,
    /// The tasks given to clients, and whose each is.
    tasks: task_book::TaskBook,
}

/// The calls of clients of the stateless revision that wait for answers:
/// sealed with a key derived from the team's key where replicas share state
/// (the one the credentials' vault took), so that a retry may come to any.
fn held_calls(host: &Arc<Host>) -> Arc<held::HeldCalls> {
    let team = host.shared_state().cloned();
    let key = host.servers().held_requests_key();
    if let (Some(state), None) = (&team, key) {
        tracing::warn!(
            "shared state {} has no team key: a request of a 2026-07-28 client that waits for its answers resumes only at the replica that took it",
            state.location()
        );
    }
    held::HeldCalls::new(team, key)
}

impl Gateway {
    /// State for serving `host` with `exposure`.
    pub fn new(host: Arc<Host>, exposure: Exposure) -> Arc<Gateway> {
        let budget = host.config().settings.tool_search_budget;
        let auto_budget = host.config().settings.auto_exposure_budget;
        Arc::new(Gateway {
            held: held_calls(&host),
            tasks: task_book::TaskBook::new(host.shared_state().cloned()),
            replicas: replicas::Replicas::for_host(&host),
            host,
            exposed: exposures::of(exposure),
            bootstrap: tokio::sync::OnceCell::new(),
            budget,
            auto_budget,
            listing: ArcSwapOption::empty(),
            code_usage: tokio::sync::OnceCell::new(),
            sessions_by_client: Default::default(),
            views: std::sync::OnceLock::new(),
        })
    }

    /// As [`Gateway::new`], for answers from the cache alone: servers with
    /// nothing cached are left out instead of being connected.
    pub fn from_cache(host: Arc<Host>, exposure: Exposure) -> Arc<Gateway> {
        let shared = Gateway::new(host, exposure);
        let _ = shared.bootstrap.set(());
        shared
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
    /// the naming guest can tell) resolves at once; only an unknown one waits
    /// until every server has been listed, then is looked up again.
    pub async fn resolve(&self, name: &str) -> Result<EntryRef, HostError> {
        let resolved = self.host.resolve(name).await;
        if matches!(resolved, Err(HostError::ToolNotFound { .. })) && !self.is_ready() {
            self.ready().await;
            return self.host.resolve(name).await;
        }
        resolved
    }

    /// Prepares what the first requests of this exposure need, so that they
    /// do not wait for it: the catalog snapshot and the tool list (direct
    /// exposure: with every schema parsed), then for tool-search the search
    /// index. Proxy exposure prepares nothing (it lists one fixed tool), which
    /// keeps an idle proxy small; its first search builds the index.
    pub async fn warm_up(&self, session: &Session) {
        self.exposed.warm_up(self, session).await
    }

    /// Builds the search index now, not at the first search.
    async fn prepare_search(&self) {
        match self.host.prepare_search().await {
            Ok(()) | Err(HostError::ShuttingDown) => {}
            Err(e) => tracing::warn!("cannot build the search index: {e}"),
        }
    }

    /// The host behind the gateway.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }
}

/// (snapshot version, tools loaded, the list).
type SessionList = (u64, usize, Arc<[Tool]>);

/// One MCP session of the gateway.
#[derive(Clone)]
pub struct Session {
    shared: Arc<Gateway>,
    /// Tools this session loaded with ToolSearch: each agent its own list.
    activated: Arc<Mutex<BTreeSet<String>>>,
    /// This session's tool-search list, for the snapshot and tools loaded it was made for.
    listed: Arc<Mutex<Option<SessionList>>>,
    /// What `auto` exposure decided for this session, once it has.
    decided: Arc<std::sync::OnceLock<Exposure>>,
    /// Resources this session subscribed to.
    watching: Arc<resources::Watching>,
    /// The log level this session asked for; none: no server log messages.
    log_level: Arc<Mutex<Option<LogLevel>>>,
    /// This session among the ones servers' requests may go to, once initialized.
    registered: Arc<Mutex<Option<SessionGuard>>>,
    /// The client of this session, from its `initialize` request (none: stdio,
    /// or not initialized yet).
    client: Arc<Mutex<Option<ClientScope>>>,
    /// What this session shares with other replicas.
    link: Arc<replicas::Link>,
    /// Binary content this session's scripts got, read back by reference.
    shelf: Arc<crate::kept::Shelf>,
    /// Tools and servers the user allowed for this session.
    allowed: Arc<crate::host::pipeline::Allowances>,
    /// This session, counted for the live page once initialized.
    counted: Arc<Mutex<Option<page::Counted>>>,
    /// Where a local session's kept results are written as files too.
    files: Option<Arc<crate::results::ResultFiles>>,
    /// This session was shown a preview of a result: `read_result` joins its
    /// tool list (until then, it costs no tokens).
    results_kept: Arc<std::sync::atomic::AtomicBool>,
}

impl Session {
    /// A session over shared state.
    pub fn new(shared: Arc<Gateway>) -> Self {
        let watching = resources::Watching::new(shared.host.clone());
        let (activated, log_level) = (Arc::default(), Arc::default());
        let link = replicas::Link::new(
            &shared,
            Arc::clone(&activated),
            Arc::clone(&log_level),
            watching.clone(),
        );
        Session {
            watching,
            shelf: Arc::new(shared.host.new_shelf()),
            allowed: Arc::default(),
            files: None,
            results_kept: Arc::default(),
            shared,
            activated,
            listed: Default::default(),
            decided: Default::default(),
            log_level,
            registered: Default::default(),
            client: Default::default(),
            counted: Default::default(),
            link,
        }
    }
}

impl Session {
    /// This session writes the results it keeps to files in `dir` too (a
    /// local session: its agent reads files).
    pub fn with_result_files(mut self, dir: std::path::PathBuf) -> Self {
        let ttl = self.shelf.limits().ttl;
        let files = crate::results::ResultFiles::new(dir, ttl, crate::results::FILES_CAP);
        self.files = Some(Arc::new(files));
        self
    }
}

fn internal(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(e.to_string(), None)
}

/// Builds an rmcp value from JSON (rmcp's model types are non-exhaustive).
fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(internal)
}

/// rmcp reads a request whose params do not fit its method's type as a custom
/// request: for a method MCP defines, that is invalid params (-32602), not an
/// unknown method.
#[allow(deprecated)] // logging and resources/subscribe are in every revision before 2026-07-28
fn custom_request_error(request: &rmcp::model::CustomRequest) -> McpError {
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

/// The MCP tool definition of a catalog entry, built directly (a catalog has
/// thousands): its schema always says `"type": "object"`. `always_load`: the
/// exposure means it to be in the agent's context from the start.
fn mcp_tool(
    entry: &crate::catalog::Entry,
    snapshot: &crate::host::Snapshot,
    config: &crate::config::Config,
    always_load: bool,
) -> Tool {
    let t = &entry.tool;
    let schema = t.input_schema.object().clone();
    let mut tool = Tool::new(entry.name.clone(), t.description.clone(), schema);
    // A tool whose name had to change keeps its own in sight: as its title
    // when it has none.
    tool.title = t
        .title
        .clone()
        .or_else(|| entry.renamed_from().map(str::to_string));
    tool.annotations = t
        .annotations
        .as_ref()
        .and_then(|a| serde_json::from_value(a.clone()).ok());
    // Results pass through as the server sent them, so its promise about
    // their structured content holds through mcpw too.
    tool.output_schema = t.output_schema.as_ref().map(|s| s.object().clone());
    let names = [t.name.as_str(), entry.name.as_str()];
    let hints = hints::Hints {
        always_load,
        keywords: config
            .server(&t.server)
            .map_or(&[], |s| s.config.search_keywords.as_slice()),
    };
    let mut meta = results::tool_meta(config, &t.server, &names);
    // The server's own `_meta` (an app's view among it), under mcpw's.
    if let Some(Value::Object(own)) = &t.meta {
        let mut joined = own.clone();
        // The view as the client reads it (mapped when another server has
        // one at the same URI).
        let resources = snapshot.resources();
        crate::apps::expose_meta(&mut joined, |uri| resources.exposed(&t.server, uri));
        if let Some(Value::Object(ours)) = meta {
            joined.extend(ours);
        }
        meta = Some(Value::Object(joined));
    }
    let meta = hints.add_to(meta);
    tool.meta = meta.and_then(|m| from_json(m).ok());
    tool
}

/// Whether the client of a request declares MCP Apps.
fn takes_apps(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| serde_json::to_value(c).ok())
        .is_some_and(|c| c.as_object().is_some_and(crate::apps::declared))
}

/// Tools as a client that does not declare MCP Apps gets them: without
/// the views only a host of apps uses.
fn apps_left_out(tools: &mut [Tool]) {
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

impl ServerHandler for Session {
    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        std::borrow::Cow::Borrowed(rmcp::model::ProtocolVersion::known_up_to(
            &era::NEWEST_SERVED,
        ))
    }

    fn get_info(&self) -> ServerConfig {
        let instructions = self.shared.exposed.instructions();
        let mut extensions = json!({rmcp::model::TASKS_EXTENSION_ID: {}});
        if self.shared.host.servers().has_views() {
            extensions[crate::apps::EXTENSION] = json!({"mimeTypes": [crate::apps::MIME]});
        }
        serde_json::from_value(json!({
            "protocolVersion": rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": {"tools": {"listChanged": self.shared.exposed.lists_change()}, "prompts": {"listChanged": true},
                             "resources": {"subscribe": true, "listChanged": true},
                             "logging": {}, "completions": {},
                             "extensions": extensions},
            "serverInfo": {"name": "mcpw", "version": env!("CARGO_PKG_VERSION")},
            "instructions": instructions,
        }))
        .expect("a valid server info")
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, McpError> {
        let span = traced::span(&context, "discover", None);
        traced::run(span, async move {
            self.shared.host.servers().sessions().release();
            Ok(rmcp::model::DiscoverResult::from_server_info(
                self.supported_protocol_versions().into_owned(),
                self.get_info(),
            ))
        })
        .await
    }

    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, McpError> {
        let span = traced::span(&context, "initialize", None);
        traced::run(span, async move {
            // The session's client is the one whose token opened it: the server
            // requests and log messages it gets are of that client's servers.
            *self.client.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(self.client(&context.extensions));
            context.peer.set_peer_info(request.clone());
            self.negotiate_initialize(&request)
        })
        .await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let span = traced::span(&context, "tools/list", None);
        traced::run(span, async move {
            self.note_stateless_client(&context).await;
            self.link.seen(&context.extensions, &context.peer).await;
            // A server that cannot tell of its changes is asked again (in the
            // background; a change reaches the session as list_changed).
            self.shared.host.servers().freshen_unheard();
            let client = self.client(&context.extensions);
            let mut tools = self.tool_list_for(&client).await?;
            if !takes_apps(&context) {
                apps_left_out(&mut tools);
            }
            Ok(ListToolsResult::with_all_items(tools).complete())
        })
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        self.note_stateless_client(&context).await;
        // Before `initialized` is handled, maybe: the call counts for this session.
        self.opened(&context);
        match held::is_stateless(&context) {
            true => self.held_call(request, context).await,
            false => self.call_now(request, context).await,
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let span = traced::span(&context, "prompts/list", None);
        traced::run(span, async move {
            self.shared.host.servers().freshen_unheard();
            let client = self.client(&context.extensions);
            self.shared.ready().await;
            let snapshot = self.shared.host.snapshot().await.map_err(internal)?;
            let prompts: Vec<Value> = snapshot
                .prompts()
                .iter()
                .filter(|p| client.allows(&p.server))
                .map(|p| {
                    let mut v = p.prompt.clone();
                    v["name"] = json!(p.name);
                    v
                })
                .collect();
            from_json(json!({"prompts": prompts})).map(Complete::complete)
        })
        .await
    }

    async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        if !held::is_stateless(&context) {
            return self.prompt_now(request, context).await.map(Into::into);
        }
        let retry = (request.request_state.take(), request.input_responses.take());
        let name = request.name.to_string();
        let start = |gateway: Session, context| async move {
            let got = gateway.prompt_now(request, context).await;
            got.map(rmcp::model::ServerResult::GetPromptResult)
        };
        let kind = held::Kind::Prompt;
        match self.held(&name, kind, retry, context, start).await? {
            rmcp::model::ServerResult::InputRequiredResult(r) => Ok(r.into()),
            rmcp::model::ServerResult::GetPromptResult(r) => Ok(r.into()),
            other => Err(held::unexpected(&other)),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        let span = traced::span(&context, "resources/list", None);
        traced::run(span, async move {
            self.shared.host.servers().freshen_unheard();
            let client = self.client(&context.extensions);
            let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
            self.resource_list(&client, cursor)
                .await
                .map(Complete::complete)
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        let span = traced::span(&context, "resources/templates/list", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
            self.resource_template_list(&client, cursor)
                .await
                .map(Complete::complete)
        })
        .await
    }

    async fn read_resource(
        &self,
        mut request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        if !held::is_stateless(&context) {
            return self.read_now(request, context).await.map(Into::into);
        }
        let retry = (request.request_state.take(), request.input_responses.take());
        let uri = request.uri.clone();
        let start = |gateway: Session, context| async move {
            let read = gateway.read_now(request, context).await;
            read.map(rmcp::model::ServerResult::ReadResourceResult)
        };
        let kind = held::Kind::Read;
        match self.held(&uri, kind, retry, context, start).await? {
            rmcp::model::ServerResult::InputRequiredResult(r) => Ok(r.into()),
            rmcp::model::ServerResult::ReadResourceResult(r) => Ok(r.into()),
            other => Err(held::unexpected(&other)),
        }
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "resources/subscribe", Some(&request.uri));
        traced::run(span, async move {
            self.link.seen(&context.extensions, &context.peer).await;
            let client = self.client(&context.extensions);
            self.resource_watch(&client, &request.uri, true).await
        })
        .await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "resources/unsubscribe", Some(&request.uri));
        traced::run(span, async move {
            self.link.seen(&context.extensions, &context.peer).await;
            let client = self.client(&context.extensions);
            self.resource_watch(&client, &request.uri, false).await
        })
        .await
    }

    #[allow(deprecated)] // logging is in every revision before 2026-07-28
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "logging/setLevel", None);
        traced::run(span, async move {
            self.link.seen(&context.extensions, &context.peer).await;
            let level = LogLevel::of(&request.level)
                .ok_or_else(|| McpError::invalid_params("unknown log level", None))?;
            *self.log_level.lock().unwrap_or_else(|p| p.into_inner()) = Some(level);
            self.shared.host.servers().set_log_level(level).await;
            if let Ok(Value::String(name)) = serde_json::to_value(request.level) {
                self.link.share_log_level(&name).await;
            }
            Ok(())
        })
        .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        // rmcp narrows it to what `get_info` offers (no tool list changes in
        // the proxy exposure).
        Some(requested.clone())
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        self.listen_stream(context).await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        let span = traced::span(&context, "tasks/get", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            Session::get_task(self, &client, request.task_id).await
        })
        .await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "tasks/update", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            let caller = self.caller(&client, crate::host::pipeline::Via::Call, &context);
            Session::update_task(self, &client, &caller, request).await
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "tasks/cancel", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            Session::cancel_task(self, &client, request.task_id).await
        })
        .await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        let span = traced::span(&context, "completion/complete", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            let params = serde_json::to_value(request).map_err(internal)?;
            self.shared.ready().await;
            let completed = match self.completion_hidden(&client, &params).await {
                Some(hidden) => Err(hidden),
                None => self.shared.host.complete(params).await,
            };
            match completed {
                Ok(v) => from_json(v).map(Complete::complete),
                Err(e @ (HostError::PromptNotFound(_) | HostError::ResourceNotFound(_))) => {
                    Err(McpError::invalid_params(e.to_string(), None))
                }
                Err(e) => Err(internal(e)),
            }
        })
        .await
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(custom_request_error(&request))
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let client = self.session_client();
        self.open_session(&context.peer);
        *self.counted.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(self.shared.sessions_by_client.open(client.name()));
        session_events::spawn(
            &self.shared,
            context.peer.clone(),
            Arc::downgrade(&self.watching),
            self.log_level.clone(),
            client,
        );
        self.link.seen(&context.extensions, &context.peer).await;
        // A host joining after servers were connected (eager ones, or for
        // another session) has them connected again, when idle, offering
        // the extension: a server registers its app tools only for a host.
        let declares_apps = context.peer.peer_info().is_some_and(|info| {
            serde_json::to_value(&info.capabilities)
                .ok()
                .is_some_and(|c| c.as_object().is_some_and(crate::apps::declared))
        });
        if declares_apps {
            let servers = self.shared.host.servers();
            tokio::spawn(async move { servers.renew_offers().await });
        }
    }
}
