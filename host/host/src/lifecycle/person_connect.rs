//! Opening and using a person's own connection (see [`super::people`]):
//! with their login, never another's, and listed for the catalog when
//! nobody could list the server before.

use super::people::{Busy, PersonSlot};
use super::*;

/// How often an open person connection looks for its login again: a
/// person logged out or forgotten (by `mcpw auth` in any process) loses
/// their open connections within this.
const RECHECK: Duration = Duration::from_secs(30);

impl Manager {
    /// Runs `f` on `owner`'s own connection to the per-person server of
    /// `slot`, connecting with their login if needed. A token exchanged for
    /// theirs that the server no longer takes (refused, or forgotten) is
    /// dropped, so that their next call exchanges again.
    pub(super) async fn with_person<T, F>(
        &self,
        slot: &Arc<Slot>,
        (owner, token): (&str, Option<&str>),
        f: impl FnOnce(Arc<Connection>) -> F,
    ) -> Result<T, LifecycleError>
    where
        F: Future<Output = Result<T, ConnectError>>,
    {
        let outcome = self.with_person_once(slot, (owner, token), f).await;
        match outcome {
            Err(LifecycleError::PersonNeedsLogin { .. }) if slot.server.config.exchanges() => {
                Err(self.exchanged_token_gone(slot, owner).await)
            }
            other => other,
        }
    }

    /// Drops the token exchanged for `owner` at `slot`'s server, which the
    /// server did not take: the error that says so.
    async fn exchanged_token_gone(&self, slot: &Slot, owner: &str) -> LifecycleError {
        if let Some((vault, url)) = self.logins_of(slot)
            && let Err(e) = vault.clear_person(url, owner).await
        {
            tracing::warn!(
                server = slot.name(),
                "an exchanged token could not be dropped: {e}"
            );
        }
        LifecycleError::Exchange {
            server: slot.name().to_string(),
            why: format!(
                "the token exchanged for {owner} is no longer good there (refused, or forgotten): it was dropped, and the next call exchanges the caller's token again"
            ),
        }
    }

    async fn with_person_once<T, F>(
        &self,
        slot: &Arc<Slot>,
        (owner, token): (&str, Option<&str>),
        f: impl FnOnce(Arc<Connection>) -> F,
    ) -> Result<T, LifecycleError>
    where
        F: Future<Output = Result<T, ConnectError>>,
    {
        let name = slot.name();
        let (person, conn) = self.person_connection(slot, owner, token).await?;
        if person.due_for_check(RECHECK) && !self.still_logged_in(slot, owner).await {
            person.drop_dead(&conn);
            close(conn).await;
            tracing::info!(server = name, owner, "closed: the person's login is gone");
            return Err(LifecycleError::PersonNeedsLogin {
                server: name.to_string(),
                owner: owner.to_string(),
            });
        }
        let result = {
            let _busy = Busy::enter(&person);
            f(conn.clone()).await
        };
        if died(&result, &conn) {
            person.drop_dead(&conn);
        }
        result.map_err(|error| person_error(name, owner, error))
    }

    /// Whether `owner` still has a login to `slot`'s server in the store; a
    /// store that cannot be read now leaves the open connection be.
    async fn still_logged_in(&self, slot: &Slot, owner: &str) -> bool {
        let Some((vault, url)) = self.logins_of(slot) else {
            return true;
        };
        match crate::auth::status(&vault, url, Some(owner)).await {
            Ok(held) => held.logged_in,
            Err(e) => {
                tracing::debug!(
                    server = slot.name(),
                    "cannot look for a person's login: {e}"
                );
                true
            }
        }
    }

    /// `owner`'s live connection to `slot`'s server, opened with their own
    /// login when there is none; attempts of one person share one connect.
    async fn person_connection(
        &self,
        slot: &Arc<Slot>,
        owner: &str,
        token: Option<&str>,
    ) -> Result<(Arc<PersonSlot>, Arc<Connection>), LifecycleError> {
        let name = slot.name();
        let (person, closing) = self.people.slot(name, &slot.hash, owner).map_err(|cap| {
            LifecycleError::PeopleFull {
                server: name.to_string(),
                cap,
            }
        })?;
        for old in closing {
            close(old).await;
        }
        if let Some(stale) = person.expiring(crate::auth::EXCHANGE_MARGIN) {
            // Its exchanged token is about to lapse: a new connection
            // exchanges the caller's token again.
            close(stale).await;
        }
        let conn = self.person_connect(slot, (owner, token), &person).await?;
        Ok((person, conn))
    }

    /// `person`'s live connection, or one opened now with their login (one
    /// attempt at a time per person).
    async fn person_connect(
        &self,
        slot: &Arc<Slot>,
        (owner, token): (&str, Option<&str>),
        person: &PersonSlot,
    ) -> Result<Arc<Connection>, LifecycleError> {
        if let Some(conn) = person.live() {
            return Ok(conn);
        }
        let _attempt = person.connect_lock.lock().await;
        if let Some(conn) = person.live() {
            return Ok(conn);
        }
        let name = slot.name();
        let config = &slot.server.config;
        let expires = match (config.exchanges(), config.signs_in_for_id_tokens()) {
            (true, _) => self.exchanged(slot, owner, token).await?,
            (false, true) => self.cross_app_login(slot, owner).await?,
            (false, false) => None,
        };
        let legacy_only = slot
            .state()
            .protocol_version
            .as_deref()
            .is_some_and(is_legacy_revision);
        // Its events go nowhere: nobody else may hear one person's server.
        let quiet = crate::upstream::events::channel().0;
        let mut ctx = self.context(name, quiet, legacy_only, self.vault_for(slot));
        ctx.owner = Some(owner.into());
        let (conn, listing) = self
            .connector
            .open(&slot.server.config, &ctx)
            .await
            .map_err(|error| person_error(name, owner, error))?;
        let conn = Arc::new(conn);
        tracing::info!(server = name, owner, "connected with a person's own login");
        person.hold(conn.clone(), expires);
        self.list_from_person(slot, &listing);
        Ok(conn)
    }

    /// For a server that takes each caller's token in exchange: a token of
    /// its own for `owner`, kept or exchanged now from the `token` they
    /// presented; when it expires.
    async fn exchanged(
        &self,
        slot: &Slot,
        owner: &str,
        token: Option<&str>,
    ) -> Result<Option<u64>, LifecycleError> {
        let failed = |why: String| LifecycleError::Exchange {
            server: slot.name().to_string(),
            why,
        };
        let Some(subject) = token else {
            return Err(failed(format!(
                "{owner} came with a token of the gateway's own, which no issuer exchanges: sign in through an issuer of `serve.oauth`"
            )));
        };
        let Some((vault, url)) = self.logins_of(slot) else {
            return Err(failed("no credential store is at hand".into()));
        };
        let exchange = crate::auth::TokenExchange {
            server: slot.name(),
            url,
            oauth: &slot.server.config.oauth,
            vault,
            owner,
            subject,
        };
        exchange.ensure().await.map_err(|e| failed(e.to_string()))
    }

    /// Where the logins to `slot`'s server are kept, and its URL they are
    /// kept under (an HTTP server's, with a store at hand).
    fn logins_of<'s>(&self, slot: &'s Slot) -> Option<(crate::auth::store::Vault, &'s str)> {
        match &slot.server.config.transport {
            crate::config::Transport::Http { url, .. } => Some((self.vault_for(slot)?, url)),
            _ => None,
        }
    }

    /// For cross-app access per person: `owner`'s token of the server's,
    /// kept, or from their ID token renewed at the identity provider; when
    /// it expires. None to be had without signing in: they need a login.
    async fn cross_app_login(
        &self,
        slot: &Slot,
        owner: &str,
    ) -> Result<Option<u64>, LifecycleError> {
        of_identity_provider(slot, owner)?;
        let Some((vault, url)) = self.logins_of(slot) else {
            return Ok(None);
        };
        let login = crate::auth::CrossAppLogin {
            server: slot.name(),
            url,
            oauth: &slot.server.config.oauth,
            vault,
            owner,
        };
        match login.ensure().await {
            Ok(expires) => Ok(expires),
            Err(crate::auth::NotRenewed::SignIn) => Err(LifecycleError::PersonNeedsLogin {
                server: slot.name().to_string(),
                owner: owner.to_string(),
            }),
            Err(crate::auth::NotRenewed::Failed(e)) => Err(LifecycleError::Exchange {
                server: slot.name().to_string(),
                why: e.to_string(),
            }),
        }
    }

    /// A server nobody could list yet (no cache, no shared login) is listed
    /// from the first person's connection: its tools, prompts and templates
    /// are the server's, its resources that person's own and left out.
    fn list_from_person(&self, slot: &Slot, listing: &Listing) {
        let generation = {
            let st = slot.state();
            if st.tools.is_some() {
                return;
            }
            st.generation
        };
        let listing = Listing {
            resources: Vec::new(),
            ..listing.clone()
        };
        if self.store_listing(slot, &listing, generation) {
            let _ = self
                .events
                .send(LifecycleEvent::CatalogChanged(slot.name().to_string()));
        }
    }

    /// Closes the person connections unused for the idle timeout.
    pub(super) async fn close_idle_people(&self) {
        let idle = Duration::from_secs_f64(self.global_idle_minutes.max(0.5) * 60.0);
        for (server, conn) in self.people.idle_since(idle) {
            tracing::debug!(server = &*server, "closing a person's idle connection");
            close(conn).await;
        }
    }
}

/// Cross-app access for each person exchanges their own ID token, which
/// only a principal of the identity provider signs in there for.
fn of_identity_provider(slot: &Slot, owner: &str) -> Result<(), LifecycleError> {
    let Some(idp) = slot.server.config.oauth.identity_provider.as_ref() else {
        return Ok(());
    };
    if crate::auth::subject_at(owner, &idp.issuer).is_some() {
        return Ok(());
    }
    Err(LifecycleError::Exchange {
        server: slot.name().to_string(),
        why: format!(
            "cross-app access exchanges each person's own ID token from {}, and {owner} did not sign in to the gateway there: sign in through that issuer",
            idp.issuer
        ),
    })
}

/// What a person's failed connect or call says: a missing login is theirs
/// to make, not the server's failure.
fn person_error(server: &str, owner: &str, error: ConnectError) -> LifecycleError {
    match error {
        ConnectError::NeedsAuth { .. } => LifecycleError::PersonNeedsLogin {
            server: server.to_string(),
            owner: owner.to_string(),
        },
        error => LifecycleError::Connect {
            server: server.to_string(),
            error,
        },
    }
}
