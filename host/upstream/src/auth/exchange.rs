//! Token exchange (RFC 8693) toward a server that trusts the issuer of the
//! caller's own access token: the caller's token is exchanged there for one
//! whose audience is the server, kept as the caller's own login until it
//! expires (sealed in shared state, so every replica uses it), and
//! exchanged again after. The caller's token itself never goes to the
//! server: MCP's authorization forbids passing a token through.

use super::credentials::ServerCredentials;
use super::cross_app::discovery;
use super::flow::keep;
use super::store::Vault;
use super::{AuthFailure, Status};
use crate::config::OAuthConfig;
use oauth2::TokenResponse;
use rmcp::transport::auth::OAuthTokenResponse;
use std::time::Duration;

const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";
/// A kept token with less than this left is exchanged again before use.
pub const MARGIN: Duration = Duration::from_secs(60);

/// One caller's token, to be exchanged for the server's.
pub struct TokenExchange<'a> {
    /// The server's name.
    pub server: &'a str,
    /// Its MCP endpoint.
    pub url: &'a str,
    /// Its `oauth` config: the client mcpw is at the issuer.
    pub oauth: &'a OAuthConfig,
    /// Where the exchanged token is kept, as the caller's own login.
    pub vault: Vault,
    /// The caller: `oauth:<issuer>#sub:<subject>` (or `#client:<id>`).
    pub owner: &'a str,
    /// The access token the caller presented to the gateway.
    pub subject: &'a str,
}

impl TokenExchange<'_> {
    /// A token of the server's for the caller: the one kept while it is
    /// good for [`MARGIN`] more, else one exchanged now and kept. Gives
    /// when it expires (seconds since the epoch), when it says.
    pub async fn ensure(self) -> Result<Option<u64>, AuthFailure> {
        let credentials = ServerCredentials::person(self.vault.clone(), self.url, self.owner);
        if let Some(fresh) = Status::of(credentials.stored().await?).good_for(MARGIN) {
            return Ok(fresh);
        }
        let failed = AuthFailure::Exchange;
        let issuer = issuer_of(self.owner).ok_or_else(|| {
            failed(format!(
                "{} came with a token of the gateway's own, which no issuer exchanges",
                self.owner
            ))
        })?;
        // The exchange goes to the caller's issuer, found through its own
        // metadata: never to an endpoint the server names, which would be
        // given the caller's token and the gateway's secret.
        let idp = discovery::identity_provider(issuer).await.map_err(failed)?;
        let resource = discovery::named_resource(self.url, None, issuer)
            .await
            .ok_or_else(|| {
                failed(format!(
                    "the server's protected resource metadata does not name {issuer} among its authorization servers: it does not take the caller's issuer"
                ))
            })?;
        let token = self.exchange(&idp.token_endpoint, &resource).await?;
        let scopes = token
            .scopes()
            .map(|s| s.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default();
        // Kept beside the token, as every login's metadata is (there is no
        // refresh token to spend there).
        credentials.save_metadata(&idp).await?;
        let client_id = self.oauth.client_id.clone().unwrap_or_default();
        keep(&credentials, client_id, token, scopes, idp.issuer).await?;
        let held = Status::of(credentials.stored().await?);
        Ok(held.expires_at)
    }

    /// Posts the exchange to `endpoint` for a token of `resource`, as the
    /// configured client.
    async fn exchange(
        &self,
        endpoint: &str,
        resource: &str,
    ) -> Result<OAuthTokenResponse, AuthFailure> {
        let client_id = self.oauth.client_id.as_deref().unwrap_or_default();
        let secret = self.oauth.client_secret.as_deref();
        let secret = super::secret_if_set(self.server, secret, "oauth.clientSecret").await?;
        super::fetch::token(
            endpoint,
            (client_id, secret.as_deref()),
            &self.form(resource),
        )
        .await
        .map_err(|why| AuthFailure::Exchange(format!("{endpoint}: {why}")))
    }

    /// The exchange's form (RFC 8693 §2.1).
    fn form<'f>(&'f self, resource: &'f str) -> Vec<(&'f str, &'f str)> {
        let mut form = vec![
            ("grant_type", GRANT),
            ("subject_token", self.subject),
            ("subject_token_type", ACCESS_TOKEN),
            ("requested_token_type", ACCESS_TOKEN),
            ("resource", resource),
        ];
        if let Some(scope) = &self.oauth.scope {
            form.push(("scope", scope));
        }
        form
    }
}

/// The issuer of a principal signed in through an issuer
/// (`oauth:<issuer>#…`), as its tokens name it.
fn issuer_of(owner: &str) -> Option<&str> {
    // An issuer has no fragment: the first `#` ends it.
    let (issuer, _) = owner.strip_prefix("oauth:")?.split_once('#')?;
    Some(issuer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principals_issuer_is_read_from_its_key() {
        let owner = "oauth:https://idp.example.com/#sub:alice";
        assert_eq!(issuer_of(owner), Some("https://idp.example.com/"));
        let machine = "oauth:http://127.0.0.1:9/realms/a#client:ci";
        assert_eq!(issuer_of(machine), Some("http://127.0.0.1:9/realms/a"));
        let odd = "oauth:https://idp.example.com#sub:a#b";
        assert_eq!(issuer_of(odd), Some("https://idp.example.com"));
        assert_eq!(issuer_of("token:ci"), None);
        let said = super::super::fetch::refusal(
            400,
            r#"{"error":"invalid_grant","error_description":"bad"}"#,
        );
        assert_eq!(said.to_string(), "refused (400 invalid_grant): bad");
        let unsaid = super::super::fetch::refusal(502, "<html>");
        assert_eq!(unsaid.to_string(), "refused (HTTP 502)");
        assert_eq!(said.code.as_deref(), Some("invalid_grant"));
        let tricky = r#"{"error":"invalid_request","error_description":"not invalid_grant)"}"#;
        let tricky = super::super::fetch::refusal(400, tricky);
        assert_eq!(tricky.code.as_deref(), Some("invalid_request"));
        assert_ne!(unsaid.code.as_deref(), Some("invalid_grant"));
    }
}
