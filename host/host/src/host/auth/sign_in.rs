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
        if !config.per_person() {
            return Ok(None);
        }
        let key = (server.to_string(), owner.to_string());
        if let Some(link) = self
            .links_given()
            .get(&key)
            .filter(|(at, _)| at.elapsed() < LINK_REUSED)
        {
            return Ok(Some(link.1.clone()));
        }
        let sign_in = SignIn {
            server,
            url: &url,
            oauth: &config.oauth,
            vault: self.manager.vault().clone(),
            owner,
            callback,
        };
        let link = sign_in.begin().await.map_err(Self::auth_error(server))?;
        let mut given = self.links_given();
        given.retain(|_, (at, _)| at.elapsed() < LINK_REUSED);
        given.insert(key, (Instant::now(), link.clone()));
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
        self.links_given()
            .remove(&(done.server.clone(), done.owner.clone()));
        tracing::info!(
            server = done.server,
            owner = done.owner,
            "a person signed in"
        );
        Ok(done)
    }

    fn links_given(&self) -> std::sync::MutexGuard<'_, crate::host::LinksGiven> {
        self.links_given.lock().unwrap_or_else(|p| p.into_inner())
    }
}
