//! Connections to upstream MCP servers, through rmcp: stdio child processes,
//! Streamable HTTP, and legacy HTTP+SSE as the fallback for servers that only
//! speak that.

mod beside;
mod calls;
mod component;
mod error;
pub mod events;
mod handler;
mod http;
mod listen;
pub mod npx;
pub mod origin;
mod progress;
mod reads;
mod sse;
mod stdio;
mod tasks;

pub use beside::Need;
pub use calls::{CallOptions, Called};
pub use error::ConnectError;
pub use events::{LogMessage, UpstreamEvent};
pub use handler::ProgressUpdate;
pub use http::HttpClient;
pub use listen::ListenState;

use crate::config::{HttpKind, ServerConfig, Transport};
use crate::log_level::LogLevel;
use crate::paths::Environment;
use crate::secrets;
use handler::{Routes, UpstreamHandler};
use rmcp::model::{Resource, ResourceTemplate, Tool};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService, ServiceError,
};
use rmcp::{RoleClient, ServiceExt};
use std::sync::Arc;
use std::time::Duration;

/// Passes the current trace on in a request's `_meta` (and from there, for
/// an HTTP server, as its `traceparent` header).
pub(crate) fn traced(meta: &mut Option<rmcp::model::RequestMetaObject>) {
    if let Some(traceparent) = crate::telemetry::current_traceparent() {
        meta.get_or_insert_with(Default::default)
            .set_traceparent(traceparent);
    }
}

/// Which transport a live connection uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportKind {
    /// A child process.
    Stdio,
    /// Streamable HTTP.
    StreamableHttp,
    /// Legacy HTTP+SSE.
    Sse,
}

/// What a connection needs besides the server's config.
#[derive(Clone)]
pub struct ConnectContext {
    /// Server name (logs, errors).
    pub server: String,
    /// Environment for `bearerTokenEnv` and the child's environment.
    pub env: Environment,
    /// Where list changes, resource updates and log messages go.
    pub events: events::EventSender,
    /// The server last spoke an `initialize`-era revision: open with
    /// `initialize` straight away instead of probing with `server/discover`.
    pub legacy_only: bool,
    /// Secret values to mask out of this connection's errors (filled as they
    /// are resolved).
    pub redact: secrets::Redactions,
    /// The downstream sessions: what the connection may offer its server, and
    /// where the server's requests outside any call go.
    pub sessions: Arc<origin::Sessions>,
    /// Where the server's OAuth credentials are, when mcpw logs in to it
    /// (an HTTP server without static credentials or `"oauth": false`).
    pub vault: Option<crate::auth::store::Vault>,
    /// The principal the connection is for, when it carries one person's
    /// own login (`oauth.perPerson`) rather than the server's shared one.
    pub owner: Option<std::sync::Arc<str>>,
    /// Where a component server keeps its `wasi:keyvalue` state.
    pub stores: Arc<crate::components::keyvalue::Stores>,
    /// The vault `${vault:NAME}` values are read from.
    pub secrets: crate::auth::store::Vault,
}

/// The MCP revision offered first: the stateless one, opened with `server/discover`.
const STATELESS: rmcp::model::ProtocolVersion = rmcp::model::ProtocolVersion::V_2026_07_28;

/// Whether a negotiated revision is one of the `initialize` era.
pub fn is_legacy_revision(version: &str) -> bool {
    version < STATELESS.as_str()
}

/// Runs the MCP handshake over a transport: `server/discover` first (the
/// stateless revision), falling back to `initialize` when the server answers
/// that it does not know it; `initialize` alone when the server is known to be
/// of that era.
async fn handshake<T, E, A>(
    handler: UpstreamHandler,
    transport: T,
    ctx: &ConnectContext,
) -> Result<RunningService<RoleClient, UpstreamHandler>, ClientInitializeError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    if ctx.legacy_only {
        return handler.serve(transport).await;
    }
    let mode = ClientLifecycleMode::Auto {
        preferred_versions: vec![STATELESS],
        legacy_version: None,
    };
    handler.serve_with_lifecycle(transport, mode).await
}

/// A live connection to one server.
pub struct Connection {
    service: RunningService<RoleClient, UpstreamHandler>,
    kind: TransportKind,
    stderr: Option<Arc<stdio::StderrTail>>,
    group: Option<crate::processes::GroupGuard>,
    /// The component instance it speaks to, stopped with it.
    instance: Option<crate::components::Stop>,
    routes: Routes,
    redact: secrets::Redactions,
    listening: Option<listen::Listen>,
    /// A handshake-era connection to the same server, when this one is
    /// stateless and a session needed one (see [`beside`]).
    beside: tokio::sync::Mutex<beside::Beside>,
    /// The most verbose log level a session wants: a stateless server is
    /// asked for it in each request, the others once (`logging/setLevel`).
    log_level: std::sync::Mutex<Option<LogLevel>>,
}

/// What a server offers, listed right after connecting.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    /// Every tool (all pages).
    pub tools: Vec<Tool>,
    /// Every resource (all pages).
    pub resources: Vec<Resource>,
    /// Every resource template (all pages).
    pub resource_templates: Vec<ResourceTemplate>,
    /// Every prompt (all pages).
    pub prompts: Vec<rmcp::model::Prompt>,
    /// Every skill (all pages; see [`crate::skills`]), each checked against
    /// the extension's rules: one that breaks them is left out.
    pub skills: Vec<rmcp::model::Skill>,
    /// The server answers `resources/directory/read`.
    pub directory_read: bool,
    /// The MCP revision the connection negotiated.
    pub protocol_version: Option<String>,
}

/// `skills` without those that break the extension's rules (a name that
/// is not its URI's, a file outside the skill, a malformed digest) or
/// repeat a URI listed before: each is left out, and said in the log.
fn valid_skills(skills: Vec<rmcp::model::Skill>) -> Vec<rmcp::model::Skill> {
    let mut seen = std::collections::HashSet::new();
    skills
        .into_iter()
        .filter(|skill| match skill.validate() {
            Err(e) => {
                tracing::warn!("skill {} left out: {e}", skill.uri);
                false
            }
            Ok(()) => seen.insert(skill.uri.clone()),
        })
        .collect()
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("kind", &self.kind)
            .field("pid", &self.pid())
            .finish()
    }
}

impl Connection {
    /// Connects (spawning or dialing), initializes, and lists tools and resources,
    /// all within the server's `startupTimeoutMs`.
    pub async fn open(
        config: &ServerConfig,
        ctx: &ConnectContext,
    ) -> Result<(Connection, Listing), ConnectError> {
        let timeout = Duration::from_millis(config.startup_timeout_ms);
        // Before the clock starts: a first `npx` install has a limit of its own.
        let program = match &config.transport {
            Transport::Stdio { .. } => Some(stdio::program(config, ctx).await?),
            Transport::Http { .. } | Transport::Component { .. } => None,
        };
        let routes = Routes::new(ctx);
        // The child's output, for a timeout's message.
        let mut stderr = None;
        let attempt = async {
            let mut conn = match &config.transport {
                Transport::Stdio { .. } => {
                    let program = program.unwrap_or_default();
                    let progress = routes.progress.clone();
                    let (transport, tail, group) =
                        stdio::spawn(config, ctx, program, progress).await?;
                    stderr = Some(tail.clone());
                    Connection::over_lines(transport, tail, Some(group), ctx, &routes).await?
                }
                Transport::Http { url, kind, .. } => {
                    Connection::dial(config, url, *kind, ctx, &routes).await?
                }
                Transport::Component {
                    component,
                    sha256,
                    permissions,
                } => {
                    let source = (component.as_str(), sha256.as_deref());
                    let (conn, tail) =
                        Connection::instance(source, permissions, config.debug, ctx, &routes)
                            .await?;
                    stderr = Some(tail);
                    conn
                }
            };
            let listing = conn.list().await?;
            conn.start_listening(timeout);
            Ok::<_, ConnectError>((conn, listing))
        };
        if let Transport::Http { url, .. } = &config.transport {
            ctx.redact.add_url(url);
        }
        match tokio::time::timeout(timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(ConnectError::Timeout {
                ms: config.startup_timeout_ms,
                note: stderr.as_ref().and_then(|t| t.stdout_note()),
                stderr: stderr.map(|t| t.text()),
            }),
        }
        .map_err(|e| with_login_hint(e, config, ctx))
    }

    /// Connects to an HTTP server: Streamable HTTP, falling back to legacy
    /// SSE (unless the server refused the credentials), or SSE only.
    async fn dial(
        config: &ServerConfig,
        url: &str,
        kind: HttpKind,
        ctx: &ConnectContext,
        routes: &Routes,
    ) -> Result<Connection, ConnectError> {
        let headers = http::request_headers(config, ctx).await?;
        if kind == HttpKind::Sse {
            return sse_connect(url, &headers, ctx, routes).await;
        }
        let streamable = match http::connect(url, &config.oauth, &headers, ctx, routes).await {
            Ok(service) => {
                let kind = TransportKind::StreamableHttp;
                return Ok(Connection::new(service, kind, None, ctx, routes));
            }
            Err(e) if e.is_auth() => return Err(e),
            Err(streamable) => streamable,
        };
        tracing::debug!(server = %ctx.server, "Streamable HTTP failed ({streamable}); trying legacy SSE");
        sse_connect(url, &headers, ctx, routes)
            .await
            .map_err(|sse| {
                if sse.is_auth() {
                    sse
                } else {
                    ConnectError::Http(format!("{streamable}; legacy SSE: {sse}"))
                }
            })
    }

    /// Connects to a server that already serves newline-delimited JSON-RPC
    /// on `read` and `write` (one in this process, say), as to a stdio server
    /// without a process: initialized and listed within `startup_timeout`.
    pub async fn over_stream<R, W>(
        read: R,
        write: W,
        ctx: &ConnectContext,
        startup_timeout: Duration,
    ) -> Result<(Connection, Listing), ConnectError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let routes = Routes::new(ctx);
        let attempt = async {
            let (transport, tail) =
                stdio::lines(read, write, routes.progress.clone(), Arc::default(), None);
            let mut conn = Connection::over_lines(transport, tail, None, ctx, &routes).await?;
            let listing = conn.list().await?;
            conn.start_listening(startup_timeout);
            Ok((conn, listing))
        };
        tokio::time::timeout(startup_timeout, attempt)
            .await
            .unwrap_or(Err(ConnectError::Timeout {
                ms: startup_timeout.as_millis() as u64,
                note: None,
                stderr: None,
            }))
    }

    /// Initializes over a line transport (a child's pipes or any stream).
    async fn over_lines<T, E, A>(
        transport: T,
        tail: Arc<stdio::StderrTail>,
        group: Option<crate::processes::GroupGuard>,
        ctx: &ConnectContext,
        routes: &Routes,
    ) -> Result<Connection, ConnectError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let handler = UpstreamHandler::new(ctx, routes.clone());
        let service = handshake(handler, transport, ctx)
            .await
            .map_err(|e| ConnectError::from_init(e, Some(&tail)))?;
        let mut conn = Connection::new(service, TransportKind::Stdio, Some(tail), ctx, routes);
        conn.group = group;
        Ok(conn)
    }

    /// A connection over `service`, owning no process or instance yet.
    fn new(
        service: RunningService<RoleClient, UpstreamHandler>,
        kind: TransportKind,
        stderr: Option<Arc<stdio::StderrTail>>,
        ctx: &ConnectContext,
        routes: &Routes,
    ) -> Connection {
        Connection {
            service,
            kind,
            stderr,
            group: None,
            instance: None,
            routes: routes.clone(),
            redact: ctx.redact.clone(),
            listening: Default::default(),
            beside: Default::default(),
            log_level: Default::default(),
        }
    }

    async fn list(&self) -> Result<Listing, ConnectError> {
        let caps = self
            .service
            .peer_info()
            .and_then(|i| i.capabilities.clone().into());
        let has_tools = caps
            .as_ref()
            .is_none_or(|c: &rmcp::model::ServerCapabilities| c.tools.is_some());
        let has_resources = caps
            .as_ref()
            .is_none_or(|c: &rmcp::model::ServerCapabilities| c.resources.is_some());
        let tools = if has_tools {
            self.service
                .list_all_tools()
                .await
                .map_err(|e| self.service_error(e))?
        } else {
            Vec::new()
        };
        // A server may announce resources yet fail to list them; tools still work.
        let (resources, resource_templates) = if has_resources {
            let resources = self.service.list_all_resources().await.unwrap_or_else(|e| {
                tracing::warn!("listing resources failed: {e}");
                Vec::new()
            });
            let templates = self
                .service
                .list_all_resource_templates()
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!("listing resource templates failed: {e}");
                    Vec::new()
                });
            (resources, templates)
        } else {
            (Vec::new(), Vec::new())
        };
        let has_prompts = caps
            .as_ref()
            .is_some_and(|c: &rmcp::model::ServerCapabilities| c.prompts.is_some());
        let prompts = if has_prompts {
            self.service.list_all_prompts().await.unwrap_or_else(|e| {
                tracing::warn!("listing prompts failed: {e}");
                Vec::new()
            })
        } else {
            Vec::new()
        };
        let has_skills = caps.as_ref().is_some_and(|c| c.supports_skills());
        let skills = if has_skills {
            let listed = self.service.list_all_skills().await.unwrap_or_else(|e| {
                tracing::warn!("listing skills failed: {e}");
                Vec::new()
            });
            valid_skills(listed)
        } else {
            Vec::new()
        };
        Ok(Listing {
            tools,
            resources,
            resource_templates,
            prompts,
            skills,
            directory_read: caps.is_some_and(|c| c.supports_directory_read()),
            protocol_version: self.protocol_version(),
        })
    }

    /// Lists tools, resources and prompts again (after `list_changed`), from
    /// the server: a relist has a reason, so the time-to-live a stateless
    /// server gave its lists (which rmcp would serve them from) does not hold.
    pub async fn relist(&self) -> Result<Listing, ConnectError> {
        self.service.peer().clear_response_cache().await;
        self.list().await
    }

    /// What every request mcpw sends carries in its `_meta`: the current
    /// trace, and to a stateless server the log level sessions want.
    #[allow(deprecated)] // logging: deprecated in 2026-07-28, which still has it
    fn stamp(&self, meta: &mut Option<rmcp::model::RequestMetaObject>) {
        traced(meta);
        let level = *origin::lock(&self.log_level);
        let level = level
            .filter(|_| self.is_stateless())
            .and_then(|l| serde_json::to_value(l).ok())
            .and_then(|l| serde_json::from_value::<rmcp::model::LoggingLevel>(l).ok());
        if let Some(level) = level {
            meta.get_or_insert_with(Default::default)
                .set_log_level(level);
        }
    }

    /// Whether this connection speaks the stateless revision.
    pub fn is_stateless(&self) -> bool {
        self.protocol_version()
            .is_some_and(|v| !is_legacy_revision(&v))
    }

    /// Asks the server for log messages of `level` and above, when it logs:
    /// in each request from now on for a stateless server, at once for one of
    /// the handshake era (and the connection beside, if any).
    #[allow(deprecated)] // in every revision before 2026-07-28
    pub async fn set_log_level(
        &self,
        level: LogLevel,
        timeout: Duration,
    ) -> Result<(), ConnectError> {
        *origin::lock(&self.log_level) = Some(level);
        if self.is_stateless() {
            if let Some(beside) = self.beside.lock().await.open() {
                Box::pin(beside.set_log_level(level, timeout)).await?;
            }
            return Ok(());
        }
        let logs = self
            .service
            .peer_info()
            .is_some_and(|i| i.capabilities.logging.is_some());
        if !logs {
            return Ok(());
        }
        let params =
            serde_json::from_value(serde_json::json!({ "level": level })).map_err(|e| {
                ConnectError::Protocol {
                    message: e.to_string(),
                    stderr: None,
                }
            })?;
        self.within(timeout, self.service.peer().set_level(params))
            .await
    }

    /// Asks the server to complete an argument of one of its prompts or
    /// resource templates.
    pub async fn complete(
        &self,
        mut params: rmcp::model::CompleteRequestParams,
        timeout: Duration,
    ) -> Result<rmcp::model::CompleteResult, ConnectError> {
        self.stamp(&mut params.meta);
        self.within(timeout, self.service.peer().complete(params))
            .await
    }

    /// Asks for `notifications/resources/updated` about `uri` (`subscribe`
    /// true) or no more (false).
    pub async fn watch_resource(
        &self,
        uri: &str,
        subscribe: bool,
        timeout: Duration,
    ) -> Result<(), ConnectError> {
        if self
            .protocol_version()
            .is_some_and(|v| !is_legacy_revision(&v))
        {
            // 2026-07-28 replaced these requests with `subscriptions/listen`.
            let listen = self.listen_to_resource(uri, subscribe);
            return match tokio::time::timeout(timeout, listen).await {
                Ok(r) => r,
                Err(_) => Err(self.timed_out(timeout)),
            };
        }
        let peer = self.service.peer();
        #[allow(deprecated)] // the initialize-era requests, which this revision has
        let request = async {
            if subscribe {
                peer.subscribe(rmcp::model::SubscribeRequestParams::new(uri))
                    .await
            } else {
                peer.unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri))
                    .await
            }
        };
        self.within(timeout, request).await
    }

    /// The transport in use.
    pub fn kind(&self) -> TransportKind {
        self.kind
    }

    /// True while the connection is open.
    pub fn is_open(&self) -> bool {
        // `is_closed` only covers cancellation; a server that exits ends the
        // service loop, which closes the peer's channel.
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }

    /// The last lines the server wrote to stderr (stdio only).
    pub fn stderr(&self) -> Option<String> {
        self.stderr.as_ref().map(|t| self.redact.apply(&t.text()))
    }

    /// Does the server still answer? Any answer counts, an error too (a
    /// server may not implement `ping`); silence for `timeout` or a closed
    /// connection does not.
    pub async fn ping(&self, timeout: Duration) -> bool {
        let ping = self
            .service
            .send_request(rmcp::model::ClientRequest::PingRequest(
                rmcp::model::PingRequest::default(),
            ));
        match tokio::time::timeout(timeout, ping).await {
            Ok(Ok(_)) | Ok(Err(ServiceError::McpError(_))) => true,
            Ok(Err(_)) | Err(_) => false,
        }
    }

    /// The MCP revision negotiated with the server.
    pub fn protocol_version(&self) -> Option<String> {
        self.service
            .peer_info()
            .map(|i| i.protocol_version.as_str().to_string())
    }

    /// Process id of a stdio server.
    pub fn pid(&self) -> Option<u32> {
        self.group.as_ref().map(|g| g.pid())
    }

    /// A request's answer, unless `timeout` passes first.
    async fn within<T>(
        &self,
        timeout: Duration,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, ConnectError> {
        match tokio::time::timeout(timeout, request).await {
            Ok(r) => r.map_err(|e| self.service_error(e)),
            Err(_) => Err(self.timed_out(timeout)),
        }
    }

    fn timed_out(&self, timeout: Duration) -> ConnectError {
        ConnectError::CallTimeout {
            ms: timeout.as_millis() as u64,
            note: self.stderr.as_ref().and_then(|t| t.stdout_note()),
        }
    }

    fn service_error(&self, e: ServiceError) -> ConnectError {
        ConnectError::from_service(e, self.stderr.as_deref()).redacted(&self.redact)
    }

    /// Ends the connection under the calls still using it: they fail at once.
    pub fn abort(&self) {
        self.service.cancellation_token().cancel();
    }

    /// Closes the connection; a stdio server's whole process group is killed.
    pub async fn close(mut self) {
        // The listen stream ends with the connection: not a failure to report.
        self.listening.take();
        if let Some(beside) = self.beside.get_mut().take()
            && let Ok(beside) = Arc::try_unwrap(beside)
        {
            Box::pin(beside.close()).await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), self.service.close()).await;
        if let Some(group) = self.group.take() {
            group.kill();
        }
    }
}

async fn sse_connect(
    url: &str,
    headers: &http::Headers,
    ctx: &ConnectContext,
    routes: &Routes,
) -> Result<Connection, ConnectError> {
    let transport = sse::SseTransport::connect(url, headers, routes.progress.clone()).await?;
    let service = UpstreamHandler::new(ctx, routes.clone())
        .serve(transport)
        .await
        .map_err(|e| ConnectError::from_init(e, None))?;
    Ok(Connection::new(
        service,
        TransportKind::Sse,
        None,
        ctx,
        routes,
    ))
}

/// A refusal's hint says what to do about it: fix the credentials configured
/// (they were sent and refused), or log in (mcpw logs in to a server that
/// speaks OAuth, whose challenge names its resource metadata; a bare
/// challenge may want a static token). Other errors lose their secrets.
fn with_login_hint(e: ConnectError, config: &ServerConfig, ctx: &ConnectContext) -> ConnectError {
    match e {
        ConnectError::NeedsAuth {
            status, challenge, ..
        } if config.has_credentials() => ConnectError::NeedsAuth {
            status,
            hint: "the server refused the credentials configured for it \
                   (`bearerToken`, `bearerTokenEnv` or an `Authorization` header); check or renew them"
                .into(),
            challenge,
        },
        ConnectError::NeedsAuth {
            status, challenge, ..
        } if config.oauth_applies() => ConnectError::NeedsAuth {
            status,
            hint: match &challenge {
                Some(c) if c.contains("resource_metadata") => {
                    format!("log in with `mcpw auth login {}`", ctx.server)
                }
                _ => format!(
                    "log in with `mcpw auth login {}` if it uses OAuth; otherwise set `bearerToken` or `bearerTokenEnv` (or an `Authorization` header) for it",
                    ctx.server
                ),
            },
            challenge,
        },
        e => e.redacted(&ctx.redact),
    }
}
