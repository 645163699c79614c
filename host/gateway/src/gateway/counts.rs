//! Open sessions per client, counted for the live page.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Open sessions per client (token name), for the page.
#[derive(Default)]
pub(super) struct SessionCounts(Arc<Mutex<BTreeMap<String, usize>>>);

/// One open session, counted until dropped.
pub(super) struct Counted {
    counts: Arc<Mutex<BTreeMap<String, usize>>>,
    client: String,
}

impl SessionCounts {
    /// Counts a session of `client` while the result lives.
    pub(super) fn open(&self, client: &str) -> Counted {
        *lock(&self.0).entry(client.to_string()).or_default() += 1;
        Counted {
            counts: self.0.clone(),
            client: client.to_string(),
        }
    }

    pub(super) fn counts(&self) -> BTreeMap<String, usize> {
        lock(&self.0).clone()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        if let Some(n) = counts.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.client);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
