//! Token exchange (RFC 8693) toward a server that trusts the issuer of the
//! caller's own access token: the caller's token is exchanged there for one
//! whose audience is the server, kept as the caller's own login until it
//! expires (sealed in shared state, so every replica uses it), and
//! exchanged again after. The caller's token itself never goes to the
//! server: MCP's authorization forbids passing a token through.

use super::credentials::ServerCredentials;
use super::flow::{discover, keep};
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
        let held = Status::of(credentials.stored().await?);
        let now = super::now();
        if held.logged_in && held.expires_at.is_none_or(|at| at > now + MARGIN.as_secs()) {
            return Ok(held.expires_at);
        }
        let (_, metadata) = discover(self.url, None, &credentials).await?;
        let issuer = metadata.issuer.clone().unwrap_or_default();
        let theirs = issuer_of(self.owner);
        if theirs != Some(issuer.trim_end_matches('/')) {
            return Err(AuthFailure::Exchange(format!(
                "the server's authorization server is {issuer}, and the caller's token is not its own ({}): only a token of the issuer the server trusts is exchanged",
                theirs.unwrap_or("a static token")
            )));
        }
        let resource =
            super::cross_app::discovery::protected_resource(self.url, None, &issuer).await;
        let token = self.exchange(&metadata.token_endpoint, &resource).await?;
        let scopes = token
            .scopes()
            .map(|s| s.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default();
        let client_id = self.oauth.client_id.clone().unwrap_or_default();
        keep(&credentials, client_id, token, scopes, metadata.issuer).await?;
        let held = Status::of(credentials.stored().await?);
        Ok(held.expires_at)
    }

    /// Posts the exchange to `endpoint` for a token of `resource`, as the
    /// configured client (HTTP Basic, RFC 6749's default).
    async fn exchange(
        &self,
        endpoint: &str,
        resource: &str,
    ) -> Result<OAuthTokenResponse, AuthFailure> {
        let form = self.form(resource);
        let client_id = self.oauth.client_id.as_deref().unwrap_or_default();
        let secret = match &self.oauth.client_secret {
            Some(s) => Some(super::secret(self.server, s, "oauth.clientSecret").await?),
            None => None,
        };
        let failed = |why: String| AuthFailure::Exchange(format!("{endpoint}: {why}"));
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let answer = http
            .post(endpoint)
            .basic_auth(client_id, secret)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form)
            .send()
            .await
            .map_err(|e| failed(e.without_url().to_string()))?;
        let status = answer.status();
        let body = answer.text().await.map_err(|e| failed(e.to_string()))?;
        if !status.is_success() {
            return Err(failed(refusal(status.as_u16(), &body)));
        }
        serde_json::from_str(&body).map_err(|e| failed(format!("not a token answer: {e}")))
    }
}

impl TokenExchange<'_> {
    /// The exchange's form (RFC 8693 §2.1).
    fn form(&self, resource: &str) -> String {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", GRANT)
            .append_pair("subject_token", self.subject)
            .append_pair("subject_token_type", ACCESS_TOKEN)
            .append_pair("requested_token_type", ACCESS_TOKEN)
            .append_pair("resource", resource);
        if let Some(scope) = &self.oauth.scope {
            form.append_pair("scope", scope);
        }
        form.finish()
    }
}

/// The issuer of a principal signed in through an issuer
/// (`oauth:<issuer>#…`), without a trailing slash.
fn issuer_of(owner: &str) -> Option<&str> {
    let rest = owner.strip_prefix("oauth:")?;
    let (issuer, _) = rest.rsplit_once('#')?;
    Some(issuer.trim_end_matches('/'))
}

/// What a refused exchange says: its OAuth error and description, never a
/// token.
fn refusal(status: u16, body: &str) -> String {
    let said: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    match (said["error"].as_str(), said["error_description"].as_str()) {
        (Some(e), Some(d)) => format!("refused ({status} {e}): {d}"),
        (Some(e), None) => format!("refused ({status} {e})"),
        _ => format!("refused (HTTP {status})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principals_issuer_is_read_from_its_key() {
        let owner = "oauth:https://idp.example.com/#sub:alice";
        assert_eq!(issuer_of(owner), Some("https://idp.example.com"));
        let machine = "oauth:http://127.0.0.1:9/realms/a#client:ci";
        assert_eq!(issuer_of(machine), Some("http://127.0.0.1:9/realms/a"));
        assert_eq!(issuer_of("token:ci"), None);
        let said = refusal(
            400,
            r#"{"error":"invalid_grant","error_description":"bad"}"#,
        );
        assert_eq!(said, "refused (400 invalid_grant): bad");
        assert_eq!(refusal(502, "<html>"), "refused (HTTP 502)");
    }
}
