//! Whether Redis answers, as the last command saw it: said once in the logs
//! at each change, reported by `/readyz`, and watched by what has writes to
//! catch up on when it answers again.

use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Reachability of the shared state.
pub struct Health {
    location: String,
    /// `Some(true)`: answering; `Some(false)`: not; `None`: not tried yet.
    state: watch::Sender<Option<bool>>,
    /// Since when it has not answered.
    down_since: Mutex<Option<Instant>>,
    /// It has answered at least once.
    ever_up: std::sync::atomic::AtomicBool,
    /// When it last answered again after not answering.
    back_at: Mutex<Option<Instant>>,
}

/// What `/readyz` says of the shared state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Not tried yet.
    Unknown,
    /// Answering.
    Up,
    /// Not answering for this long.
    Down(Duration),
}

impl Health {
    pub(super) fn new(location: String) -> Health {
        Health {
            location,
            state: watch::channel(None).0,
            down_since: Mutex::new(None),
            ever_up: false.into(),
            back_at: Mutex::new(None),
        }
    }

    pub(super) fn answered(&self) {
        self.ever_up
            .store(true, std::sync::atomic::Ordering::Release);
        let was = self.state.send_replace(Some(true));
        *self.down_since.lock().unwrap_or_else(|p| p.into_inner()) = None;
        match was {
            Some(false) => {
                *self.back_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
                tracing::info!(
                    "shared state {} answers again; catching up on what was kept in memory",
                    self.location
                )
            }
            None => tracing::debug!("shared state {} answers", self.location),
            Some(true) => {}
        }
    }

    pub(super) fn failed(&self, why: &redis::RedisError) {
        let was = self.state.send_replace(Some(false));
        if was != Some(false) {
            *self.down_since.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            tracing::warn!(
                "shared state {} cannot be reached ({why}); serving from memory until it answers",
                self.location
            );
        }
    }

    /// Whether it has answered since the start.
    pub fn ever_up(&self) -> bool {
        self.ever_up.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether it came back from not answering within `window`.
    pub fn back_within(&self, window: Duration) -> bool {
        self.back_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|t| t.elapsed() < window)
    }

    /// Whether the last command got an answer.
    pub fn is_up(&self) -> bool {
        *self.state.borrow() == Some(true)
    }

    /// As `/readyz` reports it.
    pub fn reach(&self) -> Reach {
        match *self.state.borrow() {
            None => Reach::Unknown,
            Some(true) => Reach::Up,
            Some(false) => Reach::Down(
                self.down_since
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .map_or(Duration::ZERO, |t| t.elapsed()),
            ),
        }
    }

    /// The URL, password hidden.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Changes of reachability: `Some(true)` each time it answers after not answering.
    pub fn watch(&self) -> watch::Receiver<Option<bool>> {
        self.state.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_then_an_answer_is_down_then_up() {
        let h = Health::new("redis://x".into());
        assert_eq!(h.reach(), Reach::Unknown);
        let mut w = h.watch();
        h.failed(&redis::RedisError::from(std::io::Error::other("refused")));
        assert!(matches!(h.reach(), Reach::Down(_)));
        assert!(!h.is_up());
        assert!(w.has_changed().unwrap());
        w.mark_unchanged();
        h.answered();
        assert_eq!(h.reach(), Reach::Up);
        assert!(w.has_changed().unwrap());
    }
}
