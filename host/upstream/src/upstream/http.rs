//! Streamable HTTP servers, and the request headers shared with legacy SSE:
//! configured `headers` (secret commands resolved) plus bearer auth.

mod client;

pub use client::HttpClient;

use super::handler::UpstreamHandler;
use super::{ConnectContext, ConnectError};
use crate::config::{ServerConfig, Transport};
use crate::secrets;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use std::collections::HashMap;

/// Resolved request headers.
pub(crate) type Headers = Vec<(String, String)>;

/// An HTTP status from a transport that is not rmcp's (legacy SSE).
#[derive(Debug, thiserror::Error)]
#[error("HTTP {0}")]
pub(crate) struct StatusError(pub u16);

/// The headers to send: `headers` from the config plus `Authorization: Bearer`
/// from `bearerToken` / `bearerTokenEnv` (unless an Authorization header is set).
pub(crate) async fn request_headers(
    config: &ServerConfig,
    ctx: &ConnectContext,
) -> Result<Headers, ConnectError> {
    let Transport::Http { headers, .. } = &config.transport else {
        return Ok(Vec::new());
    };
    let mut out = secrets::resolve_all(
        headers,
        "headers",
        &ctx.server,
        &ctx.redact,
        Some(&ctx.secrets),
    )
    .await?;
    let token = match (&config.bearer_token, &config.bearer_token_env) {
        (Some(t), _) => Some(secrets::resolve(t, "bearerToken", &ctx.server).await?),
        (None, Some(var)) => match ctx.env.get(var) {
            Some(v) if !v.is_empty() => Some(v.to_string()),
            _ => {
                return Err(ConnectError::Secret(format!(
                    "server \"{}\": `bearerTokenEnv` names {var}, which is not set",
                    ctx.server
                )));
            }
        },
        (None, None) => None,
    };
    if let Some(token) = &token {
        ctx.redact.add_secret(token);
    }
    if let Some(token) = token
        && !out
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    {
        out.push(("Authorization".into(), format!("Bearer {token}")));
    }
    Ok(out)
}

/// The headers as a map; a name or value that HTTP cannot carry is an error
/// naming the header (never its value).
pub(crate) fn header_map(headers: &Headers) -> Result<HeaderMap, ConnectError> {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| ConnectError::Http(format!("invalid header name {k:?}")))?;
        let value = HeaderValue::from_str(v)
            .map_err(|_| ConnectError::Http(format!("header {k} has a value HTTP cannot carry")))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// The media type a response says it carries (`application/json`), lowercase,
/// without parameters.
pub(super) fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(reqwest::header::CONTENT_TYPE)?.to_str().ok()?;
    let media = value.split(';').next().unwrap_or("");
    Some(media.trim().to_ascii_lowercase())
}

/// The HTTP client of a connection: the progress it reads goes to `routes`.
fn http_client(routes: &super::handler::Routes) -> HttpClient {
    HttpClient::new(routes.progress.clone())
}

pub(crate) async fn connect(
    url: &str,
    oauth: &crate::config::OAuthConfig,
    headers: &Headers,
    ctx: &ConnectContext,
    routes: &super::handler::Routes,
) -> Result<RunningService<RoleClient, UpstreamHandler>, ConnectError> {
    let custom: HashMap<HeaderName, HeaderValue> = header_map(headers)?
        .into_iter()
        .filter_map(|(k, v)| Some((k?, v)))
        .collect();
    // Credentials that cannot be read (no keyring here, say) are as good as
    // none: a server that needs no login still works, and one that does
    // says so, and `mcpw auth login` names the store's problem.
    let owner = ctx.owner.as_deref();
    let authorized = match &ctx.vault {
        Some(vault) => {
            match crate::auth::client_for(vault, url, owner, http_client(routes)).await {
                Ok(client) => client,
                Err(e) => {
                    tracing::debug!(server = %ctx.server, "no usable OAuth credentials: {e}");
                    None
                }
            }
        }
        None => None,
    };
    // A client with its own credentials, or the person's ID token, logs
    // itself in: no person needed. A person's connection is theirs alone.
    let authorized = match (&ctx.vault, authorized) {
        (Some(vault), None) if oauth.unattended() && owner.is_none() => {
            unattended_login(url, oauth, vault, ctx, routes).await?
        }
        (_, authorized) => authorized,
    };
    match authorized {
        Some(client) => connect_with(client, url, custom, ctx, routes).await,
        None => connect_with(http_client(routes), url, custom, ctx, routes).await,
    }
}

/// Takes a token by a grant that needs no person, and a client that sends it.
async fn unattended_login(
    url: &str,
    oauth: &crate::config::OAuthConfig,
    vault: &crate::auth::store::Vault,
    ctx: &ConnectContext,
    routes: &super::handler::Routes,
) -> Result<Option<rmcp::transport::auth::AuthClient<HttpClient>>, ConnectError> {
    let failed = |e: crate::auth::AuthFailure| {
        ConnectError::Secret(format!(
            "server \"{}\": {} failed: {e}",
            ctx.server,
            oauth.grant_type.describe()
        ))
    };
    let (server, url_owned, oauth_owned, vault_owned, env) = (
        ctx.server.clone(),
        url.to_string(),
        oauth.clone(),
        vault.clone(),
        ctx.env.clone(),
    );
    // rmcp's signed-assertion exchange cannot move between threads: it runs
    // on a thread of its own, blocking there.
    let runtime = tokio::runtime::Handle::current();
    let login = tokio::task::spawn_blocking(move || {
        runtime.block_on(
            crate::auth::Login {
                server: &server,
                url: &url_owned,
                oauth: &oauth_owned,
                vault: vault_owned,
                env: &env,
                no_browser: true,
                challenge: None,
                wait: std::time::Duration::from_secs(30),
                owner: None,
            }
            .run_unattended(),
        )
    });
    login
        .await
        .map_err(|e| failed(crate::auth::AuthFailure::Config(e.to_string())))?
        .map_err(failed)?;
    crate::auth::client_for(vault, url, None, http_client(routes))
        .await
        .map_err(failed)
}

pub(super) async fn connect_with<C>(
    client: C,
    url: &str,
    custom: HashMap<HeaderName, HeaderValue>,
    ctx: &ConnectContext,
    routes: &super::handler::Routes,
) -> Result<RunningService<RoleClient, UpstreamHandler>, ConnectError>
where
    C: StreamableHttpClient + Clone + Send + Sync + 'static,
{
    let transport = || {
        let config =
            StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom.clone());
        StreamableHttpClientTransport::with_client(client.clone(), config)
    };
    let first = super::handshake(UpstreamHandler::new(ctx, routes.clone()), transport(), ctx)
        .await
        .map_err(|e| ConnectError::from_init(e, None));
    match first {
        // Whatever went wrong with `server/discover` (an answer that is not a
        // discover result, say), a server of the `initialize` era may still
        // be there: ask it that way before giving up on Streamable HTTP.
        Err(e) if !ctx.legacy_only && !e.is_auth() => {
            tracing::debug!(server = %ctx.server, "server/discover failed ({e}); trying initialize");
            let legacy = ConnectContext {
                legacy_only: true,
                ..ctx.clone()
            };
            super::handshake(
                UpstreamHandler::new(&legacy, routes.clone()),
                transport(),
                &legacy,
            )
            .await
            .map_err(|e| ConnectError::from_init(e, None))
        }
        other => other,
    }
}
