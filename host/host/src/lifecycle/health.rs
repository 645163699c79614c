//! Keeping connections healthy: idle servers are closed, keep-alive ones
//! pinged and reconnected, and a server's changed tool list is fetched again.

use super::*;

impl Manager {
    /// Closes idle servers and reconnects keep-alive ones (pinging those that
    /// look connected, so a hung server is replaced too); call periodically.
    pub(crate) async fn maintain(&self) {
        self.close_idle_people().await;
        let slots = self.slots();
        let keep_alive = slots.iter().filter(|s| {
            s.server.config.enabled && s.server.config.lifecycle == Lifecycle::KeepAlive
        });
        let pings = keep_alive.filter_map(|slot| {
            let in_flight = slot.in_flight.load(Ordering::Acquire);
            let (now, timeout) = (Instant::now(), self.options.ping_timeout);
            let due = slot.state().health.due_for_ping(now, timeout, in_flight);
            if !due {
                return None;
            }
            let conn = slot.live()?;
            let timeout = self.options.ping_timeout;
            Some(async move { (slot, conn.clone(), conn.ping(timeout).await) })
        });
        for (slot, conn, alive) in futures::future::join_all(pings).await {
            if alive {
                continue;
            }
            tracing::warn!(server = slot.name(), "no answer to a ping; reconnecting");
            let hung = {
                let mut st = slot.state();
                match &st.conn {
                    Some(c) if Arc::ptr_eq(c, &conn) => st.conn.take(),
                    _ => None,
                }
            };
            if let Some(hung) = hung {
                close(hung).await;
                let _ = self
                    .events
                    .send(LifecycleEvent::StatusChanged(slot.name().to_string()));
            }
        }
        for slot in slots.iter() {
            let live = slot.live();
            if let (Some(conn), Some(idle)) = (&live, slot.idle_timeout(self.global_idle_minutes)) {
                let in_flight = slot.in_flight.load(Ordering::Acquire);
                let (idle, quiet) = {
                    let health = &slot.state().health;
                    let now = Instant::now();
                    (health.idle(now, idle, in_flight), health.quiet(now))
                };
                if idle && conn.is_open() {
                    let old = slot.state().conn.take();
                    if let Some(old) = old {
                        tracing::info!(
                            server = slot.name(),
                            "closing after {}s idle",
                            quiet.as_secs()
                        );
                        close(old).await;
                        let _ = self
                            .events
                            .send(LifecycleEvent::StatusChanged(slot.name().to_string()));
                    }
                }
            }
            if live.is_none()
                && slot.server.config.enabled
                && slot.server.config.lifecycle == Lifecycle::KeepAlive
            {
                let _ = self.connect(slot.name(), false).await;
            }
        }
    }

    /// Runs [`Manager::maintain`] every `health_interval` until the manager is dropped.
    pub(crate) fn spawn_maintenance(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        let every = self.options.health_interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(manager) = weak.upgrade() else {
                    return;
                };
                manager.maintain().await;
            }
        })
    }

    /// Asks for `conn`'s lists again when the server cannot tell of its
    /// changes (a stateless server without a listen stream) and they are
    /// older than `unheard_lists_fresh`; the relist runs in the background.
    pub(super) fn freshen(&self, slot: &Slot, conn: &Connection) {
        if conn.hears_changes() {
            return;
        }
        {
            let mut st = slot.state();
            let now = Instant::now();
            if !st.health.lists_stale(now, self.options.unheard_lists_fresh) {
                return;
            }
            // Once per period, however many calls and sessions ask.
            st.health.listed(now);
        }
        self.upstream_tx
            .change(UpstreamEvent::ListChanged(slot.name().to_string()));
    }

    /// `Manager::freshen` for every connected server: a session is about
    /// to read the lists.
    pub(crate) fn freshen_unheard(&self) {
        for slot in self.slots().iter() {
            if let Some(conn) = slot.live() {
                self.freshen(slot, &conn);
            }
        }
    }

    /// Waits until every connected server's first try at a change stream
    /// has an outcome (it is bounded by the stream's own time limit).
    pub(crate) async fn listen_settled(&self) {
        let live: Vec<_> = self.slots().iter().filter_map(|s| s.live()).collect();
        futures::future::join_all(live.iter().map(|c| c.listen_settled())).await;
    }

    pub(super) async fn upstream_loop(
        weak: std::sync::Weak<Manager>,
        mut rx: crate::upstream::events::EventReceiver,
    ) {
        while let Some(event) = rx.recv().await {
            let Some(manager) = weak.upgrade() else {
                return;
            };
            let server = match event {
                UpstreamEvent::ListChanged(server) => server,
                UpstreamEvent::ResourceUpdated(server, uri) => {
                    let _ = manager
                        .events
                        .send(LifecycleEvent::ResourceUpdated { server, uri });
                    continue;
                }
                UpstreamEvent::Log(server, message) => {
                    let _ = manager.events.send(LifecycleEvent::Log { server, message });
                    rx.passed_on();
                    continue;
                }
            };
            // A burst of list_changed (a flood, even) costs one relist running
            // and one waiting, never one per notification.
            let Ok(slot) = manager.slot(&server) else {
                continue;
            };
            if slot.relist_pending.swap(true, Ordering::AcqRel) {
                continue;
            }
            // Each server relists on its own: one that never answers holds up
            // only its own refresh, and only until its call timeout.
            tokio::spawn(async move { manager.relist(&server).await });
        }
    }

    /// Lists a server's tools again after it announced a change. Relists of one
    /// server run one after another, so an older answer never lands last.
    async fn relist(&self, server: &str) {
        let Ok(slot) = self.slot(server) else {
            return;
        };
        let _one_at_a_time = slot.relist_lock.lock().await;
        // From here on, a new list_changed needs a relist after this one.
        slot.relist_pending.store(false, Ordering::Release);
        let Some(conn) = slot.live() else { return };
        let generation = slot.state().generation;
        let timeout = self.call_timeout(server);
        let relisted = tokio::time::timeout(timeout, conn.relist()).await;
        match relisted {
            Ok(Ok(listing)) => {
                if self.store_listing(&slot, &listing, generation) {
                    tracing::info!(server, "tool list changed; catalog and cache refreshed");
                    let _ = self
                        .events
                        .send(LifecycleEvent::CatalogChanged(server.to_string()));
                }
            }
            Ok(Err(e)) => tracing::warn!(server, "relisting after list_changed failed: {e}"),
            Err(_) => tracing::warn!(
                server,
                "relisting after list_changed got no answer within {} ms",
                timeout.as_millis()
            ),
        }
    }
}
