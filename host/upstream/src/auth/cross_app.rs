//! Cross-app access (SEP-990, the identity assertion authorization grant):
//! the person's ID token from the enterprise identity provider is exchanged
//! there (RFC 8693) for an identity assertion (ID-JAG) bound to the server's
//! authorization server and resource, which that authorization server takes
//! as a JWT bearer grant (RFC 7523) for the access token. rmcp makes both
//! exchanges and checks the assertion's bindings; mcpw finds the parties
//! and keeps the token.

use super::AuthFailure;
use crate::config::{IdentityProvider, OAuthConfig};
use rmcp::transport::auth::enterprise::{
    EmaAccessToken, EmaAuthorizationServer, EmaClientAuthentication, EmaError, EmaExchangeRequest,
    EmaExchangeStage,
};
use rmcp::transport::auth::{
    AuthorizationMetadata, OAuthTokenResponse, VendorExtraTokenFields, default_oauth_http_client,
};

pub(super) mod discovery;

/// One exchange: for the server `server` at `url`, with its `oauth` config.
pub(super) struct Exchange<'a> {
    pub(super) server: &'a str,
    pub(super) url: &'a str,
    pub(super) oauth: &'a OAuthConfig,
    /// The server's `WWW-Authenticate` challenge, when a request met one.
    pub(super) challenge: Option<&'a str>,
    /// The scopes to ask the identity provider for (none: as it decides).
    pub(super) scopes: Vec<String>,
    /// The person's own ID token, got by signing them in (a per-person
    /// server's); `None`: the configured `idToken`.
    pub(super) id_token: Option<&'a str>,
}

impl Exchange<'_> {
    /// Exchanges the configured ID token for a token of the server whose
    /// authorization server `metadata` describes: the token, and the
    /// scopes granted.
    pub(super) async fn run(
        self,
        metadata: &AuthorizationMetadata,
    ) -> Result<(OAuthTokenResponse, Vec<String>), AuthFailure> {
        let failed = AuthFailure::CrossApp;
        let idp = identity_provider(self.oauth)?;
        let issuer = metadata.issuer.clone().ok_or_else(|| {
            failed("the server's authorization server names no issuer in its metadata, and the identity assertion must name it".into())
        })?;
        let resource = discovery::protected_resource(self.url, self.challenge, &issuer).await;
        let (idp_endpoint, idp_metadata) = discovery::token_endpoint(idp)
            .await
            .map_err(|e| failed(format!("{e}: set `oauth.identityProvider.tokenEndpoint`")))?;
        let idp_secret = self.secret(
            idp.client_secret.as_deref(),
            "oauth.identityProvider.clientSecret",
        );
        let idp_secret = idp_secret.await?;
        let as_secret = self.secret(self.oauth.client_secret.as_deref(), "oauth.clientSecret");
        let as_secret = as_secret.await?;
        let id_token = match self.id_token {
            Some(own) => own.to_string(),
            None => {
                let configured = idp.id_token.as_deref();
                let id_token = self.secret(configured, "oauth.identityProvider.idToken");
                id_token.await?.ok_or_else(|| {
                    AuthFailure::Config(
                        "the id-jag grant needs `oauth.identityProvider.idToken`".into(),
                    )
                })?
            }
        };
        let client_id = self.oauth.client_id.as_deref().unwrap_or_default();
        let at_idp = EmaAuthorizationServer::new(&idp.issuer, idp_endpoint, &idp.client_id)
            .with_client_authentication(authentication(idp_secret, idp_metadata.as_ref()));
        let at_server = EmaAuthorizationServer::new(&issuer, &metadata.token_endpoint, client_id)
            .with_client_authentication(authentication(as_secret, Some(metadata)));
        let http = default_oauth_http_client()?;
        let token = EmaExchangeRequest::new_with_id_token(at_idp, at_server, &resource, &id_token)
            .with_scopes(self.scopes)
            .exchange(&http, &http)
            .await
            .map_err(|e| failed(refused(&e)))?;
        let mut scopes: Vec<String> = token.scopes.iter().cloned().collect();
        scopes.sort();
        Ok((token_response(&token, &scopes), scopes))
    }

    /// A secret that may be unset, its `!command` run.
    async fn secret(
        &self,
        value: Option<&str>,
        field: &str,
    ) -> Result<Option<String>, AuthFailure> {
        super::secret_if_set(self.server, value, field).await
    }
}

/// A server's identity provider, for the id-jag grant.
pub(super) fn identity_provider(oauth: &OAuthConfig) -> Result<&IdentityProvider, AuthFailure> {
    oauth.identity_provider.as_ref().ok_or_else(|| {
        AuthFailure::Config("the id-jag grant needs `oauth.identityProvider`".into())
    })
}

/// How a client with `secret` authenticates at a token endpoint: HTTP
/// Basic (RFC 6749's default, and what a server without metadata is
/// assumed to take) unless the metadata offers only the form's fields.
fn authentication(
    secret: Option<String>,
    metadata: Option<&AuthorizationMetadata>,
) -> EmaClientAuthentication {
    let Some(secret) = secret else {
        return EmaClientAuthentication::None;
    };
    let offered = |method: &str| {
        metadata
            .and_then(|m| {
                m.additional_fields
                    .get("token_endpoint_auth_methods_supported")
            })
            .and_then(|v| v.as_array())
            .map(|methods| methods.iter().any(|m| m == method))
    };
    let secret = oauth2::ClientSecret::new(secret);
    match (
        offered("client_secret_basic"),
        offered("client_secret_post"),
    ) {
        (Some(false), Some(true)) => EmaClientAuthentication::ClientSecretPost(secret),
        _ => EmaClientAuthentication::ClientSecretBasic(secret),
    }
}

/// rmcp's token as the vault keeps tokens.
fn token_response(token: &EmaAccessToken, scopes: &[String]) -> OAuthTokenResponse {
    let mut response = OAuthTokenResponse::new(
        token.access_token.clone(),
        oauth2::basic::BasicTokenType::Bearer,
        VendorExtraTokenFields::default(),
    );
    response.set_expires_in(token.expires_in.as_ref());
    if !scopes.is_empty() {
        response.set_scopes(Some(
            scopes.iter().cloned().map(oauth2::Scope::new).collect(),
        ));
    }
    response
}

/// Why an exchange failed, naming the party (rmcp's errors say nothing of
/// the tokens, and neither does this).
fn refused(e: &EmaError) -> String {
    let who = |stage: &EmaExchangeStage| match stage {
        EmaExchangeStage::IdentityProvider => "the identity provider",
        _ => "the server's authorization server",
    };
    match e {
        EmaError::InvalidGrant(EmaExchangeStage::IdentityProvider) => {
            "the identity provider refused the ID token (invalid_grant): it may have expired; give a fresh one".into()
        }
        EmaError::InvalidGrant(stage) => {
            format!("{} refused the identity assertion (invalid_grant)", who(stage))
        }
        EmaError::InsufficientUserAuthentication(stage) => format!(
            "{} wants the person to sign in again (insufficient_user_authentication)",
            who(stage)
        ),
        EmaError::OAuthRejected { stage, status, code } => {
            format!("{} answered HTTP {status}: {code}", who(stage))
        }
        EmaError::RequestFailed(stage) => format!("{} could not be reached", who(stage)),
        EmaError::InvalidResponse { stage, message } => {
            format!("{} answered wrongly: {message}", who(stage))
        }
        EmaError::InvalidRequest(why) => format!("the exchange cannot be made: {why}"),
        other => other.to_string(),
    }
}
