//! A person's sign-in through the gateway's own callback, at the public
//! address the operator sets: begun where a call found no login of theirs,
//! finished wherever the authorization server sends the browser back (any
//! replica, with shared state). rmcp's PKCE verifier and state are kept
//! through [`UnderWay`], a state store over the vault's logins under way;
//! beside them, the record says whose login it is and to which server.

use super::AuthFailure;
use super::credentials::ServerCredentials;
use super::finished::{Configured, SignedIn, browser_cookie, cookie, digest, query, refused_in};
use super::flow::{discover, request};
use super::store::Vault;
use crate::config::OAuthConfig;
use rmcp::transport::auth::{
    AuthError, AuthorizationSession, OAuthClientConfig, StateStore, StoredAuthorizationState,
};
use serde_json::{Value, json};

/// One person's sign-in to one server, begun.
pub struct SignIn<'a> {
    /// The server's name.
    pub server: &'a str,
    /// Its MCP endpoint.
    pub url: &'a str,
    /// Its `oauth` config.
    pub oauth: &'a OAuthConfig,
    /// Where the login goes (and the login under way meanwhile).
    pub vault: Vault,
    /// The principal signing in.
    pub owner: &'a str,
    /// The gateway's callback, as the browser reaches it.
    pub callback: &'a str,
    /// The sign-in begins at the person's identity provider, which must
    /// say the browser is the principal's before this one may finish (see
    /// [`super::Identify`]).
    pub held: bool,
}

/// Whose login a sign-in under way makes (kept beside rmcp's state).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Whose {
    server: String,
    url: String,
    owner: String,
    redirect_uri: String,
    client_id: String,
    /// Not to be finished until the identity provider said whose browser
    /// it is (see [`release`]).
    #[serde(default)]
    held: bool,
    /// Released: the digest of the cookie the browser must bring back.
    #[serde(default)]
    bound: Option<String>,
}

impl SignIn<'_> {
    /// Registers (or names) the client, keeps the login under way, and
    /// gives the address the person opens to sign in.
    pub async fn begin(self) -> Result<String, AuthFailure> {
        let credentials = ServerCredentials::person(self.vault.clone(), self.url, self.owner);
        let (mut manager, _) = discover(self.url, None, &credentials).await?;
        manager.set_state_store(UnderWay(self.vault.clone()));
        let request = request(self.server, self.oauth, self.callback.to_string()).await?;
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| e)?;
        let address = session.get_authorization_url().to_string();
        let state = query(&address, "state").ok_or_else(|| {
            AuthFailure::Callback("the authorization address has no state".into())
        })?;
        let (client_id, _) = session.get_credentials().await?;
        let whose = Whose {
            server: self.server.to_string(),
            url: self.url.to_string(),
            owner: self.owner.to_string(),
            redirect_uri: self.callback.to_string(),
            client_id,
            held: self.held,
            bound: None,
        };
        let mut record = self
            .vault
            .login_under_way(&state)
            .await?
            .unwrap_or_default();
        record["whose"] = serde_json::to_value(&whose).unwrap_or_default();
        // Whose it is, where forgetting a person finds it.
        record["owner"] = json!(self.owner);
        if !self.vault.update_login_under_way(&state, &record).await? {
            return Err(AuthFailure::Callback(
                "the sign-in lapsed as it began".into(),
            ));
        }
        Ok(address)
    }
}

/// Finishes the sign-in the browser was sent back from, at `redirect` (the
/// callback's full address), whose record `kept` was filed under `state`:
/// the code is exchanged with the verifier kept when it began, once, and
/// the login kept as the person's own. The server is checked against the
/// config as it is now.
pub(super) async fn finish(
    vault: &Vault,
    (state, redirect, cookies): (&str, &str, Option<&str>),
    kept: Option<Value>,
    configured: &Configured<'_>,
) -> Result<SignedIn, AuthFailure> {
    let failed = |why: &str| AuthFailure::Callback(why.to_string());
    let whose: Whose = kept
        .and_then(|r| serde_json::from_value(r["whose"].clone()).ok())
        .ok_or_else(|| failed("this sign-in link has lapsed or was used already; call the tool again for a new one"))?;
    if let Some(said) = refused_in(redirect) {
        vault.end_login_under_way(state).await?;
        return Err(failed(&format!("the authorization server said: {said}")));
    }
    if whose.held {
        return Err(failed(
            "this sign-in begins at your identity provider: open the link your call gave",
        ));
    }
    if let Some(bound) = &whose.bound {
        let brought = cookies.and_then(|c| cookie(c, &browser_cookie(state)));
        if brought.map(digest).as_ref() != Some(bound) {
            return Err(failed(
                "this sign-in is finished only in the browser that signed in at your identity provider: open the link your call gave, in one browser",
            ));
        }
    }
    let code = query(redirect, "code").ok_or_else(|| failed("the redirect carries no code"))?;
    let oauth = match (configured.servers)(&whose.server) {
        Some((url, oauth)) if url == whose.url => oauth,
        _ => {
            vault.end_login_under_way(state).await?;
            return Err(failed(
                "the server was changed since the sign-in began; call it again",
            ));
        }
    };
    let credentials = ServerCredentials::person(vault.clone(), &whose.url, &whose.owner);
    let (mut manager, _) = discover(&whose.url, None, &credentials).await?;
    manager.set_state_store(UnderWay(vault.clone()));
    let mut client = OAuthClientConfig::new(whose.client_id.clone(), whose.redirect_uri.clone());
    if let (Some(id), Some(secret)) = (&oauth.client_id, &oauth.client_secret)
        && *id == whose.client_id
    {
        client = client
            .with_client_secret(super::secret(&whose.server, secret, "oauth.clientSecret").await?);
    }
    manager.configure_client(client)?;
    let issuer = query(redirect, "iss");
    manager
        .exchange_code_for_token_with_issuer(&code, state, issuer.as_deref())
        .await?;
    Ok(SignedIn {
        server: whose.server,
        owner: whose.owner,
        onward: None,
    })
}

/// Lets the sign-in `address` leads to (a [`SignIn`] begun `held`) finish,
/// now that the identity provider said the browser is `owner`'s, in the
/// browser that brings back the cookie whose value's digest is `bound`.
pub(super) async fn release(
    vault: &Vault,
    address: &str,
    (owner, bound): (&str, String),
) -> Result<(), AuthFailure> {
    let lapsed = || AuthFailure::Callback("the server's sign-in has lapsed; call it again".into());
    let state = query(address, "state").ok_or_else(lapsed)?;
    let mut record = vault.login_under_way(&state).await?.ok_or_else(lapsed)?;
    let whose: Whose = serde_json::from_value(record["whose"].clone()).map_err(|_| lapsed())?;
    if whose.owner != owner || !whose.held {
        return Err(lapsed());
    }
    record["whose"]["held"] = Value::Bool(false);
    record["whose"]["bound"] = Value::String(bound);
    match vault.update_login_under_way(&state, &record).await? {
        true => Ok(()),
        false => Err(lapsed()),
    }
}

/// Whether the sign-in `link` ([`SignIn::begin`]'s) leads to is still under
/// way: not lapsed, finished or refused, here or at another replica.
pub async fn sign_in_under_way(vault: &Vault, link: &str) -> bool {
    let Some(state) = query(link, "state") else {
        return false;
    };
    matches!(vault.login_under_way(&state).await, Ok(Some(_)))
}

/// rmcp's PKCE state, in the vault's logins under way (`state` of the
/// record filed under the OAuth state), so any replica finishes it; rmcp
/// deletes it as it exchanges the code, so a code is exchanged once.
struct UnderWay(Vault);

fn kept(e: super::store::StoreError) -> AuthError {
    AuthError::InternalError(e.to_string())
}

#[async_trait::async_trait]
impl StateStore for UnderWay {
    async fn save(&self, csrf: &str, state: StoredAuthorizationState) -> Result<(), AuthError> {
        let mut record = self
            .0
            .login_under_way(csrf)
            .await
            .map_err(kept)?
            .unwrap_or_else(|| json!({}));
        record["state"] =
            serde_json::to_value(state).map_err(|e| AuthError::InternalError(e.to_string()))?;
        self.0
            .keep_login_under_way(csrf, &record)
            .await
            .map_err(kept)
    }

    async fn load(&self, csrf: &str) -> Result<Option<StoredAuthorizationState>, AuthError> {
        let record = self.0.login_under_way(csrf).await.map_err(kept)?;
        Ok(record.and_then(|mut r: Value| serde_json::from_value(r["state"].take()).ok()))
    }

    async fn delete(&self, csrf: &str) -> Result<(), AuthError> {
        // Only one of two callbacks with this state goes on.
        match self.0.end_login_under_way(csrf).await.map_err(kept)? {
            true => Ok(()),
            false => Err(AuthError::InternalError(
                "this sign-in was finished already".into(),
            )),
        }
    }
}
