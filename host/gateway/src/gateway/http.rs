//! Serving the gateway over Streamable HTTP: loopback by default; any other
//! address needs a bearer token, and any token configured is required; each
//! token names a client that sees its own servers (`clients`); `Host` and
//! `Origin` are checked against DNS rebinding; request bodies are
//! size-limited; sessions are capped (`sessions`), and so are each
//! session's requests in flight (`per_session`); bodies that are not one
//! JSON-RPC message get JSON-RPC errors (`body`).

mod bearer;
mod body;
mod clients;
mod hosts;
mod ops;
mod per_session;
mod resource;
mod sessions;

pub use bearer::IntrospectionSecrets;
pub use clients::{ClientToken, client_tokens};
pub use ops::{DEFAULT_DRAIN, Ops};
pub use sessions::DEFAULT_MAX_SESSIONS;

use super::replicas::Replicas;
use super::{ClientScope, Gateway, Session};
use crate::host::Host;
use crate::team_state::sessions::SharedSessions;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 4 << 20;
/// How long a session may stay idle, unless `--session-idle` says otherwise.
pub const DEFAULT_SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(300);
/// How long calls cut at the drain deadline have to send their errors.
const ANSWERS_AFTER_CUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The sessions served: rmcp's, capped.
type Sessions = sessions::CappedSessions<LocalSessionManager>;

/// Where and how to listen.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Address to bind.
    pub addr: SocketAddr,
    /// The tokens clients may send, each admitting its client; at least one
    /// unless `addr` is loopback. None: every client is admitted, and sees
    /// every server.
    pub tokens: Vec<ClientToken>,
    /// Sessions open at once (at least 1); an `initialize` beyond them is
    /// refused with HTTP 503 and a JSON-RPC error.
    pub max_sessions: usize,
    /// On a stop, how long the requests in flight may take to finish.
    pub drain: std::time::Duration,
    /// How long a session may stay idle before it is closed and its memory
    /// released.
    pub session_idle: std::time::Duration,
    /// `serve.oauth`: access tokens from identity providers are admitted
    /// too, and the protected resource metadata is served.
    pub oauth: Option<crate::config::ServeOAuth>,
    /// The secrets of `oauth`'s introspecting clients ([`oauth_secrets`]).
    pub oauth_secrets: IntrospectionSecrets,
}

/// The secrets `serve.oauth`'s issuers introspect with, had before anything
/// starts (a `!command` run, a variable read).
pub async fn oauth_secrets(
    oauth: Option<&crate::config::ServeOAuth>,
    env: &crate::paths::Environment,
) -> Result<IntrospectionSecrets, ServeError> {
    bearer::introspection_secrets(oauth, env)
        .await
        .map_err(|(issuer, why)| ServeError::IntrospectionSecret { issuer, why })
}

/// Why serving could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback bind without a token.
    #[error(
        "binding {0} exposes mcpw beyond this machine: set a token with --token or MCPW_TOKEN, or give clients tokens in the config's serve.tokens"
    )]
    TokenRequired(SocketAddr),
    /// `serve.tokens` has invalid entries (reported as config problems).
    #[error(
        "the config's serve.tokens has errors (see above): fix them, so that no client is admitted otherwise than written"
    )]
    TokensInvalid,
    /// A client token's value could not be had.
    #[error("token \"{name}\" (serve.tokens[{index}]): {why}")]
    TokenValue {
        /// The token's name.
        name: String,
        /// Its position in `serve.tokens`.
        index: usize,
        /// Why (never the value).
        why: String,
    },
    /// An introspecting client's secret could not be had.
    #[error("the introspection secret of issuer {issuer} (serve.oauth): {why}")]
    IntrospectionSecret {
        /// The issuer.
        issuer: String,
        /// Why (never the value).
        why: String,
    },
    /// Two clients have the same token.
    #[error("tokens \"{0}\" and \"{1}\" have the same value: give each client its own")]
    SameToken(String, String),
    /// The socket.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The server stopped with an error.
    #[error("HTTP server: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves until `shutdown` resolves, then drains: no new sessions, and the
/// requests in flight get up to `options.drain` to finish. Returns the bound
/// address through `bound` before accepting (port 0 picks a free port).
pub async fn serve(
    shared: Arc<Gateway>,
    options: HttpOptions,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let loopback = options.addr.ip().is_loopback();
    let oauth = options.oauth.clone().map(Arc::new);
    let clients = admitted(loopback, &options)?;
    let mut config = transport_config(loopback);
    let max_in_flight = shared.host().config().settings.max_requests_in_flight;
    // With shared state: the sessions every replica can take up, whose owner
    // every replica knows, and what `/readyz` reports of Redis.
    let shared_sessions = shared.replicas.as_ref().map(|r| r.store());
    let ops = Arc::new(Ops::new(shared_sessions.clone()));
    ready_once_listed(shared.host().clone(), ops.clone());
    let metrics_host = shared.host().clone();
    let page_state = shared.clone();
    let views = shared.clone();
    let closing = shared.host().clone();
    let mut local = LocalSessionManager::default();
    local.session_config.keep_alive = Some(options.session_idle);
    let keep_alive = local.session_config.keep_alive;
    let sessions = Arc::new(sessions::CappedSessions::new(
        local,
        options.max_sessions.max(1),
    ));
    if let Some(replicas) = &shared.replicas {
        share_sessions(replicas, &mut config, &sessions);
    }
    let service: StreamableHttpService<Session, _> = StreamableHttpService::new(
        move || Ok(Session::new(shared.clone())),
        sessions.clone(),
        config,
    );
    let guard = Arc::new(body::Guard {
        sessions: sessions.clone(),
        keep_alive,
        ops: ops.clone(),
        per_session: per_session::PerSession::new(max_in_flight),
    });
    let router = mcp_routes(service, guard, sessions, shared_sessions, metrics_host);
    let router = super::page::api(router, page_state.clone());
    let router = super::app_host::api(router, page_state.clone());
    let router = resource::routes(behind_tokens(router, clients), oauth);
    // The probes (and the page's own files) say nothing of the servers:
    // any name may ask for them.
    let router = match loopback {
        true => router.layer(middleware::from_fn(hosts::this_machine_only)),
        false => router,
    };
    let router = with_probes(router, ops.clone());
    let router = super::sign_in::routes(router, page_state.clone());
    let router = super::page::files(router);
    let router = super::app_host::files(router, page_state);
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.addr,
            source,
        })?;
    let addr = listener.local_addr()?;
    views.open_views(page_base(addr), None);
    bound(addr);
    let stop = drain_after(shutdown, &ops, options.drain, &closing);
    tokio::select! {
        served = axum::serve(crate::net::listener(listener), router).into_future() => served?,
        () = stop => {}
    }
    Ok(())
}

/// Serves the live page and the views of MCP Apps beside an MCP session on
/// stdio, on a loopback address, behind a token of its own (random, given
/// in the page's address), until `shutdown` resolves. Returns once bound,
/// with the page's address.
pub async fn serve_page(
    shared: Arc<Gateway>,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<String, ServeError> {
    if !addr.ip().is_loopback() {
        return Err(ServeError::TokenRequired(addr));
    }
    let token = super::views::random_id();
    let page = ClientToken {
        scope: ClientScope::every("page"),
        secret: token.clone(),
    };
    let clients = clients::Clients::new(vec![page], None, IntrospectionSecrets::default())?;
    let router = super::page::api(axum::Router::new(), shared.clone());
    let router = super::app_host::api(router, shared.clone());
    let router = behind_tokens(router, Some(Arc::new(clients)));
    let router = router.layer(middleware::from_fn(hosts::this_machine_only));
    let router = super::app_host::files(super::page::files(router), shared.clone());
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let base = page_base(listener.local_addr()?);
    shared.open_views(base.clone(), Some(token.clone()));
    tokio::spawn(async move {
        let served = axum::serve(crate::net::listener(listener), router)
            .with_graceful_shutdown(shutdown)
            .into_future();
        if let Err(e) = served.await {
            tracing::warn!("the live page stopped: {e}");
        }
    });
    Ok(format!("{base}/#token={token}"))
}

/// rmcp's transport settings: origins checked against DNS rebinding, and
/// bodies size-limited.
fn transport_config(loopback: bool) -> StreamableHttpServerConfig {
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
        .enforce_origin_validation();
    config.max_request_body_bytes = MAX_BODY_BYTES;
    if !loopback {
        // Behind a token, DNS rebinding cannot reach the tools; clients use
        // whatever host name reaches this machine.
        config = config.disable_allowed_hosts();
    }
    config
}

/// Marks `ops` ready once the catalog snapshot (from the cache, or listed)
/// is built, without holding up the listening.
fn ready_once_listed(host: Arc<Host>, ops: Arc<Ops>) {
    tokio::spawn(async move {
        if host.snapshot().await.is_ok() {
            ops.set_ready();
        }
    });
}

/// Lets any replica take up a session another began: rmcp replays its
/// `initialize` from the store, then the session loads what it chose. A
/// session closed elsewhere is closed here too.
fn share_sessions(
    replicas: &Arc<Replicas>,
    config: &mut StreamableHttpServerConfig,
    sessions: &Arc<Sessions>,
) {
    replicas.listen();
    config.session_store = Some(replicas.store());
    let sessions = Arc::downgrade(sessions);
    replicas.on_closed(move |id| {
        if let Some(sessions) = sessions.upgrade() {
            tokio::spawn(async move {
                let _ = sessions.close_session(&id.into()).await;
            });
        }
    });
}

/// Who is admitted: everyone on loopback without tokens or `serve.oauth`;
/// else the tokens' clients and the issuers' principals.
fn admitted(
    loopback: bool,
    options: &HttpOptions,
) -> Result<Option<Arc<clients::Clients>>, ServeError> {
    let (tokens, oauth) = (&options.tokens, &options.oauth);
    match (tokens.is_empty() && oauth.is_none(), loopback) {
        (true, true) => Ok(None),
        (true, false) => Err(ServeError::TokenRequired(options.addr)),
        (false, _) => {
            let secrets = options.oauth_secrets.clone();
            let clients = clients::Clients::new(tokens.clone(), oauth.clone(), secrets)?;
            Ok(Some(Arc::new(clients)))
        }
    }
}

/// `/mcp` and `/metrics`, the routes a token guards.
fn mcp_routes(
    service: StreamableHttpService<Session, Sessions>,
    guard: Arc<body::Guard>,
    sessions: Arc<Sessions>,
    shared_sessions: Option<Arc<SharedSessions>>,
    metrics_host: Arc<Host>,
) -> axum::Router {
    // Layers added later run first: the token before anything reads the body,
    // a session's owner checked before rmcp sees the request.
    axum::Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn(move |req: Request, next: Next| {
            body::json_rpc(guard.clone(), req, next)
        }))
        .route_layer(middleware::from_fn(move |req: Request, next: Next| {
            clients::own_sessions(sessions.clone(), shared_sessions.clone(), req, next)
        }))
        .route(
            "/metrics",
            get(move |request: Request| metrics(metrics_host.clone(), request)),
        )
}

/// The metrics, for a client that sees every server: they name every server
/// and tool, so a client that sees only some may not read them.
async fn metrics(host: Arc<Host>, request: Request) -> Response {
    let limited = request
        .extensions()
        .get::<ClientScope>()
        .is_some_and(ClientScope::is_limited);
    if limited {
        let why = "this token sees only some servers; metrics are for tokens that see every server";
        return (StatusCode::FORBIDDEN, why).into_response();
    }
    ops::metrics(host.metrics().render()).into_response()
}

/// `router` requiring a token, when tokens are configured.
fn behind_tokens(router: axum::Router, clients: Option<Arc<clients::Clients>>) -> axum::Router {
    match clients {
        Some(clients) => router.layer(middleware::from_fn(move |req: Request, next: Next| {
            clients::require_token(clients.clone(), req, next)
        })),
        None => router,
    }
}

/// `router` with the probes, which carry no token: they say nothing but
/// live, ready or draining.
fn with_probes(router: axum::Router, probes: Arc<Ops>) -> axum::Router {
    router
        .route("/healthz", get(|| async { Ops::health() }))
        .route("/readyz", get(move || async move { probes.readiness() }))
}

/// Waits for `shutdown`, then for the requests in flight. Still serving
/// while draining: sessions in progress go on, new ones get a 503 and
/// `/readyz` says "draining". Open event streams do not hold the stop up, as
/// a graceful shutdown of the server would.
async fn drain_after(
    shutdown: impl Future<Output = ()>,
    ops: &Ops,
    drain: std::time::Duration,
    closing: &Host,
) {
    shutdown.await;
    let in_flight = ops.in_flight();
    tracing::info!(
        "draining: no new sessions; {in_flight} request(s) in flight get up to {} s",
        drain.as_secs()
    );
    if !ops.drain(drain).await {
        tracing::warn!(
            "stopping with {} request(s) still in flight after {} s: their servers are closed, and they are answered with an error",
            ops.in_flight(),
            drain.as_secs()
        );
        // A call cut by the stop gets an answer, not a dropped stream
        // (which a client may wait on, or resume, for ever): closing
        // the servers fails the calls, and their errors go out.
        closing.servers().abort().await;
        ops.drain(ANSWERS_AFTER_CUT).await;
    }
}

/// Where the page is for a user on this machine: an address bound to every
/// interface is reached at loopback.
fn page_base(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => std::net::Ipv4Addr::LOCALHOST.into(),
        ip if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}
