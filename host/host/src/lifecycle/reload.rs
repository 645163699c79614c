//! Switching to a new configuration without a restart, and the slots it
//! creates for new server definitions.

use super::*;

/// How long a failure recorded in the cache is shown (and its backoff honoured).
const REMEMBERED_FAILURE: Duration = Duration::from_secs(3600);

/// `failure`, recorded by some mcpw process, on this process's clock, if it
/// holds for `server` as configured now and is recent enough to be shown.
/// Hashed only for a server with a recorded failure: start-up stays cheap.
pub(super) fn recorded_failure(
    server: &Server,
    failure: &cache::Failure,
) -> Option<health_state::Failure> {
    if failure.config_hash != cache::definition_hash(&server.raw) {
        return None;
    }
    let age = Duration::from_millis(crate::clock::now_ms().saturating_sub(failure.at));
    (age < REMEMBERED_FAILURE)
        .then(|| Instant::now().checked_sub(age))
        .flatten()
        .map(|at| health_state::Failure {
            at,
            error: failure.error.clone(),
            needs_auth: failure.needs_auth,
        })
}

/// A slot for `server`, knowing its tools from a valid cache entry (taken
/// out of `entries`).
pub(super) fn new_slot(
    server: &Server,
    entries: &mut std::collections::BTreeMap<String, cache::Entry>,
    failures: &std::collections::BTreeMap<String, cache::Failure>,
) -> Arc<Slot> {
    let hash = cache::config_hash(&server.raw);
    let cached = entries
        .remove(&server.name)
        .filter(|e| e.is_valid(&hash, crate::clock::now_ms()));
    let protocol_version = cached.as_ref().and_then(|e| e.protocol_version.clone());
    let decoded = cached.and_then(|e| tools_from_entry(server, e));
    let from_cache = decoded.is_some();
    let protocol_version = protocol_version.filter(|_| from_cache);
    let (tools, offers) = match decoded {
        Some((tools, offers)) => (Some(tools.into_iter().map(Arc::new).collect()), offers),
        None => (None, Offers::default()),
    };
    // A recent failure recorded by any mcpw process: its backoff and message hold here too.
    let failed = failures
        .get(&server.name)
        .and_then(|f| recorded_failure(server, f));
    Arc::new(Slot {
        server: server.clone(),
        state: Mutex::new(SlotState {
            conn: None,
            generation: 0,
            offers,
            tools,
            protocol_version,
            from_cache,
            health: health_state::Health::new(Instant::now(), failed),
            retired: false,
        }),
        hash,
        connect_lock: tokio::sync::Mutex::new(()),
        in_flight: AtomicUsize::new(0),
        relist_lock: Default::default(),
        relist_pending: AtomicBool::new(false),
    })
}

impl Manager {
    /// Switches to the servers of `config`. A server whose definition did not
    /// change keeps its slot and connection; a changed or removed one is retired
    /// (its connection closed, late results dropped); new ones start from the
    /// cache. Returns the names of the servers added, changed or removed.
    pub(crate) async fn reload(&self, config: &Config) -> Vec<String> {
        // One reload at a time: each builds on the slots the previous one left.
        let _one_at_a_time = self.reload_lock.lock().await;
        let cache = self.cache.clone();
        let mut entries = tokio::task::spawn_blocking(move || cache.read())
            .await
            .unwrap_or_default();
        let (retired, mut changed) = {
            let old = self.slots.load_full();
            let next: Vec<Arc<Slot>> = config
                .servers
                .iter()
                .map(|server| {
                    old.iter()
                        .find(|s| s.server == *server)
                        .cloned()
                        // A new definition starts afresh: no failure of the old one holds.
                        .unwrap_or_else(|| new_slot(server, &mut entries, &Default::default()))
                })
                .collect();
            let retired: Vec<Arc<Slot>> = old
                .iter()
                .filter(|s| !next.iter().any(|n| Arc::ptr_eq(n, s)))
                .cloned()
                .collect();
            let changed: Vec<String> = next
                .iter()
                .filter(|n| !old.iter().any(|s| Arc::ptr_eq(n, s)))
                .map(|s| s.name().to_string())
                .collect();
            // Reloads are serialised (above), so nothing swapped in meanwhile.
            self.slots.store(Arc::new(Slots::new(next)));
            // Retired right after the swap: nothing finishing afterwards can
            // store into them, and their connections are closed below.
            for slot in &retired {
                slot.state().retired = true;
            }
            (retired, changed)
        };
        for slot in &retired {
            let conn = slot.state().conn.take();
            if let Some(conn) = conn {
                close(conn).await;
            }
            if !changed.iter().any(|c| c == slot.name()) {
                changed.push(slot.name().to_string());
            }
        }
        if !changed.is_empty() {
            self.catalog_version.fetch_add(1, Ordering::AcqRel);
            for name in &changed {
                let _ = self
                    .events
                    .send(LifecycleEvent::StatusChanged(name.clone()));
                let _ = self
                    .events
                    .send(LifecycleEvent::CatalogChanged(name.clone()));
            }
        }
        changed
    }
}
