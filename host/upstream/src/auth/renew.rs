//! Keeping a person's cross-app login without signing them in again: when
//! the server's token of theirs is about to lapse (an identity assertion
//! brings no refresh token), their ID token is renewed with the identity
//! provider's refresh token kept when they signed in (see
//! [`super::identify`]), checked to name them still, and exchanged again.

use super::credentials::ServerCredentials;
use super::cross_app::discovery;
use super::identify::{checked_subject, claims, exchanged, identity_provider, keep_identity};
use super::store::Vault;
use super::{AuthFailure, Status, fetch};
use crate::config::OAuthConfig;
use serde_json::Value;

/// One person's cross-app login to one server.
pub struct CrossAppLogin<'a> {
    /// The server's name.
    pub server: &'a str,
    /// Its MCP endpoint.
    pub url: &'a str,
    /// Its `oauth` config, with its `identityProvider`.
    pub oauth: &'a OAuthConfig,
    /// Where the logins are.
    pub vault: Vault,
    /// The principal: `oauth:<issuer>#sub:<subject>`.
    pub owner: &'a str,
}

/// Why no token of the server's could be had for the person.
#[derive(Debug)]
pub enum NotRenewed {
    /// They have to sign in (no refresh token kept, or the identity
    /// provider no longer takes it: it was dropped).
    SignIn,
    /// Something else failed (the provider unreachable, the exchange
    /// refused), said.
    Failed(AuthFailure),
}

impl From<AuthFailure> for NotRenewed {
    fn from(e: AuthFailure) -> Self {
        NotRenewed::Failed(e)
    }
}

impl CrossAppLogin<'_> {
    /// The person's token of the server's: the one kept while it is good
    /// for [`super::EXCHANGE_MARGIN`] more, else one from a renewed ID
    /// token. When it expires (seconds since the epoch), when it says.
    pub async fn ensure(self) -> Result<Option<u64>, NotRenewed> {
        let credentials = ServerCredentials::person(self.vault.clone(), self.url, self.owner);
        let held = Status::of(credentials.stored().await.map_err(AuthFailure::from)?);
        let now = crate::clock::now_secs();
        let margin = super::EXCHANGE_MARGIN.as_secs();
        if held.logged_in && held.expires_at.is_none_or(|at| at > now + margin) {
            return Ok(held.expires_at);
        }
        let idp = identity_provider(self.oauth)?;
        let identity = ServerCredentials::person(self.vault.clone(), &idp.issuer, self.owner);
        let refresh = identity
            .stored()
            .await
            .map_err(AuthFailure::from)?
            .and_then(|c| c.token_response)
            .and_then(|t| serde_json::to_value(t).ok())
            .and_then(|t| t["refresh_token"].as_str().map(str::to_string));
        let Some(refresh) = refresh else {
            return Err(NotRenewed::SignIn);
        };
        let answer = match self.refreshed(&refresh).await {
            Ok(answer) => answer,
            Err(Refused::Grant) => {
                // Spent, revoked or expired: the person signs in again.
                identity.forget().await.map_err(AuthFailure::from)?;
                return Err(NotRenewed::SignIn);
            }
            Err(Refused::Other(e)) => return Err(e.into()),
        };
        let id_token = self.renewed_id_token(&answer)?;
        let at = (idp.issuer.as_str(), idp.client_id.as_str());
        keep_identity(&self.vault, at, self.owner, &answer).await?;
        let whose = (self.server, self.url, self.owner);
        exchanged(&self.vault, whose, self.oauth, &id_token).await?;
        let held = Status::of(credentials.stored().await.map_err(AuthFailure::from)?);
        tracing::info!(
            server = self.server,
            owner = self.owner,
            "a person's cross-app login was renewed"
        );
        Ok(held.expires_at)
    }

    /// The identity provider's answer to the refresh grant.
    async fn refreshed(&self, refresh: &str) -> Result<Value, Refused> {
        let idp = identity_provider(self.oauth).map_err(Refused::Other)?;
        let endpoint = match &idp.token_endpoint {
            Some(endpoint) => endpoint.clone(),
            None => {
                let found = discovery::identity_provider(&idp.issuer).await;
                found
                    .map_err(|e| Refused::Other(AuthFailure::CrossApp(e)))?
                    .token_endpoint
            }
        };
        let field = "oauth.identityProvider.clientSecret";
        let secret = super::secret_if_set(self.server, idp.client_secret.as_deref(), field)
            .await
            .map_err(Refused::Other)?;
        let form = [("grant_type", "refresh_token"), ("refresh_token", refresh)];
        let client = (idp.client_id.as_str(), secret.as_deref());
        fetch::token(&endpoint, client, &form).await.map_err(|why| {
            match why.contains("invalid_grant") {
                true => Refused::Grant,
                false => Refused::Other(AuthFailure::CrossApp(format!("{endpoint}: {why}"))),
            }
        })
    }

    /// The renewed ID token in `answer`, checked to be the provider's, for
    /// the gateway's client, unexpired, and still the principal's.
    fn renewed_id_token(&self, answer: &Value) -> Result<String, NotRenewed> {
        let idp = identity_provider(self.oauth)?;
        let Some(id_token) = answer["id_token"].as_str() else {
            return Err(NotRenewed::SignIn);
        };
        let at = (idp.issuer.as_str(), idp.client_id.as_str());
        let subject = checked_subject(&claims(id_token)?, at, None)?;
        if super::subject_at(self.owner, &idp.issuer) != Some(subject.as_str()) {
            return Err(NotRenewed::SignIn);
        }
        Ok(id_token.to_string())
    }
}

/// How a refresh was refused.
enum Refused {
    /// The grant itself (`invalid_grant`): the refresh token is no good.
    Grant,
    /// Anything else.
    Other(AuthFailure),
}
