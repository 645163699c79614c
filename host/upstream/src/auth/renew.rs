//! Keeping a person's cross-app login without signing them in again: when
//! the server's token of theirs is about to lapse (an identity assertion
//! brings no refresh token), their ID token is renewed with the identity
//! provider's refresh token kept when they signed in (see
//! [`super::identify`]), checked to name them still, and exchanged again.

use super::credentials::ServerCredentials;
use super::cross_app::discovery;
use super::cross_app::identity_provider;
use super::identify::{checked_subject, claims, exchanged};
use super::identity::{Identity, refresh_token_of};
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
        if let Some(fresh) = self.held().await?.good_for(super::EXCHANGE_MARGIN) {
            return Ok(fresh);
        }
        let idp = identity_provider(self.oauth)?;
        let at = (idp.issuer.as_str(), idp.client_id.as_str());
        let identity = Identity::of(&self.vault, at, self.owner);
        // One renewal at a time, across replicas: a refresh token is spent
        // once. Whoever waited finds the token the other one made.
        let _renewing = identity.lock().await.map_err(AuthFailure::from)?;
        if let Some(fresh) = self.held().await?.good_for(super::EXCHANGE_MARGIN) {
            return Ok(fresh);
        }
        let Some(spent) = identity.refresh_token().await.map_err(AuthFailure::from)? else {
            return Err(NotRenewed::SignIn);
        };
        let answer = match self.refreshed(&spent).await {
            Ok(answer) => answer,
            Err(Refused::Grant) => {
                // Revoked or expired: the person signs in again.
                identity.drop_if(&spent).await.map_err(AuthFailure::from)?;
                return Err(NotRenewed::SignIn);
            }
            Err(Refused::Other(e)) => return Err(e.into()),
        };
        // The provider may have rotated it: the new one is kept first.
        if let Some(rotated) = refresh_token_of(&answer) {
            identity.keep(rotated).await.map_err(AuthFailure::from)?;
        }
        let Some(id_token) = self.renewed_id_token(&answer)? else {
            identity.forget().await.map_err(AuthFailure::from)?;
            return Err(NotRenewed::SignIn);
        };
        let whose = (self.server, self.url, self.owner);
        exchanged(&self.vault, whose, self.oauth, &id_token).await?;
        tracing::info!(
            server = self.server,
            owner = self.owner,
            "a person's cross-app login was renewed"
        );
        Ok(self.held().await?.expires_at)
    }

    /// Drops the person's standing login at the identity provider, so that
    /// no token of the server's is made for them until they sign in again.
    pub async fn sign_out(self) -> Result<(), AuthFailure> {
        let idp = identity_provider(self.oauth)?;
        let at = (idp.issuer.as_str(), idp.client_id.as_str());
        Identity::of(&self.vault, at, self.owner).forget().await?;
        Ok(())
    }

    /// What is kept of the person's login to the server.
    async fn held(&self) -> Result<Status, AuthFailure> {
        let credentials = ServerCredentials::person(self.vault.clone(), self.url, self.owner);
        Ok(Status::of(credentials.stored().await?))
    }

    /// The identity provider's answer to the refresh grant, at its token
    /// endpoint (https, or this machine's: the renewed ID token is taken on
    /// the strength of that connection).
    async fn refreshed(&self, refresh: &str) -> Result<Value, Refused> {
        let idp = identity_provider(self.oauth).map_err(Refused::Other)?;
        let other = |why: String| Refused::Other(AuthFailure::CrossApp(why));
        let (endpoint, _) = discovery::token_endpoint(idp).await.map_err(other)?;
        if !crate::config::validate::https_or_loopback(&endpoint) {
            return Err(other(format!(
                "{}'s endpoint {endpoint} is not https",
                idp.issuer
            )));
        }
        let field = "oauth.identityProvider.clientSecret";
        let secret = super::secret_if_set(self.server, idp.client_secret.as_deref(), field)
            .await
            .map_err(Refused::Other)?;
        let form = [("grant_type", "refresh_token"), ("refresh_token", refresh)];
        let client = (idp.client_id.as_str(), secret.as_deref());
        fetch::token(&endpoint, client, &form).await.map_err(|why| {
            match why.code.as_deref() == Some("invalid_grant") {
                true => Refused::Grant,
                false => other(format!("{endpoint}: {why}")),
            }
        })
    }

    /// The renewed ID token in `answer`, checked to be the provider's, for
    /// the gateway's client, unexpired; `None` when it gave none, or one of
    /// somebody else.
    fn renewed_id_token(&self, answer: &Value) -> Result<Option<String>, NotRenewed> {
        let idp = identity_provider(self.oauth)?;
        let Some(id_token) = answer["id_token"].as_str() else {
            return Ok(None);
        };
        let at = (idp.issuer.as_str(), idp.client_id.as_str());
        let subject = checked_subject(&claims(id_token)?, at, None)?;
        let theirs = super::subject_at(self.owner, &idp.issuer) == Some(subject.as_str());
        Ok(theirs.then(|| id_token.to_string()))
    }
}

/// How a refresh was refused.
enum Refused {
    /// The grant itself (`invalid_grant`): the refresh token is no good.
    Grant,
    /// Anything else.
    Other(AuthFailure),
}
