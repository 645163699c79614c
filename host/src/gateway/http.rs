//! Serving the gateway over Streamable HTTP: loopback by default; any other
//! address needs a bearer token; `Host` and `Origin` are checked against
//! DNS rebinding; request bodies are size-limited.

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
    let service: StreamableHttpService<Gateway, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(Gateway::new(shared.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut router = axum::Router::new().route_service("/mcp", service);
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
