//! Connecting a slot: sharing a connection another caller just made,
//! honouring the backoff after a failure (this process's or another
//! replica's), and recording the outcome.

use super::*;

impl Manager {
    /// Connects `name` if it is not connected; `force` reconnects now,
    /// bypassing the backoff (an explicit connect). The connection stays in
    /// the host: calls reach it along the pipeline, never around it.
    pub(crate) async fn connect(&self, name: &str, force: bool) -> Result<(), LifecycleError> {
        self.connection(name, force).await.map(|_| ())
    }

    /// A live connection to `name`, connecting if needed, as [`Manager::connect`].
    pub(crate) async fn connection(
        &self,
        name: &str,
        force: bool,
    ) -> Result<Arc<Connection>, LifecycleError> {
        let slot = self.slot(name)?;
        if !slot.server.config.enabled {
            return Err(LifecycleError::Disabled(name.to_string()));
        }
        if !force && let Some(conn) = slot.live() {
            return Ok(conn);
        }
        let _attempt = slot.connect_lock.lock().await;
        if !force && let Some(conn) = self.instead_of_connecting(&slot).await? {
            return Ok(conn);
        }
        let old = slot.state().conn.take();
        if let Some(old) = old {
            close(old).await;
        }
        // An explicit connect probes afresh: the server may have been upgraded.
        let legacy_only = !force
            && slot
                .state()
                .protocol_version
                .as_deref()
                .is_some_and(is_legacy_revision);
        let vault = self.vault_for(&slot);
        let ctx = self.context(name, self.upstream_tx.clone(), legacy_only, vault);
        self.sessions.ready_to_connect().await;
        match self.connector.open(&slot.server.config, &ctx).await {
            Ok((conn, listing)) => self.connected(&slot, Arc::new(conn), &listing).await,
            Err(error) => Err(self.failed(&slot, error)),
        }
    }

    /// What a caller that waited for the slot's attempt gets instead of one of
    /// its own: the connection another caller made meanwhile, or the backoff
    /// of a failure (ours, or one another replica recorded a moment ago).
    /// `None`: go ahead and connect.
    async fn instead_of_connecting(
        &self,
        slot: &Slot,
    ) -> Result<Option<Arc<Connection>>, LifecycleError> {
        if let Some(conn) = slot.live() {
            return Ok(Some(conn));
        }
        if let Some(err) = self.backoff_error(slot) {
            return Err(err);
        }
        if let Some(failure) = self.cache.shared_failure(slot.name()).await
            && let Some(failure) = reload::recorded_failure(&slot.server, &failure)
        {
            slot.state().health.heard(failure);
        }
        match self.backoff_error(slot) {
            Some(err) => Err(err),
            None => Ok(None),
        }
    }

    /// Connects again the servers of the handshake era whose connection
    /// offered less than mcpw's clients now take (a client of the stateless
    /// revision declared sampling, say), unless a call is in flight there:
    /// a server registers what it offers when a connection opens.
    pub(crate) async fn renew_offers(&self) {
        let slots = self.slots();
        let renew = slots.iter().map(|slot| async move {
            // A connection being opened said what it takes already.
            drop(slot.connect_lock.lock().await);
            let stale = slot.in_flight.load(Ordering::Acquire) == 0
                && slot.live().is_some_and(|c| c.offers_less());
            if !stale {
                return;
            }
            let name = slot.name();
            tracing::info!(
                server = name,
                "connecting again, to offer what a client takes"
            );
            if let Err(e) = self.connect(name, true).await {
                tracing::warn!(server = name, "connecting again: {e}");
            }
        });
        futures::future::join_all(renew).await;
    }

    /// The handshake-era connection beside `conn` when `need` calls for one
    /// and the server speaks that era.
    pub(super) async fn beside(
        &self,
        slot: &Slot,
        conn: &Connection,
        need: Need<'_>,
    ) -> Option<Arc<Connection>> {
        if !conn.needs_beside(need) {
            return None;
        }
        let name = slot.name();
        // Made only when a connection is opened, not for each call on one.
        let open = || async move {
            let vault = self.vault_for(slot);
            let ctx = self.context(name, self.upstream_tx.clone(), true, vault);
            self.connector.open(&slot.server.config, &ctx).await
        };
        let beside = conn.beside(need, open).await;
        if beside.is_none() {
            tracing::debug!(server = name, ?need, "served on the stateless connection");
        }
        beside
    }

    /// The vault of a server mcpw logs in to.
    pub(super) fn vault_for(&self, slot: &Slot) -> Option<crate::auth::store::Vault> {
        slot.server
            .config
            .oauth_applies()
            .then(|| self.vault.clone())
    }

    /// What a connection to `name` is opened with.
    pub(super) fn context(
        &self,
        name: &str,
        events: crate::upstream::events::EventSender,
        legacy_only: bool,
        vault: Option<crate::auth::store::Vault>,
    ) -> ConnectContext {
        ConnectContext {
            server: name.to_string(),
            env: self.env.clone(),
            events,
            legacy_only,
            redact: Default::default(),
            sessions: self.sessions.clone(),
            vault,
            owner: None,
            stores: self.stores.clone(),
            secrets: self.vault.clone(),
        }
    }

    /// Keeps a new connection and its listing, unless a reload retired the
    /// slot meanwhile.
    async fn connected(
        &self,
        slot: &Slot,
        conn: Arc<Connection>,
        listing: &Listing,
    ) -> Result<Arc<Connection>, LifecycleError> {
        let name = slot.name();
        let generation = {
            let mut st = slot.state();
            st.generation += 1;
            st.generation
        };
        self.store_listing(slot, listing, generation);
        let retired = {
            let mut st = slot.state();
            if !st.retired {
                st.conn = Some(conn.clone());
                st.health.connected(Instant::now());
            }
            st.retired
        };
        if retired {
            // The config changed while connecting: this connection
            // belongs to a server that no longer exists as it was.
            close(conn).await;
            return Err(LifecycleError::Reconfigured(name.to_string()));
        }
        tracing::info!(server = name, transport = ?conn.kind(), "connected");
        self.log_level_to(&conn, name);
        for event in [
            LifecycleEvent::StatusChanged,
            LifecycleEvent::CatalogChanged,
        ] {
            let _ = self.events.send(event(name.to_string()));
        }
        Ok(conn)
    }

    /// Records a failed attempt, here and for every process that shares the
    /// cache, and says why it failed.
    fn failed(&self, slot: &Slot, error: ConnectError) -> LifecycleError {
        let name = slot.name();
        slot.state().health.failed(health_state::Failure {
            at: Instant::now(),
            error: error.to_string(),
            needs_auth: error.is_auth(),
        });
        let failure = cache::Failure {
            config_hash: cache::definition_hash(&slot.server.raw),
            at: crate::clock::now_ms(),
            error: error.to_string(),
            needs_auth: error.is_auth(),
        };
        self.writer.record_failure(name, Some(failure));
        tracing::warn!(server = name, "connect failed: {error}");
        let _ = self
            .events
            .send(LifecycleEvent::StatusChanged(name.to_string()));
        LifecycleError::Connect {
            server: name.to_string(),
            error,
        }
    }

    /// Asks the server without credentials how it wants a login: its
    /// `WWW-Authenticate` challenge (`Some("")` when it refuses without one),
    /// or `None` when it lets mcpw in with none. The server's connection and
    /// state are left as they are.
    pub(crate) async fn auth_challenge(
        &self,
        name: &str,
    ) -> Result<Option<String>, LifecycleError> {
        let slot = self.slot(name)?;
        // Not this server's events: a probe lists nothing for the catalog.
        let ctx = self.context(name, crate::upstream::events::channel().0, false, None);
        match self.connector.open(&slot.server.config, &ctx).await {
            Ok((conn, _)) => {
                conn.close().await;
                Ok(None)
            }
            Err(ConnectError::NeedsAuth { challenge, .. }) => {
                Ok(Some(challenge.unwrap_or_default()))
            }
            Err(error) => Err(LifecycleError::Connect {
                server: name.to_string(),
                error,
            }),
        }
    }

    fn backoff_error(&self, slot: &Slot) -> Option<LifecycleError> {
        let can_log_in = slot.server.config.oauth_applies();
        let wait = slot
            .state()
            .health
            .backoff(Instant::now(), self.options.backoff, can_log_in)?;
        Some(LifecycleError::Backoff {
            server: slot.name().to_string(),
            ago_s: wait.ago.as_secs(),
            retry_in_s: wait.left.as_secs().max(1),
            last_error: wait.error,
        })
    }
}
