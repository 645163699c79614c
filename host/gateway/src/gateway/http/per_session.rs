//! A session's requests in flight, capped (`settings.maxRequestsInFlight`,
//! as a stdio client's): each takes a task and, until its answer has been
//! sent, the answer's memory. A POST beyond the cap gets HTTP 429 with
//! `Retry-After`, and the session goes on. A request is in flight from its
//! POST's arrival until its answer's body has been sent or dropped; the
//! client's answers to mcpw's questions, and its notifications, are not
//! counted (one the requests in flight wait for must always get through).
//! Requests without a session (the stateless revision's) are counted by
//! the credential they carry, as one session's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The requests in flight of each session.
pub(super) struct PerSession {
    max: usize,
    counts: Mutex<HashMap<String, usize>>,
}

/// One request's place in its session, held until its answer is sent.
pub(super) struct Place {
    of: Arc<PerSession>,
    session: String,
}

impl PerSession {
    /// At most `max` (at least 1) requests in flight per session.
    pub(super) fn new(max: usize) -> Arc<PerSession> {
        Arc::new(PerSession {
            max: max.max(1),
            counts: Mutex::default(),
        })
    }

    /// The cap.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for one more request of `session`, if it has fewer than the cap.
    pub(super) fn enter(self: &Arc<Self>, session: &str) -> Option<Place> {
        let mut counts = self.lock();
        let n = counts.entry(session.to_string()).or_default();
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(Place {
            of: self.clone(),
            session: session.to_string(),
        })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut counts = self.of.lock();
        if let Some(n) = counts.get_mut(&self.session) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_session_has_its_own_places_and_a_place_is_given_back_when_dropped() {
        let capped = PerSession::new(2);
        let a1 = capped.enter("a").expect("first of a");
        let _a2 = capped.enter("a").expect("second of a");
        assert!(capped.enter("a").is_none(), "a is at the cap");
        let _b = capped.enter("b").expect("b has its own places");
        drop(a1);
        assert!(capped.enter("a").is_some(), "a place given back");
        drop(_b);
        assert!(
            !capped.lock().contains_key("b"),
            "an idle session keeps no entry"
        );
    }
}
