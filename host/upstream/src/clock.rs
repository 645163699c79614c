//! Time as the host reads it. Intervals (backoff, idle, ping, freshness) use
//! tokio's clock, so tests can pause and advance it instead of sleeping;
//! timestamps written for other processes and replicas use the wall clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// A point on tokio's monotonic clock: paused time in tests moves it.
pub use tokio::time::Instant;

/// Seconds since the Unix epoch (token expiries are written in these).
pub fn now_secs() -> u64 {
    now_ms() / 1000
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
