//! The client side of an upstream connection: identifies mcpw, passes the
//! server's own requests on to the client they belong to, and turns the
//! server's notifications into events for the host.

// Sampling, roots and logging are deprecated from MCP 2026-07-28 on; the
// revisions before it, which clients and servers speak, have them.
#![allow(deprecated)]

use super::ConnectContext;
use super::events::{EventSender, LogMessage, UpstreamEvent};
use super::origin::{self, InFlight, Sessions};
use crate::log_level::LogLevel;
use rmcp::model::{
    ClientConfig, ClientResult, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, Implementation, ListRootsResult, NumberOrString,
    ServerRequest,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

pub(crate) use super::progress::ProgressRoutes;
pub use super::progress::ProgressUpdate;

/// Where what a server sends about mcpw's calls in flight goes: their
/// progress, and the requests it makes while serving them.
#[derive(Clone)]
pub(crate) struct Routes {
    /// The server.
    pub server: String,
    /// Where each transport hands the progress it reads ([`super::progress`]).
    pub progress: ProgressRoutes,
    pub calls: InFlight,
    /// The downstream sessions.
    pub sessions: Arc<Sessions>,
    /// Where what the server tells goes.
    pub events: EventSender,
    /// What mcpw offered the server of sampling, elicitation and roots when
    /// it last said what it takes.
    pub offered: Arc<Mutex<std::collections::BTreeSet<String>>>,
}

impl Routes {
    pub(crate) fn new(ctx: &ConnectContext) -> Self {
        Routes {
            server: ctx.server.clone(),
            progress: Default::default(),
            calls: Default::default(),
            sessions: ctx.sessions.clone(),
            events: ctx.events.clone(),
            offered: Default::default(),
        }
    }
}

pub(crate) fn token_key(token: &NumberOrString) -> String {
    match token {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}

pub(crate) struct UpstreamHandler {
    server: String,
    events: EventSender,
    /// Log messages of this connection dropped for a full backlog.
    logs_dropped: Arc<AtomicU64>,
    /// Where the transport hands over log messages as it reads them.
    wire: ProgressRoutes,
    calls: InFlight,
    sessions: Arc<Sessions>,
    /// Opens with `initialize`: offer the newest revision that has it.
    legacy_only: bool,
    offered: Arc<Mutex<std::collections::BTreeSet<String>>>,
}

impl UpstreamHandler {
    pub(crate) fn new(ctx: &ConnectContext, routes: Routes) -> Self {
        let logs_dropped = Arc::new(AtomicU64::new(0));
        // Log messages go out as the transport reads them: one a server
        // sends just before its answer reaches the request it belongs to
        // (a 2026-07-28 client hears it only there) before the answer.
        let (events, server, dropped) =
            (ctx.events.clone(), ctx.server.clone(), logs_dropped.clone());
        let sink = move |message: LogMessage| {
            events.log(&server, message, &dropped);
        };
        let _ = routes.progress.logs.set(Box::new(sink));
        UpstreamHandler {
            server: ctx.server.clone(),
            events: ctx.events.clone(),
            logs_dropped,
            wire: routes.progress.clone(),
            calls: routes.calls,
            sessions: ctx.sessions.clone(),
            legacy_only: ctx.legacy_only,
            offered: routes.offered,
        }
    }

    /// Answers a server's request: the client it belongs to answers, or mcpw
    /// (see [`origin::answer`]).
    async fn answer(
        &self,
        request: ServerRequest,
        context: &RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
        let target = origin::target(&self.server, &self.calls, &self.sessions, context).await;
        origin::answer(
            &self.server,
            &self.sessions,
            target,
            request,
            Box::pin(context.ct.clone().cancelled_owned()),
        )
        .await
    }

    fn unexpected(answer: ClientResult) -> McpError {
        McpError::internal_error(format!("the client answered {answer:?}"), None)
    }

    fn changed(&self) {
        self.events
            .change(UpstreamEvent::ListChanged(self.server.clone()));
    }
}

impl ClientHandler for UpstreamHandler {
    fn get_info(&self) -> ClientConfig {
        // mcpw takes tasks from every server: it hands a task on to a client
        // that takes tasks, and waits it out for one that does not.
        let mut capabilities = self.sessions.capabilities(&self.server);
        if let Ok(serde_json::Value::Object(offered)) = serde_json::to_value(&capabilities) {
            let apps = crate::apps::declared(&offered);
            let mut keys: std::collections::BTreeSet<String> = offered.keys().cloned().collect();
            if apps {
                keys.insert(crate::apps::EXTENSION.into());
            }
            *origin::lock(&self.offered) = keys;
        }
        let extensions = capabilities.extensions.get_or_insert_default();
        extensions.insert(rmcp::model::TASKS_EXTENSION_ID.into(), Default::default());
        // Skills: mcpw lists every server's skills and serves them to its clients.
        extensions.insert(rmcp::model::SKILLS_EXTENSION_ID.into(), Default::default());
        let mut info = ClientConfig::new(
            capabilities,
            Implementation::new("mcpw", env!("CARGO_PKG_VERSION")),
        );
        if self.legacy_only {
            info.protocol_version = rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE;
        }
        info
    }

    async fn ping(&self, context: RequestContext<RoleClient>) -> Result<(), McpError> {
        let request = ServerRequest::PingRequest(Default::default());
        self.answer(request, &context).await.map(|_| ())
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        let request = ServerRequest::CreateMessageRequest(rmcp::model::Request::new(params));
        match self.answer(request, &context).await? {
            ClientResult::CreateMessageResult(r) => Ok(*r),
            other => Err(Self::unexpected(other)),
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let request = ServerRequest::ElicitRequest(rmcp::model::Request::new(params));
        match self.answer(request, &context).await? {
            ClientResult::ElicitResult(r) => Ok(r),
            other => Err(Self::unexpected(other)),
        }
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        let request = ServerRequest::ListRootsRequest(Default::default());
        match self.answer(request, &context).await? {
            ClientResult::ListRootsResult(r) => Ok(r),
            other => Err(Self::unexpected(other)),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed();
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Passed on already, as the transport read it.
        if self.wire.read.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let Some(level) = LogLevel::of(&params.level) else {
            return;
        };
        let message = LogMessage {
            level,
            logger: params.logger,
            data: params.data,
        };
        self.events.log(&self.server, message, &self.logs_dropped);
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.events.change(UpstreamEvent::ResourceUpdated(
            self.server.clone(),
            params.uri,
        ));
    }
}
