//! A person signing in for themselves through the gateway's public
//! callback: a call that found no login of theirs on a per-person server
//! gets a link to sign in, and the callback, served by any replica, keeps
//! the login as theirs.

use super::{Host, HostError};
use crate::auth::{SignIn, SignedIn};
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
        let sign_in = SignIn {
            server,
            url: &url,
            oauth: &config.oauth,
            vault: vault.clone(),
            owner,
            callback,
        };
        let link = sign_in.begin().await.map_err(Self::auth_error(server))?;
        let mut lately = self.lately();
        lately.links.retain(|_, (at, _)| at.elapsed() < LINK_REUSED);
        lately.links.insert(key, (Instant::now(), link.clone()));
        Ok(Some(link))
    }

    /// Finishes the sign-in whose callback came to `redirect` (its full
    /// address), with the servers as configured now.
    pub async fn finish_sign_in(&self, redirect: &str) -> Result<SignedIn, HostError> {
        let servers = |name: &str| {
            let found = self.manager.server(name)?;
            match &found.config.transport {
                Transport::Http { url, .. } if found.config.per_person() => {
                    Some((url.clone(), found.config.oauth.clone()))
                }
                _ => None,
            }
        };
        let done = crate::auth::finish_sign_in(self.manager.vault(), redirect, servers).await;
        let done = done.map_err(|source| HostError::SignIn(Box::new(source)))?;
        self.lately()
            .links
            .remove(&(done.server.clone(), done.owner.clone()));
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
    /// Whether one was listed.
    pub async fn list_unlisted_as(&self, caller: &crate::host::pipeline::Caller) -> bool {
        let who = caller.who();
        let crate::lifecycle::Who::Person(owner, _) = who else {
            return false;
        };
        let mut listed_any = false;
        let manager = &self.manager;
        for server in manager.server_names() {
            let unlisted = caller.reaches(&server)
                && !manager.has_tools(&server)
                && manager
                    .server(&server)
                    .is_some_and(|s| s.config.enabled && s.config.per_person());
            if !unlisted || !self.listing_due(&server, owner) {
                continue;
            }
            let need = crate::upstream::Need::Any;
            // Boxed: a connect is a large future, and the call paths that
            // wait on this one are deep already.
            let listed = manager.with_connection_as(&server, who, need, |_| async { Ok(()) });
            match Box::pin(listed).await {
                Ok(()) => listed_any = true,
                Err(e) => tracing::debug!(server, owner, "not listed as this person: {e}"),
            }
        }
        listed_any
    }

    /// Whether a listing of `server` as `owner` is due; counts this try.
    fn listing_due(&self, server: &str, owner: &str) -> bool {
        let mut lately = self.lately();
        lately
            .listings
            .retain(|_, at| at.elapsed() < LISTING_RETRIED);
        let key = (server.to_string(), owner.to_string());
        lately.listings.insert(key, Instant::now()).is_none()
    }
}
