//! Serving the gateway over Streamable HTTP: loopback by default; any other
//! address needs a bearer token; `Host` and `Origin` are checked against
//! DNS rebinding; request bodies are size-limited; sessions are capped
//! ([`sessions`]); bodies that are not one JSON-RPC message get JSON-RPC
//! errors ([`body`]).

mod body;
mod sessions;

pub use sessions::DEFAULT_MAX_SESSIONS;

use super::{Gateway, Shared};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// Where and how to listen.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Address to bind.
    pub addr: SocketAddr,
    /// Bearer token clients must send; required unless `addr` is loopback.
    pub token: Option<String>,
    /// Sessions open at once (at least 1); an `initialize` beyond them is
    /// refused with HTTP 503 and a JSON-RPC error.
    pub max_sessions: usize,
}

/// Why serving could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback bind without a token.
    #[error("binding {0} exposes mcpw beyond this machine: set a token with --token or MCPW_TOKEN")]
    TokenRequired(SocketAddr),
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn require_token(token: Arc<String>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::as_bytes);
    if presented.is_some_and(|p| constant_time_eq(p, token.as_bytes())) {
        return next.run(request).await;
    }
    let mut response =
        (StatusCode::UNAUTHORIZED, "a valid bearer token is required").into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// Serves until `shutdown` resolves. Returns the bound address through `bound`
/// before accepting (port 0 picks a free port).
pub async fn serve(
    shared: Arc<Shared>,
    options: HttpOptions,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let loopback = options.addr.ip().is_loopback();
    if !loopback && options.token.is_none() {
        return Err(ServeError::TokenRequired(options.addr));
    }
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
        .enforce_origin_validation();
    config.max_request_body_bytes = MAX_BODY_BYTES;
    if !loopback {
        // Behind a token, DNS rebinding cannot reach the tools; clients use
        // whatever host name reaches this machine.
        config = config.disable_allowed_hosts();
    }
    let local = LocalSessionManager::default();
    let keep_alive = local.session_config.keep_alive;
    let sessions = Arc::new(sessions::CappedSessions::new(
        local,
        options.max_sessions.max(1),
    ));
    let service: StreamableHttpService<Gateway, _> = StreamableHttpService::new(
        move || Ok(Gateway::new(shared.clone())),
        sessions.clone(),
        config,
    );
    let guard = Arc::new(body::Guard {
        sessions,
        keep_alive,
    });
    // Layers added later run first: the token before anything reads the body.
    let mut router = axum::Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn(move |req: Request, next: Next| {
            body::json_rpc(guard.clone(), req, next)
        }));
    if let Some(token) = options.token {
        let token = Arc::new(token);
        router = router.layer(middleware::from_fn(move |req: Request, next: Next| {
            require_token(token.clone(), req, next)
        }));
    }
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.addr,
            source,
        })?;
    bound(listener.local_addr()?);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}
