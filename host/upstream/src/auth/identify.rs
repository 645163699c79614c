//! Signing a person in at their identity provider, the gateway an OpenID
//! client there (the authorization code flow with PKCE and a nonce): for
//! their own ID token, which a per-person server of cross-app access
//! exchanges for a token of its own (see [`super::cross_app`]; a gateway is
//! given access tokens, never ID tokens, so this is how it comes by one);
//! or before their browser goes on to a server's authorization page, so
//! that the login made there is kept only as the person's it is.
//!
//! The callback checks that who signed in is the principal the link was
//! made for (the same issuer and subject): a link forwarded to, or taken by,
//! someone else makes no login. The ID token came straight from the
//! issuer's token endpoint over the connection mcpw opened, so its issuer,
//! audience, nonce and lifetime are checked and its signature is not again
//! (OpenID Connect Core 3.1.3.7); the identity provider checks it once more
//! when it is exchanged.

use super::credentials::ServerCredentials;
use super::cross_app::{self, discovery, identity_provider};
use super::finished::{Configured, Onward, SignedIn, query, refused_in};
use super::flow::{discover, keep, scopes};
use super::identity::{Identity, refresh_token_of};
use super::store::Vault;
use super::{AuthFailure, fetch};
use crate::config::{GrantType, OAuthConfig};
use base64::Engine;
use oauth2::{CsrfToken, PkceCodeChallenge};
use serde_json::{Value, json};

/// One person's sign-in at their identity provider, for `server`.
pub struct Identify<'a> {
    /// The server's name.
    pub server: &'a str,
    /// Its MCP endpoint.
    pub url: &'a str,
    /// Where the login goes (and the sign-in under way meanwhile).
    pub vault: Vault,
    /// The principal signing in: `oauth:<issuer>#sub:<subject>`.
    pub owner: &'a str,
    /// The gateway's callback, as the browser reaches it.
    pub callback: &'a str,
    /// The identity provider, and the gateway's client there.
    pub at: Party<'a>,
    /// What the sign-in leads to.
    pub then: Then,
}

/// An identity provider, and the gateway's client there.
pub struct Party<'a> {
    /// Its issuer, as its ID tokens name it.
    pub issuer: &'a str,
    /// The gateway's client there: the ID token's audience.
    pub client_id: &'a str,
    /// Its token endpoint when configured; else from its metadata.
    pub token_endpoint: Option<&'a str>,
}

/// What a person's sign-in at their identity provider leads to.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Then {
    /// Their ID token is exchanged for the server's token (cross-app
    /// access, `oauth.identityProvider`'s client).
    CrossApp,
    /// Their browser goes on to the server's authorization page at
    /// `address` (the gateway's client of `serve.oauth.issuers[i].signIn`).
    Upstream {
        /// The server's authorization page, its sign-in begun held.
        address: String,
    },
}

/// A sign-in under way at an identity provider, kept under its state.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Identifying {
    server: String,
    url: String,
    owner: String,
    issuer: String,
    token_endpoint: String,
    client_id: String,
    redirect_uri: String,
    nonce: String,
    verifier: String,
    then: Then,
}

/// The key of [`Identifying`] in a record of the logins under way.
const KEY: &str = "identifying";

impl Identify<'_> {
    /// Keeps the sign-in under way, and gives the address at the identity
    /// provider the person opens.
    pub async fn begin(self) -> Result<String, AuthFailure> {
        let at = &self.at;
        if subject_at(self.owner, at.issuer).is_none() {
            return Err(AuthFailure::CrossApp(format!(
                "{} did not sign in to the gateway through {}: only the person that identity provider knows can sign in there",
                self.owner, at.issuer
            )));
        }
        let found = discovery::identity_provider(at.issuer)
            .await
            .map_err(AuthFailure::CrossApp)?;
        // The ID token is taken on the strength of the connection to the
        // token endpoint: both endpoints must be https (or this machine's).
        let token_endpoint = at.token_endpoint.unwrap_or(&found.token_endpoint);
        for endpoint in [&found.authorization_endpoint, token_endpoint] {
            if !crate::config::validate::https_or_loopback(endpoint) {
                return Err(AuthFailure::CrossApp(format!(
                    "{}'s endpoint {endpoint} is not https",
                    at.issuer
                )));
            }
        }
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (state, nonce) = (CsrfToken::new_random(), CsrfToken::new_random());
        // Cross-app access asks to stay signed in, where the provider
        // offers it (a refresh token, which OpenID Connect grants only on
        // consent), to renew the ID token.
        let offline = found
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        let (scope, prompt) = match self.then {
            Then::CrossApp if offline => ("openid offline_access", Some("consent")),
            _ => ("openid", None),
        };
        let mut address = url::Url::parse(&found.authorization_endpoint)
            .map_err(|e| AuthFailure::CrossApp(format!("its authorization endpoint: {e}")))?;
        address
            .query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", at.client_id)
            .append_pair("redirect_uri", self.callback)
            .append_pair("scope", scope)
            .append_pair("state", state.secret())
            .append_pair("nonce", nonce.secret())
            .append_pair("code_challenge", challenge.as_str())
            .append_pair("code_challenge_method", "S256");
        if let Some(prompt) = prompt {
            address.query_pairs_mut().append_pair("prompt", prompt);
        }
        let token_endpoint = token_endpoint.to_string();
        let record = Identifying {
            server: self.server.to_string(),
            url: self.url.to_string(),
            owner: self.owner.to_string(),
            issuer: at.issuer.to_string(),
            token_endpoint,
            client_id: at.client_id.to_string(),
            redirect_uri: self.callback.to_string(),
            nonce: nonce.secret().clone(),
            verifier: verifier.secret().clone(),
            then: self.then,
        };
        // `owner`: where forgetting a person finds it.
        let record = json!({ KEY: record, "owner": self.owner });
        self.vault
            .keep_login_under_way(state.secret(), &record)
            .await?;
        Ok(address.to_string())
    }
}

impl Identifying {
    /// The sign-in a record of the logins under way holds, if it is one.
    pub(super) fn of(record: &Value) -> Option<Identifying> {
        serde_json::from_value(record.get(KEY)?.clone()).ok()
    }

    /// Finishes it, back at `redirect` with the state `state`: the code
    /// traded once for the person's ID token, which must name the
    /// principal the link was made for. Then, for cross-app access, it is
    /// exchanged for the server's token, kept as that principal's own
    /// login; or the browser goes on to the server's page.
    pub(super) async fn finish(
        self,
        vault: &Vault,
        (state, redirect): (&str, &str),
        configured: &Configured<'_>,
    ) -> Result<SignedIn, AuthFailure> {
        let failed = |why: &str| AuthFailure::Callback(why.to_string());
        if !vault.end_login_under_way(state).await? {
            return Err(failed("this sign-in was finished already"));
        }
        if let Some(said) = refused_in(redirect) {
            return Err(failed(&format!("the identity provider said: {said}")));
        }
        let code = query(redirect, "code").ok_or_else(|| failed("the redirect carries no code"))?;
        let changed = || failed("the server was changed since the sign-in began; call it again");
        let oauth = (configured.servers)(&self.server)
            .filter(|(url, _)| *url == self.url)
            .map(|(_, oauth)| oauth)
            .ok_or_else(changed)?;
        let secret = self
            .client_secret(&oauth, configured)
            .await?
            .ok_or_else(changed)?;
        let (id_token, answer) = self.id_token(secret.as_deref(), &code).await?;
        let onward = match &self.then {
            Then::Upstream { address } => Some(Onward::to(address.clone())),
            Then::CrossApp => {
                let whose = (self.server.as_str(), self.url.as_str(), self.owner.as_str());
                exchanged(vault, whose, &oauth, &id_token).await?;
                // Their standing login there, to renew the ID token with.
                if let Some(refresh) = refresh_token_of(&answer) {
                    let at = (self.issuer.as_str(), self.client_id.as_str());
                    Identity::of(vault, at, &self.owner).keep(refresh).await?;
                }
                None
            }
        };
        Ok(SignedIn {
            server: self.server,
            owner: self.owner,
            onward,
        })
    }

    /// The secret of the gateway's client, as configured now: `None` when
    /// that client is no longer configured (`Some(None)`: it has none).
    async fn client_secret(
        &self,
        oauth: &OAuthConfig,
        configured: &Configured<'_>,
    ) -> Result<Option<Option<String>>, AuthFailure> {
        if let Then::Upstream { .. } = self.then {
            let client = (configured.gateway_clients)(&self.issuer)
                .filter(|c| c.client_id == self.client_id);
            let Some(client) = client else {
                return Ok(None);
            };
            let secret = crate::secrets::resolve_source(&client.secret, configured.env).await;
            let secret = secret.map_err(|why| {
                AuthFailure::Config(format!(
                    "the secret of `serve.oauth.issuers[].signIn`: {why}"
                ))
            })?;
            return Ok(Some(Some(secret)));
        }
        let idp = identity_provider(oauth)?;
        let same = oauth.grant_type == GrantType::IdJag
            && oauth.per_person
            && idp.issuer == self.issuer
            && idp.client_id == self.client_id;
        if !same {
            return Ok(None);
        }
        let field = "oauth.identityProvider.clientSecret";
        let secret = idp.client_secret.as_deref();
        Ok(Some(
            super::secret_if_set(&self.server, secret, field).await?,
        ))
    }

    /// The person's ID token for `code`, checked to be for this sign-in and
    /// to name the principal it was begun for; and the whole answer.
    async fn id_token(
        &self,
        secret: Option<&str>,
        code: &str,
    ) -> Result<(String, Value), AuthFailure> {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", &self.redirect_uri),
            ("code_verifier", &self.verifier),
        ];
        let client = (self.client_id.as_str(), secret);
        let answer: Value = fetch::token(&self.token_endpoint, client, &form)
            .await
            .map_err(|why| AuthFailure::CrossApp(format!("{}: {why}", self.token_endpoint)))?;
        let id_token = answer["id_token"].as_str().ok_or_else(|| {
            AuthFailure::CrossApp("the identity provider gave no ID token".into())
        })?;
        let subject = self.check(&claims(id_token)?)?;
        let signed_in = format!("oauth:{}#sub:{subject}", self.issuer);
        if signed_in != self.owner {
            return Err(AuthFailure::Callback(format!(
                "you signed in as {signed_in}, not as the person this link was given to: no login was made. Each person signs in by the link their own call gave them."
            )));
        }
        Ok((id_token.to_string(), answer))
    }

    /// The subject of the ID token's `claims`, when they are this
    /// sign-in's: its issuer, for this client, with its nonce, unexpired.
    fn check(&self, claims: &Value) -> Result<String, AuthFailure> {
        let nonce = Some(self.nonce.as_str());
        checked_subject(claims, (&self.issuer, &self.client_id), nonce)
    }
}

/// The subject of an ID token's `claims`, when they are of `issuer`, for
/// `client_id`, unexpired, and with `nonce` when one is asked (a refreshed
/// ID token has none to match).
pub(super) fn checked_subject(
    claims: &Value,
    (issuer, client_id): (&str, &str),
    nonce: Option<&str>,
) -> Result<String, AuthFailure> {
    let refused = |why: &str| AuthFailure::CrossApp(format!("the ID token {why}"));
    if claims["iss"].as_str() != Some(issuer) {
        return Err(refused("names another issuer"));
    }
    let audience = match &claims["aud"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let azp = claims["azp"].as_str();
    if !audience.contains(&client_id)
        || azp.is_some_and(|azp| azp != client_id)
        || (audience.len() > 1 && azp.is_none())
    {
        return Err(refused("is not for this client"));
    }
    if nonce.is_some() && claims["nonce"].as_str() != nonce {
        return Err(refused("is not this sign-in's (its nonce differs)"));
    }
    let now = crate::clock::now_secs();
    if claims["exp"].as_u64().is_none_or(|exp| exp <= now) {
        return Err(refused("has expired"));
    }
    match claims["sub"].as_str() {
        Some(sub) if !sub.is_empty() => Ok(sub.to_string()),
        _ => Err(refused("names no subject")),
    }
}

/// Exchanges `owner`'s `id_token` for the token of `server` (at `url`),
/// kept as their own login.
pub(super) async fn exchanged(
    vault: &Vault,
    (server, url, owner): (&str, &str, &str),
    oauth: &OAuthConfig,
    id_token: &str,
) -> Result<(), AuthFailure> {
    let credentials = ServerCredentials::person(vault.clone(), url, owner);
    let (_, metadata) = discover(url, None, &credentials).await?;
    let exchange = cross_app::Exchange {
        server,
        url,
        oauth,
        challenge: None,
        scopes: scopes(oauth),
        id_token: Some(id_token),
    };
    let (token, granted) = exchange.run(&metadata).await?;
    let client_id = oauth.client_id.clone().unwrap_or_default();
    keep(&credentials, client_id, token, granted, metadata.issuer).await?;
    Ok(())
}

/// The subject of a principal of `issuer` (`oauth:<issuer>#sub:<subject>`).
pub fn subject_at<'o>(owner: &'o str, issuer: &str) -> Option<&'o str> {
    owner
        .strip_prefix("oauth:")?
        .strip_prefix(issuer)?
        .strip_prefix("#sub:")
}

/// The claims of a compact JWT, unverified (see the module's comment).
pub(super) fn claims(jwt: &str) -> Result<Value, AuthFailure> {
    let payload = jwt.split('.').nth(1).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| AuthFailure::CrossApp("the ID token is not a JWT".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign_in() -> Identifying {
        Identifying {
            server: "crm".into(),
            url: "https://crm.example/mcp".into(),
            owner: "oauth:https://idp.example#sub:ada".into(),
            issuer: "https://idp.example".into(),
            token_endpoint: "https://idp.example/token".into(),
            client_id: "mcpw".into(),
            redirect_uri: "https://gw.example/oauth/callback".into(),
            nonce: "n-1".into(),
            verifier: "v".into(),
            then: Then::CrossApp,
        }
    }

    #[test]
    fn an_id_token_is_taken_only_from_its_issuer_for_this_client_with_this_nonce() {
        let at = sign_in();
        let exp = crate::clock::now_secs() + 300;
        let good = json!({"iss": "https://idp.example", "aud": "mcpw", "nonce": "n-1",
                          "exp": exp, "sub": "ada"});
        assert_eq!(at.check(&good).unwrap(), "ada");
        let with = |key: &str, value: Value| {
            let mut claims = good.clone();
            claims[key] = value;
            at.check(&claims).map_err(|e| e.to_string())
        };
        assert!(with("aud", json!(["mcpw", "other"])).is_err(), "no azp");
        assert!(with("aud", json!(["other"])).is_err());
        assert!(with("azp", json!("other")).is_err());
        assert!(with("iss", json!("https://evil.example")).is_err());
        assert!(with("nonce", json!("n-2")).unwrap_err().contains("nonce"));
        assert!(with("exp", json!(1)).unwrap_err().contains("expired"));
        assert!(with("sub", json!("")).is_err());
        // A renewed ID token has no nonce to match.
        let renewed = checked_subject(&good, ("https://idp.example", "mcpw"), None);
        assert_eq!(renewed.unwrap(), "ada");
        let mut other = good.clone();
        other["nonce"] = json!("whatever");
        assert!(checked_subject(&other, ("https://idp.example", "mcpw"), None).is_ok());
        let mut many = good.clone();
        many["aud"] = json!(["mcpw", "other"]);
        many["azp"] = json!("mcpw");
        assert!(at.check(&many).is_ok());
    }

    #[test]
    fn a_principal_signs_in_only_at_its_own_issuer() {
        let ada = "oauth:https://idp.example#sub:ada";
        assert_eq!(subject_at(ada, "https://idp.example"), Some("ada"));
        assert_eq!(subject_at(ada, "https://idp.example/"), None);
        assert_eq!(subject_at(ada, "https://idp.ex"), None);
        assert_eq!(subject_at("token:ada", "https://idp.example"), None);
        let machine = "oauth:https://idp.example#client:ci";
        assert_eq!(subject_at(machine, "https://idp.example"), None);
    }

    #[test]
    fn claims_are_read_from_the_payload() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"sub":"a"}"#);
        assert_eq!(claims(&format!("h.{payload}.s")).unwrap()["sub"], "a");
        assert!(claims("not a jwt").is_err());
    }
}
