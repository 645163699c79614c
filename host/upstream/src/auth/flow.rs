//! Logging in to one server: the authorization code flow (PKCE, state,
//! `resource`, `iss` checked — all by rmcp) with the person in a browser or
//! pasting the redirect back, the client credentials grant, or cross-app
//! access ([`super::cross_app`]). What is obtained goes to the vault.

use super::callback::Callback;
use super::credentials::ServerCredentials;
use super::cross_app;
use super::store::Vault;
use super::{AuthFailure, browser};
use crate::config::{GrantType, OAuthConfig};
use crate::paths::Environment;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, ClientCredentialsConfig, JwtSigningAlgorithm, OAuthTokenResponse,
    StoredCredentials,
};
use std::io::BufRead;
use std::time::Duration;

/// One login.
pub struct Login<'a> {
    /// The server's name (messages).
    pub server: &'a str,
    /// Its MCP endpoint.
    pub url: &'a str,
    /// Its `oauth` config.
    pub oauth: &'a OAuthConfig,
    /// Where the credentials go.
    pub vault: Vault,
    /// For `$BROWSER`.
    pub env: &'a Environment,
    /// Print the URL and read the redirect URL pasted on stdin, opening no browser.
    pub no_browser: bool,
    /// The server's `WWW-Authenticate` challenge, when a request met one: it
    /// names the resource metadata and the scope wanted.
    pub challenge: Option<String>,
    /// How long the person has to finish.
    pub wait: Duration,
    /// The principal the login is for, when it is one person's own rather
    /// than the server's shared login.
    pub owner: Option<&'a str>,
}

/// What a login obtained.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedIn {
    /// The authorization server.
    pub issuer: Option<String>,
    /// The client mcpw was known as.
    pub client_id: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

impl Login<'_> {
    /// Runs the login; the person is told on stderr what to do.
    pub async fn run(self) -> Result<LoggedIn, AuthFailure> {
        match self.oauth.grant_type {
            // A server that takes each caller's token in exchange has its
            // shared login (the operator's own) made in a browser.
            GrantType::AuthorizationCode | GrantType::TokenExchange => {
                let (manager, credentials, _) = self.discover().await?;
                self.authorization_code(manager, credentials).await
            }
            GrantType::ClientCredentials | GrantType::IdJag => self.run_unattended().await,
        }
    }

    /// A grant that needs no person and no browser (client credentials, or
    /// cross-app access): what a connection runs by itself.
    pub async fn run_unattended(self) -> Result<LoggedIn, AuthFailure> {
        let (manager, credentials, metadata) = self.discover().await?;
        match self.oauth.grant_type {
            GrantType::IdJag => self.cross_app(metadata, credentials).await,
            _ => {
                self.client_credentials(manager, credentials, metadata.issuer)
                    .await
            }
        }
    }

    /// Finds the authorization server and keeps its metadata.
    async fn discover(
        &self,
    ) -> Result<
        (
            AuthorizationManager,
            ServerCredentials,
            AuthorizationMetadata,
        ),
        AuthFailure,
    > {
        let credentials = ServerCredentials::of(self.vault.clone(), self.url, self.owner);
        let (manager, metadata) =
            discover(self.url, self.challenge.as_deref(), &credentials).await?;
        Ok((manager, credentials, metadata))
    }

    /// `oauth.scope`, split.
    fn scopes(&self) -> Vec<String> {
        scopes(self.oauth)
    }

    async fn authorization_code(
        &self,
        manager: AuthorizationManager,
        credentials: ServerCredentials,
    ) -> Result<LoggedIn, AuthFailure> {
        let callback = Callback::bind(self.oauth.callback_port)
            .await
            .map_err(|e| AuthFailure::Callback(e.to_string()))?;
        let request = request(self.server, self.oauth, callback.redirect_uri()).await?;
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| e)?;
        let url = session.get_authorization_url().to_string();
        let whose = self.owner.map(|o| format!(" for {o}")).unwrap_or_default();
        eprintln!("To log in to \"{}\"{whose}, open:\n  {url}", self.server);
        if self.no_browser {
            eprintln!("Then paste here the address your browser was sent back to:");
        } else if !browser::open(&url, self.env) {
            eprintln!("(no browser could be started: open the address yourself)");
        }
        let pasted = async {
            if self.no_browser {
                read_line().await
            } else {
                std::future::pending().await
            }
        };
        let redirected = async {
            tokio::select! {
                r = callback.wait(self.server) => r.map_err(|e| AuthFailure::Callback(e.to_string())),
                line = pasted => line,
            }
        };
        let redirect = tokio::time::timeout(self.wait, redirected)
            .await
            .map_err(|_| AuthFailure::TimedOut(self.wait))??;
        session.handle_callback_url(&redirect).await?;
        let stored = credentials
            .stored()
            .await
            .map_err(|e| AuthFailure::Store(e.to_string()))?
            .ok_or(AuthFailure::Auth(AuthError::AuthorizationRequired))?;
        Ok(logged_in(stored))
    }

    async fn client_credentials(
        &self,
        mut manager: AuthorizationManager,
        credentials: ServerCredentials,
        issuer: Option<String>,
    ) -> Result<LoggedIn, AuthFailure> {
        let client_id = self.oauth.client_id.clone().unwrap_or_default();
        let config = match &self.oauth.private_key {
            Some(key) => ClientCredentialsConfig::PrivateKeyJwt {
                client_id: client_id.clone(),
                signing_key: self.secret(key, "oauth.privateKey").await?.into_bytes(),
                signing_algorithm: signing_algorithm(self.oauth.signing_algorithm.as_deref()),
                token_endpoint_audience: None,
                scopes: self.scopes(),
                resource: Some(self.url.to_string()),
            },
            None => ClientCredentialsConfig::ClientSecret {
                client_id: client_id.clone(),
                client_secret: match &self.oauth.client_secret {
                    Some(s) => self.secret(s, "oauth.clientSecret").await?,
                    None => String::new(),
                },
                scopes: self.scopes(),
                resource: Some(self.url.to_string()),
            },
        };
        manager.configure_client_credentials(&config)?;
        let token = manager.exchange_client_credentials(&config).await?;
        keep(&credentials, client_id, token, self.scopes(), issuer).await
    }

    /// A secret of the config (`!command` run), for `field`.
    async fn secret(&self, value: &str, field: &str) -> Result<String, AuthFailure> {
        super::secret(self.server, value, field).await
    }

    /// Cross-app access: the ID token exchanged for a token, kept.
    async fn cross_app(
        &self,
        metadata: AuthorizationMetadata,
        credentials: ServerCredentials,
    ) -> Result<LoggedIn, AuthFailure> {
        let exchange = cross_app::Exchange {
            server: self.server,
            url: self.url,
            oauth: self.oauth,
            challenge: self.challenge.as_deref(),
            scopes: self.scopes(),
            id_token: None,
        };
        let (token, scopes) = exchange.run(&metadata).await?;
        let client_id = self.oauth.client_id.clone().unwrap_or_default();
        keep(&credentials, client_id, token, scopes, metadata.issuer).await
    }
}

/// Finds the authorization server of the server at `url` (from its
/// `challenge`, else by asking), keeps its metadata in `credentials`, and
/// gives a manager that knows it, and the resource it names.
pub(super) async fn discover(
    url: &str,
    challenge: Option<&str>,
    credentials: &ServerCredentials,
) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthFailure> {
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(credentials.clone());
    let metadata = match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => resolution.metadata,
        // A server of the 2025-03-26 layout: no resource metadata, its
        // authorization server's metadata at its own root, under an
        // issuer that need not be that root.
        Err(AuthError::AuthorizationServerMismatch { .. }) => legacy_metadata(url).await?,
        Err(e) => return Err(e.into()),
    };
    credentials.save_metadata(&metadata).await?;
    manager.set_metadata(metadata.clone());
    Ok((manager, metadata))
}

/// The authorization request of a login to `server` by `oauth`, sent back
/// to `redirect_uri`: its client as configured (a client of its own, a
/// metadata document) or registered there, and its scopes.
pub(super) async fn request(
    server: &str,
    oauth: &OAuthConfig,
    redirect_uri: String,
) -> Result<AuthorizationRequest, AuthFailure> {
    let mut request = AuthorizationRequest::new(redirect_uri).with_client_name("mcpw");
    if let Some(id) = &oauth.client_id {
        request = request.with_preregistered_client(id);
        if let Some(secret) = &oauth.client_secret {
            let secret = super::secret(server, secret, "oauth.clientSecret").await?;
            request = request.with_client_secret(secret);
        }
    }
    if let Some(url) = &oauth.client_metadata_url {
        request = request.with_client_metadata_url(url);
    }
    let scopes = scopes(oauth);
    if !scopes.is_empty() {
        request = request.with_scopes(scopes);
    }
    Ok(request)
}

/// `oauth.scope`, split.
pub(super) fn scopes(oauth: &OAuthConfig) -> Vec<String> {
    oauth
        .scope
        .as_deref()
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Keeps a token obtained without a person, as received now.
pub(super) async fn keep(
    credentials: &ServerCredentials,
    client_id: String,
    token: OAuthTokenResponse,
    scopes: Vec<String>,
    issuer: Option<String>,
) -> Result<LoggedIn, AuthFailure> {
    let received = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stored =
        StoredCredentials::new(client_id, Some(token), scopes, Some(received)).with_issuer(issuer);
    rmcp::transport::auth::CredentialStore::save(credentials, stored.clone()).await?;
    Ok(logged_in(stored))
}

/// The authorization server metadata at the root of the MCP server's origin
/// (MCP 2025-03-26), accepted only when its endpoints are on that origin too:
/// nothing else vouches for them.
async fn legacy_metadata(url: &str) -> Result<AuthorizationMetadata, AuthFailure> {
    let bad = |why: String| AuthFailure::Auth(AuthError::MetadataError(why));
    let base = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    let origin = base.origin();
    let at = base
        .join("/.well-known/oauth-authorization-server")
        .map_err(|e| bad(e.to_string()))?;
    let metadata: AuthorizationMetadata = super::fetch::json(&at).await.map_err(bad)?;
    let same_origin =
        |endpoint: &str| url::Url::parse(endpoint).is_ok_and(|u| u.origin() == origin);
    if !same_origin(&metadata.authorization_endpoint) || !same_origin(&metadata.token_endpoint) {
        return Err(bad(format!(
            "the metadata at {at} names endpoints on another origin, and no resource metadata vouches for them"
        )));
    }
    Ok(metadata)
}

/// The assertion's algorithm (`oauth.signingAlgorithm`, checked with the config).
fn signing_algorithm(name: Option<&str>) -> JwtSigningAlgorithm {
    match name {
        Some("RS384") => JwtSigningAlgorithm::RS384,
        Some("RS512") => JwtSigningAlgorithm::RS512,
        Some("ES256") => JwtSigningAlgorithm::ES256,
        Some("ES384") => JwtSigningAlgorithm::ES384,
        _ => JwtSigningAlgorithm::RS256,
    }
}

fn logged_in(stored: StoredCredentials) -> LoggedIn {
    LoggedIn {
        issuer: stored.issuer,
        client_id: stored.client_id,
        scopes: stored.granted_scopes,
    }
}

/// Reads the pasted redirect URL from stdin (off the async threads).
async fn read_line() -> Result<String, AuthFailure> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map(|_| line)
    })
    .await
    .map_err(|e| AuthFailure::Callback(e.to_string()))?
    .map(|l| l.trim().to_string())
    .map_err(|e| AuthFailure::Callback(e.to_string()))
}
