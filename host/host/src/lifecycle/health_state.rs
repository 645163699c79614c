//! A slot's health as a pure state machine: what happened to it (connected,
//! failed, used, listed) and when, and what that allows now (an attempt, a
//! ping, closing it when idle, listing it again). Every decision takes the
//! time as input, so it is tested without a clock.

use crate::clock::Instant;
use std::time::Duration;

/// A failed attempt a slot remembers.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Failure {
    /// When (on this process's clock).
    pub at: Instant,
    /// What went wrong.
    pub error: String,
    /// The server asked for credentials.
    pub needs_auth: bool,
}

/// Why an attempt must wait.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Backoff {
    /// Since the failure.
    pub ago: Duration,
    /// Until the next attempt.
    pub left: Duration,
    /// The failure's message.
    pub error: String,
}

/// What a slot's lifecycle decisions go by.
#[derive(Clone, Debug)]
pub(super) struct Health {
    failure: Option<Failure>,
    last_used: Instant,
    listed_at: Instant,
}

impl Health {
    /// A new slot, remembering `failure` (one recorded by any mcpw process).
    pub(crate) fn new(now: Instant, failure: Option<Failure>) -> Health {
        Health {
            failure,
            last_used: now,
            listed_at: now,
        }
    }

    /// A connection opened: the last failure is forgotten.
    pub(crate) fn connected(&mut self, now: Instant) {
        self.failure = None;
        self.last_used = now;
    }

    /// An attempt failed.
    pub(crate) fn failed(&mut self, failure: Failure) {
        self.failure = Some(failure);
    }

    /// Another process's failure: kept when it is newer than what we know.
    pub(crate) fn heard(&mut self, failure: Failure) {
        if self
            .failure
            .as_ref()
            .is_none_or(|mine| mine.at < failure.at)
        {
            self.failure = Some(failure);
        }
    }

    /// A call began or ended.
    pub(crate) fn used(&mut self, now: Instant) {
        self.last_used = now;
    }

    /// The lists were fetched (or a fetch asked for).
    pub(crate) fn listed(&mut self, now: Instant) {
        self.listed_at = now;
    }

    /// The last failure, if it holds.
    pub(crate) fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// Why an attempt must wait `backoff` after a failure, if it must. A
    /// server that asked for credentials it can log in to never waits: a login
    /// in another process may have happened since, and asking again costs one
    /// refused request.
    pub(crate) fn backoff(
        &self,
        now: Instant,
        backoff: Duration,
        can_log_in: bool,
    ) -> Option<Backoff> {
        let failure = self.failure.as_ref()?;
        if failure.needs_auth && can_log_in {
            return None;
        }
        let ago = now.saturating_duration_since(failure.at);
        (ago < backoff).then(|| Backoff {
            ago,
            left: backoff - ago,
            error: failure.error.clone(),
        })
    }

    /// Quiet for at least `idle` with no call in flight: close it.
    pub(crate) fn idle(&self, now: Instant, idle: Duration, in_flight: usize) -> bool {
        in_flight == 0 && now.saturating_duration_since(self.last_used) >= idle
    }

    /// Quiet for `ping_timeout` or more with no call in flight: ask whether
    /// it still answers. A server busy with a call, or heard from lately, is
    /// not questioned: a single-threaded server may not answer mid-call.
    pub(crate) fn due_for_ping(
        &self,
        now: Instant,
        ping_timeout: Duration,
        in_flight: usize,
    ) -> bool {
        in_flight == 0 && now.saturating_duration_since(self.last_used) >= ping_timeout
    }

    /// Its lists are older than `fresh`.
    pub(crate) fn lists_stale(&self, now: Instant, fresh: Duration) -> bool {
        now.saturating_duration_since(self.listed_at) >= fresh
    }

    /// Seconds since it was last used.
    pub(crate) fn quiet(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.last_used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(at: Instant, needs_auth: bool) -> Failure {
        Failure {
            at,
            error: "refused".into(),
            needs_auth,
        }
    }

    #[test]
    fn a_failure_holds_off_attempts_for_the_backoff_and_a_connection_forgets_it() {
        let t0 = Instant::now();
        let minute = Duration::from_secs(60);
        let mut h = Health::new(t0, None);
        assert_eq!(h.backoff(t0, minute, false), None);
        h.failed(failure(t0, false));
        let waiting = h
            .backoff(t0 + Duration::from_secs(20), minute, false)
            .unwrap();
        assert_eq!((waiting.ago.as_secs(), waiting.left.as_secs()), (20, 40));
        assert_eq!(h.backoff(t0 + minute, minute, false), None, "over");
        h.connected(t0 + minute);
        assert!(h.failure().is_none());
    }

    #[test]
    fn a_login_is_never_held_off_and_only_a_newer_failure_is_heard() {
        let t0 = Instant::now();
        let mut h = Health::new(t0, Some(failure(t0, true)));
        let minute = Duration::from_secs(60);
        assert_eq!(h.backoff(t0, minute, true), None, "it can log in");
        assert!(h.backoff(t0, minute, false).is_some(), "it cannot");
        h.heard(failure(t0 - Duration::from_secs(5), false));
        assert!(
            h.failure().unwrap().needs_auth,
            "an older failure is ignored"
        );
        h.heard(failure(t0 + Duration::from_secs(5), false));
        assert!(!h.failure().unwrap().needs_auth, "a newer one replaces it");
    }

    #[test]
    fn idle_and_ping_wait_for_quiet_and_for_no_call_in_flight() {
        let t0 = Instant::now();
        let mut h = Health::new(t0, None);
        let (idle, ping) = (Duration::from_millis(120), Duration::from_millis(300));
        assert!(!h.idle(t0 + Duration::from_millis(100), idle, 0));
        assert!(h.idle(t0 + idle, idle, 0));
        assert!(!h.idle(t0 + idle, idle, 1), "a call in flight keeps it");
        assert!(!h.due_for_ping(t0 + Duration::from_millis(299), ping, 0));
        assert!(h.due_for_ping(t0 + ping, ping, 0));
        assert!(!h.due_for_ping(t0 + ping, ping, 1), "busy: not questioned");
        h.used(t0 + ping);
        assert!(!h.due_for_ping(t0 + ping, ping, 0), "heard from lately");
    }

    #[test]
    fn lists_go_stale_after_their_freshness() {
        let t0 = Instant::now();
        let mut h = Health::new(t0, None);
        let fresh = Duration::from_secs(5);
        assert!(!h.lists_stale(t0 + Duration::from_secs(4), fresh));
        assert!(h.lists_stale(t0 + fresh, fresh));
        h.listed(t0 + fresh);
        assert!(!h.lists_stale(t0 + fresh, fresh));
    }
}
