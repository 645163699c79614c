//! A person signing in for themselves through the gateway's public
//! callback: a call that found no login of theirs on a per-person server
//! gets a link to sign in, and the callback, served by any replica, keeps
//! the login as theirs.

use super::{Host, HostError};
use crate::auth::{Configured, Identify, Party, SignIn, SignedIn, Then};
use crate::config::GatewayClient;
use crate::config::Transport;
use std::time::{Duration, Instant};

/// A link given out is given again to the same person for the same server
/// for this long, so that retries do not register a client each.
const LINK_REUSED: Duration = Duration::from_secs(120);

/// A listing of an unlisted server as one person is tried again after this.
const LISTING_RETRIED: Duration = Duration::from_secs(60);

impl Host {
    /// The address at which `owner` signs in to `server` for themselves,
    /// coming back to `callback` (the gateway's public callback). `None`
    /// when the server does not take each person's own login, or logs in by
    /// itself; an error when its authorization server could not be asked.
    pub async fn sign_in_link(
        &self,
        server: &str,
        owner: &str,
        callback: &str,
    ) -> Result<Option<String>, HostError> {
        let (config, url) = self.oauth_server(server)?;
        // A server that exchanges the caller's token has nothing to sign in to.
        if !config.per_person() || config.exchanges() {
            return Ok(None);
        }
        let key = (server.to_string(), owner.to_string());
        let given = self.lately().links.get(&key).cloned();
        let vault = self.manager.vault();
        if let Some((at, link)) = given
            && at.elapsed() < LINK_REUSED
            && crate::auth::sign_in_under_way(vault, &link).await
        {
            return Ok(Some(link));
        }
        let begun = self.begin_sign_in((server, &url), &config, owner, callback);
        let link = begun.await.map_err(Self::auth_error(server))?;
        let mut lately = self.lately();
        lately.links.retain(|_, (at, _)| at.elapsed() < LINK_REUSED);
        lately.links.insert(key, (Instant::now(), link.clone()));
        Ok(Some(link))
    }

    /// Begins `owner`'s sign-in to `server` (at `url`): the address to open.
    /// Cross-app access signs them in at their identity provider, for their
    /// own ID token; another server at its own authorization server, after
    /// their identity provider, when the gateway has a client there
    /// (`serve.oauth.issuers[i].signIn`), said the browser is theirs.
    async fn begin_sign_in(
        &self,
        (server, url): (&str, &str),
        config: &crate::config::ServerConfig,
        owner: &str,
        callback: &str,
    ) -> Result<String, crate::auth::AuthFailure> {
        let (oauth, vault) = (&config.oauth, self.manager.vault().clone());
        let gate = self.gateway_client_of(owner);
        let sign_in = SignIn {
            server,
            url,
            oauth,
            vault: vault.clone(),
            owner,
            callback,
            held: gate.is_some(),
        };
        let cross_app = oauth
            .identity_provider
            .as_ref()
            .filter(|_| config.signs_in_for_id_tokens());
        let (at, then) = match (cross_app, &gate) {
            (Some(idp), _) => {
                let token_endpoint = idp.token_endpoint.as_deref();
                let (issuer, client_id) = (idp.issuer.as_str(), idp.client_id.as_str());
                (
                    Party {
                        issuer,
                        client_id,
                        token_endpoint,
                    },
                    Then::CrossApp,
                )
            }
            (None, Some((issuer, client))) => {
                let address = sign_in.begin().await?;
                let client_id = client.client_id.as_str();
                let at = Party {
                    issuer,
                    client_id,
                    token_endpoint: None,
                };
                (at, Then::Upstream { address })
            }
            (None, None) => return sign_in.begin().await,
        };
        let identify = Identify {
            server,
            url,
            vault,
            owner,
            callback,
            at,
            then,
        };
        identify.begin().await
    }

    /// The issuer `owner` signed in through and the gateway's own client
    /// there, when it has one (`serve.oauth.issuers[i].signIn`).
    fn gateway_client_of(&self, owner: &str) -> Option<(String, GatewayClient)> {
        self.gateway_client(|issuer| crate::auth::subject_at(owner, issuer).is_some())
    }

    /// The first issuer of `serve.oauth` that `is` says of, and the
    /// gateway's own client there, when it has one.
    fn gateway_client(&self, is: impl Fn(&str) -> bool) -> Option<(String, GatewayClient)> {
        let config = self.config();
        let issuers = &config.serve.oauth.as_ref()?.issuers;
        let issuer = issuers.iter().find(|i| is(&i.issuer))?;
        Some((issuer.issuer.clone(), issuer.sign_in.clone()?))
    }

    /// Finishes the sign-in whose callback came to `redirect` (its full
    /// address) with the browser's `Cookie` header, with the servers as
    /// configured now.
    pub async fn finish_sign_in(
        &self,
        redirect: &str,
        cookies: Option<&str>,
    ) -> Result<SignedIn, HostError> {
        let servers = |name: &str| {
            let found = self.manager.server(name)?;
            match &found.config.transport {
                Transport::Http { url, .. } if found.config.per_person() => {
                    Some((url.clone(), found.config.oauth.clone()))
                }
                _ => None,
            }
        };
        let gateway_clients = |at: &str| self.gateway_client(|i| i == at).map(|(_, c)| c);
        let configured = Configured {
            servers: &servers,
            gateway_clients: &gateway_clients,
            env: self.env(),
        };
        let vault = self.manager.vault();
        let done = crate::auth::finish_sign_in(vault, (redirect, cookies), &configured).await;
        let done = done.map_err(|source| HostError::SignIn(Box::new(source)))?;
        if done.onward.is_some() {
            tracing::info!(
                server = done.server,
                owner = done.owner,
                "a person's identity was checked"
            );
            return Ok(done);
        }
        // The link is spent, and a listing as this person is due again.
        let key = (done.server.clone(), done.owner.clone());
        let mut lately = self.lately();
        lately.links.remove(&key);
        lately.listings.remove(&key);
        drop(lately);
        tracing::info!(
            server = done.server,
            owner = done.owner,
            "a person signed in"
        );
        Ok(done)
    }

    pub(super) fn lately(&self) -> std::sync::MutexGuard<'_, crate::host::Lately> {
        self.lately.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lists, as `caller`'s own, the per-person servers in their reach
    /// that nobody could list yet (no cache, no shared login): a person's
    /// first connection lists a server for everyone (see the lifecycle). A
    /// server is tried once in [`LISTING_RETRIED`] at most for each person.
    /// Whether one was listed, and the servers still unlisted for want of
    /// the caller's own login (tried now or lately).
    pub async fn list_unlisted_as(&self, caller: &crate::host::pipeline::Caller) -> Unlisted {
        let who = caller.who();
        let mut out = Unlisted::default();
        let crate::lifecycle::Who::Person(owner, _) = who else {
            return out;
        };
        let manager = &self.manager;
        for server in manager.server_names() {
            let unlisted = caller.reaches(&server)
                && !manager.has_tools(&server)
                && manager
                    .server(&server)
                    .is_some_and(|s| s.config.enabled && s.config.per_person());
            if !unlisted {
                continue;
            }
            match self.listing_tried(&server, owner) {
                None => {}
                Some(false) => continue,
                // Unless they signed in since, at any replica: then a try
                // is due now, counted as any.
                Some(true) if self.has_own_login(&server, owner).await => {
                    self.listing_tried_now(&server, owner, false);
                }
                Some(true) => {
                    out.need_login.push(server);
                    continue;
                }
            }
            let need = crate::upstream::Need::Any;
            // Boxed: a connect is a large future, and the call paths that
            // wait on this one are deep already.
            let listed = manager.with_connection_as(&server, who, need, |_| async { Ok(()) });
            match Box::pin(listed).await {
                Ok(()) => out.listed = true,
                Err(e) => {
                    tracing::debug!(server, owner, "not listed as this person: {e}");
                    if matches!(e, crate::lifecycle::LifecycleError::PersonNeedsLogin { .. }) {
                        self.listing_tried_now(&server, owner, true);
                        out.need_login.push(server);
                    }
                }
            }
        }
        out
    }

    /// Whether `owner` holds a login of their own to `server` now.
    async fn has_own_login(&self, server: &str, owner: &str) -> bool {
        let Ok((_, url)) = self.oauth_server(server) else {
            return false;
        };
        let held = crate::auth::status(self.manager.vault(), &url, Some(owner)).await;
        held.is_ok_and(|held| held.logged_in)
    }

    /// Whether `owner` lately found no login of theirs at `server`, when a
    /// listing was tried lately; else `None`, counting this try.
    fn listing_tried(&self, server: &str, owner: &str) -> Option<bool> {
        let mut lately = self.lately();
        lately
            .listings
            .retain(|_, (at, _)| at.elapsed() < LISTING_RETRIED);
        let key = (server.to_string(), owner.to_string());
        if let Some((_, needs_login)) = lately.listings.get(&key) {
            return Some(*needs_login);
        }
        // Counted under the same lock: of two calls at once, one tries.
        lately.listings.insert(key, (Instant::now(), false));
        None
    }

    /// Counts a listing of `server` as `owner` tried now, and whether it
    /// found no login of theirs.
    fn listing_tried_now(&self, server: &str, owner: &str, needs_login: bool) {
        let key = (server.to_string(), owner.to_string());
        self.lately()
            .listings
            .insert(key, (Instant::now(), needs_login));
    }
}

/// What listing the unlisted servers as a person came to.
#[derive(Debug, Default)]
pub struct Unlisted {
    /// Some server was listed.
    pub listed: bool,
    /// The servers that could not be, for want of the person's own login.
    pub need_login: Vec<String>,
}
