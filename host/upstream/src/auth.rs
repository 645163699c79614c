//! OAuth 2.1 for remote MCP servers, through rmcp's `auth` feature: logging
//! in ([`flow`]), keeping the credentials safe ([`store`]), and lending them
//! to connections, refreshed under a cross-process lock.
//!
//! What is kept per server URL (and per person, for a person's own login):
//! rmcp's credentials (client id, tokens, the issuer they came from) and the
//! authorization server's metadata, so that a connection can refresh without
//! discovering it again.

mod browser;
mod callback;
mod came_back;
mod credentials;
mod cross_app;
mod exchange;
mod fetch;
mod finished;
pub mod flow;
mod identify;
mod identity;
mod owner;
mod renew;
mod sign_in;
pub mod store;

pub use browser::available as browser_available;
pub use callback::redirect_page;
pub use came_back::finish as finish_sign_in;
pub use credentials::ServerCredentials;
pub use exchange::{MARGIN as EXCHANGE_MARGIN, TokenExchange};
pub use finished::{Configured, Onward, SignedIn};
pub use flow::{LoggedIn, Login};
pub use identify::{Identify, Party, Then, subject_at};
pub use owner::{BadOwner, Owner};
pub use renew::{CrossAppLogin, NotRenewed};
pub use sign_in::{SignIn, sign_in_under_way};

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
    /// An exchange of cross-app access (the identity provider's, or the
    /// server's authorization server's).
    #[error("{0}")]
    CrossApp(String),
    /// An exchange of the caller's token (RFC 8693).
    #[error("the exchange of the caller's token failed: {0}")]
    Exchange(String),
}

/// A secret of server `server`'s `oauth` config (its `!command` run), for
/// `field`; an error says why, never the value.
async fn secret(server: &str, value: &str, field: &str) -> Result<String, AuthFailure> {
    crate::secrets::resolve(value, field, server)
        .await
        .map_err(|e| AuthFailure::Config(e.to_string()))
}

/// As [`secret`], for a field that may be unset.
async fn secret_if_set(
    server: &str,
    value: Option<&str>,
    field: &str,
) -> Result<Option<String>, AuthFailure> {
    match value {
        Some(v) => secret(server, v, field).await.map(Some),
        None => Ok(None),
    }
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

/// The vault for a process with shared state: sealed in Redis when the
/// team's key is given (`$MCPW_SHARED_STATE_KEY`, else
/// `settings.sharedStateKey`), otherwise the local vault, with a warning
/// that logins are not shared. A key that cannot be had (a failing
/// command, one too short) leaves credentials unreachable rather than
/// falling back: a replica must not quietly keep logins to itself.
/// Blocking (it may run the key's command).
pub fn shared_vault(
    local: Vault,
    state: std::sync::Arc<crate::team_state::SharedState>,
    config: &Config,
    env: &Environment,
) -> Result<Vault, String> {
    match team_secret(config, env)? {
        Some(secret) => local.in_shared_state(state, &secret),
        None => {
            tracing::warn!(
                "shared state {} has no key for credentials (${}, or settings.sharedStateKey): logins stay on this machine",
                state.location(),
                store::KEY_ENV
            );
            Ok(local)
        }
    }
}

/// The team's key (`$MCPW_SHARED_STATE_KEY`, else `settings.sharedStateKey`,
/// which may name a command), if one is given. Blocking (it may run the
/// key's command).
fn team_secret(config: &Config, env: &Environment) -> Result<Option<String>, String> {
    Ok(Some(
        match (env.get(store::KEY_ENV), &config.settings.shared_state_key) {
            (Some(k), _) if !k.trim().is_empty() => k.to_string(),
            (_, Some(written)) => {
                let interpolated = crate::config::interpolate::interpolate(written, env);
                if let Some(var) = interpolated.missing.first() {
                    return Err(format!("settings.sharedStateKey: ${{{var}}} is not set"));
                }
                let resolving = crate::secrets::resolve_value(&interpolated.value);
                // On a thread of its own: this may run inside or outside a runtime.
                let resolved = std::thread::scope(|scope| {
                    scope
                        .spawn(|| {
                            tokio::runtime::Builder::new_current_thread()
                                .enable_all()
                                .build()
                                .map_err(|e| e.to_string())?
                                .block_on(resolving)
                                .map_err(|why| {
                                    format!("settings.sharedStateKey: its command {why}")
                                })
                        })
                        .join()
                        .unwrap_or_else(|_| Err("the key's command failed".into()))
                });
                resolved?
            }
            _ => return Ok(None),
        },
    ))
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

/// What `vault` holds for the server at `url`, as its shared login or as
/// `owner`'s own (never a secret).
pub async fn status(vault: &Vault, url: &str, owner: Option<&str>) -> Result<Status, AuthFailure> {
    let stored = ServerCredentials::of(vault.clone(), url, owner)
        .stored()
        .await?;
    Ok(Status::of(stored))
}

impl Status {
    /// When the token expires, if it is good for `margin` more
    /// (`Some(None)`: it says no expiry); `None` when there is none, or it
    /// lapses within the margin.
    fn good_for(&self, margin: Duration) -> Option<Option<u64>> {
        let now = crate::clock::now_secs();
        let lasts = self.expires_at.is_none_or(|at| at > now + margin.as_secs());
        (self.logged_in && lasts).then_some(self.expires_at)
    }

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

/// An HTTP client for the server at `url` that sends its stored token (the
/// shared login's, or `owner`'s own), refreshing it when it expires or is
/// refused (one refresh at a time across processes); `None` when nothing
/// usable is stored.
pub async fn client_for<H>(
    vault: &Vault,
    url: &str,
    owner: Option<&str>,
    http: H,
) -> Result<Option<AuthClient<H>>, AuthFailure> {
    let credentials = ServerCredentials::of(vault.clone(), url, owner);
    let (stored, metadata) = credentials.read().await?;
    let Some(metadata) = metadata else {
        return Ok(None);
    };
    // An expired token that cannot be refreshed is as good as none.
    let held = Status::of(stored);
    let now = crate::clock::now_secs();
    if !held.logged_in || !held.refreshable && held.expires_at.is_some_and(|at| at <= now + 1) {
        return Ok(None);
    }
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(credentials);
    manager.set_metadata(metadata);
    if !manager.initialize_from_store().await? {
        return Ok(None);
    }
    Ok(Some(AuthClient::new(http, manager)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Environment;

    /// The key of the shared vault: the variable first, then the setting
    /// (`!command`, `${VAR}`); none keeps logins local; one that cannot be
    /// had is an error, not a quiet fallback.
    #[test]
    fn the_shared_vaults_key_comes_from_the_environment_or_the_setting() {
        let config = |key: Option<&str>| {
            let mut settings = serde_json::json!({"credentialStore": "file"});
            if let Some(k) = key {
                settings["sharedStateKey"] = k.into();
            }
            crate::config::load(&crate::config::ConfigSources {
                user_file: None,
                user_value: Some(serde_json::json!({"settings": settings})),
                project_dir: None,
                env: Environment::from_pairs([("HOME", "/home")]),
            })
        };
        let state = crate::team_state::SharedState::open("redis://127.0.0.1:1/0").unwrap();
        let vault = |key: Option<&str>, env: Environment| {
            let cfg = config(key);
            shared_vault(self::vault(&cfg, &env), state.clone(), &cfg, &env)
        };
        let home = || Environment::from_pairs([("HOME", "/home")]);
        assert!(!vault(None, home()).unwrap().is_shared());
        let from_env = home().with(store::KEY_ENV, "a team secret from the environment");
        assert!(vault(None, from_env).unwrap().is_shared());
        let command = Some("!printf 'a team secret from a command'");
        assert!(vault(command, home()).unwrap().is_shared());
        let variable = Some("${TEAM_KEY}");
        let with_var = home().with("TEAM_KEY", "a team secret in a variable");
        assert!(vault(variable, with_var).unwrap().is_shared());
        let missing = vault(variable, home()).unwrap_err();
        assert!(missing.contains("TEAM_KEY"), "{missing}");
        let failing = vault(Some("!exit 3"), home()).unwrap_err();
        assert!(failing.contains("sharedStateKey"), "{failing}");
        let short = vault(Some("!printf short"), home()).unwrap_err();
        assert!(short.contains("openssl rand"), "{short}");
    }
}
