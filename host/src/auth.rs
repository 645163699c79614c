//! OAuth 2.1 for remote MCP servers, through rmcp's `auth` feature: logging
//! in ([`flow`]), keeping the credentials safe ([`store`]), and lending them
//! to connections, refreshed under a cross-process lock.
//!
//! What is kept per server URL: rmcp's credentials (client id, tokens, the
//! issuer they came from) and the authorization server's metadata, so that a
//! connection can refresh without discovering it again.

mod browser;
mod callback;
mod credentials;
pub mod flow;
pub mod store;

pub use browser::available as browser_available;
pub use credentials::ServerCredentials;
pub use flow::{LoggedIn, Login};

use crate::config::Config;
use crate::paths::Environment;
use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager, StoredCredentials};
use std::time::Duration;
use store::Vault;

/// Why a login or a use of credentials failed.
#[derive(Debug, thiserror::Error)]
pub enum AuthFailure {
    /// The OAuth exchange itself (discovery, registration, tokens).
    #[error("{0}")]
    Auth(#[from] AuthError),
    /// The loopback redirect could not be served or read.
    #[error("the login's redirect could not be received: {0}")]
    Callback(String),
    /// Nobody finished the login in time.
    #[error("the login was not finished within {} s", .0.as_secs())]
    TimedOut(Duration),
    /// The credential store.
    #[error("{0}")]
    Store(String),
    /// The server's `oauth` config (a secret that cannot be resolved).
    #[error("{0}")]
    Config(String),
}

impl From<store::StoreError> for AuthFailure {
    fn from(e: store::StoreError) -> Self {
        AuthFailure::Store(e.to_string())
    }
}

/// The vault the config chooses (`settings.credentialStore`), under mcpw's
/// config directory.
pub fn vault(config: &Config, env: &Environment) -> Vault {
    Vault::new(
        config.settings.credential_store,
        env.config_home().join("mcpw"),
    )
}

/// What mcpw holds for one server.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Credentials with a token are stored.
    pub logged_in: bool,
    /// The authorization server that issued them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The client mcpw is known as there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The access token's expiry (seconds since the epoch), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// A refresh token is held.
    pub refreshable: bool,
}

/// What `vault` holds for the server at `url` (never a secret).
pub async fn status(vault: &Vault, url: &str) -> Result<Status, AuthFailure> {
    let stored = ServerCredentials::new(vault.clone(), url).stored().await?;
    Ok(Status::of(stored))
}

impl Status {
    /// What stored credentials say (never a secret).
    fn of(stored: Option<StoredCredentials>) -> Status {
        let Some(c) = stored else {
            return Status {
                logged_in: false,
                issuer: None,
                client_id: None,
                scopes: Vec::new(),
                expires_at: None,
                refreshable: false,
            };
        };
        let token = c
            .token_response
            .as_ref()
            .and_then(|t| serde_json::to_value(t).ok())
            .unwrap_or_default();
        let expires_at = token["expires_in"]
            .as_u64()
            .zip(c.token_received_at)
            .map(|(e, at)| at + e);
        Status {
            logged_in: c.token_response.is_some(),
            issuer: c.issuer,
            client_id: Some(c.client_id),
            scopes: c.granted_scopes,
            expires_at,
            refreshable: token.get("refresh_token").is_some_and(|r| !r.is_null()),
        }
    }
}

/// An HTTP client for the server at `url` that sends its stored token,
/// refreshing it when it expires or is refused (one refresh at a time across
/// processes); `None` when nothing usable is stored.
pub async fn client_for(
    vault: &Vault,
    url: &str,
) -> Result<Option<AuthClient<reqwest::Client>>, AuthFailure> {
    let credentials = ServerCredentials::new(vault.clone(), url);
    let (stored, metadata) = credentials.read().await?;
    let Some(metadata) = metadata else {
        return Ok(None);
    };
    // An expired token that cannot be refreshed is as good as none.
    let held = Status::of(stored);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if !held.logged_in || !held.refreshable && held.expires_at.is_some_and(|at| at <= now + 1) {
        return Ok(None);
    }
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(credentials);
    manager.set_metadata(metadata);
    if !manager.initialize_from_store().await? {
        return Ok(None);
    }
    Ok(Some(AuthClient::new(reqwest::Client::new(), manager)))
}
