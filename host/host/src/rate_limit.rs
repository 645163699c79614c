//! Rate limits: a token bucket per client token and limit (every call of
//! the client, a server's calls, the calls of the tools a glob matches). A
//! call takes one token from each bucket it draws from; an empty bucket
//! refuses it at once and says when to try again. In a team the buckets live
//! in Redis, so that the replicas share them; while Redis is away each
//! replica counts on its own. A command that makes one call and exits
//! (`mcpw call`) counts in a small state file, so that a loop of them is
//! limited as one client is.

use crate::clock::Instant;
use crate::config::rate::Rate;
use crate::team_state::SharedState;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every bucket of one process (or of the team).
pub struct Buckets {
    local: Mutex<HashMap<String, Local>>,
    shared: Option<Arc<SharedState>>,
    /// Where buckets are counted across processes without shared state.
    file: Option<PathBuf>,
}

/// A bucket counted in the state file: its tokens at a time (ms since the
/// epoch: every process's clock), and when it will be full again, so that
/// a bucket no process draws from any more is dropped once that passes.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Level {
    tokens: f64,
    at: u64,
    /// Written since buckets are dropped by time; one from before is kept
    /// until it is drawn from again.
    #[serde(default = "never", rename = "fullAt")]
    full_at: u64,
}

fn never() -> u64 {
    u64::MAX
}

/// A bucket counted here.
struct Local {
    tokens: f64,
    at: Instant,
}

/// A bucket kept in Redis: filled again by the time Redis tells (one
/// clock for every replica), and forgotten once it would be full anyway.
const TAKE: &str = r"
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or capacity
local at = tonumber(b[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * per_ms)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) / per_ms) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / per_ms) + 1000)
return wait
";

impl Buckets {
    /// Buckets here, or in `shared` (a team's Redis).
    pub fn new(shared: Option<Arc<SharedState>>) -> Buckets {
        Buckets {
            local: Mutex::default(),
            shared,
            file: None,
        }
    }

    /// The same buckets, counted in `file` when no shared state holds them.
    pub fn counting_in(mut self, file: Option<PathBuf>) -> Buckets {
        self.file = file;
        self
    }

    /// Takes a call from the bucket `key` of `rate`; when it is empty, how
    /// long until it holds one again.
    pub async fn take(&self, key: &str, rate: Rate) -> Result<(), Duration> {
        if let Some(state) = &self.shared {
            let script = redis::Script::new(TAKE);
            let mut invocation = script.key(crate::team_state::key(&["rate", key]));
            invocation.arg(rate.calls).arg(rate.per_ms());
            let outcome: Result<u64, _> = state
                .run(|mut c| async move { invocation.invoke_async(&mut c).await })
                .await;
            match outcome {
                Ok(0) => return Ok(()),
                Ok(ms) => return Err(Duration::from_millis(ms)),
                Err(e) => tracing::debug!("rate limit {key} counted here: {e}"),
            }
        }
        if let Some(file) = self.file.clone() {
            let owned = key.to_string();
            let counted = tokio::task::spawn_blocking(move || take_in_file(&file, &owned, rate));
            match counted.await {
                Ok(Ok(outcome)) => return outcome,
                Ok(Err(e)) => tracing::warn!("rate limit {key} counted in this process: {e}"),
                Err(e) => tracing::warn!("rate limit {key} counted in this process: {e}"),
            }
        }
        self.take_here(key, rate)
    }

    fn take_here(&self, key: &str, rate: Rate) -> Result<(), Duration> {
        let now = Instant::now();
        let mut buckets = self.local.lock().unwrap_or_else(|p| p.into_inner());
        let b = buckets.entry(key.to_string()).or_insert(Local {
            tokens: f64::from(rate.calls),
            at: now,
        });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64() * 1000.0;
        b.at = now;
        draw(&mut b.tokens, elapsed, rate)
    }
}

/// Fills `tokens` for `elapsed_ms`, up to the rate's calls, and takes one;
/// when there is none, how long until there is.
fn draw(tokens: &mut f64, elapsed_ms: f64, rate: Rate) -> Result<(), Duration> {
    *tokens = (*tokens + elapsed_ms * rate.per_ms()).min(f64::from(rate.calls));
    if *tokens >= 1.0 {
        *tokens -= 1.0;
        return Ok(());
    }
    let wait_ms = ((1.0 - *tokens) / rate.per_ms()).ceil();
    Err(Duration::from_millis(wait_ms as u64))
}

/// [`draw`] on the bucket `key` kept in `file`, under its lock; buckets
/// that are full again by now (of any rate) are left out, so the file stays
/// as small as the buckets still counting.
fn take_in_file(file: &Path, key: &str, rate: Rate) -> std::io::Result<Result<(), Duration>> {
    let now = crate::clock::now_ms();
    let read = |p: &Path| -> BTreeMap<String, Level> {
        std::fs::read(p)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    };
    crate::state_file::update(
        file,
        crate::state_file::Access::Default,
        crate::file_lock::DEFAULT_WAIT,
        read,
        |levels| {
            let capacity = f64::from(rate.calls);
            let full = Level {
                tokens: capacity,
                at: now,
                full_at: now,
            };
            let level = levels.entry(key.to_string()).or_insert(full);
            let elapsed = now.saturating_sub(level.at) as f64;
            level.at = now;
            let outcome = draw(&mut level.tokens, elapsed, rate);
            let missing_ms = ((capacity - level.tokens) / rate.per_ms()).ceil();
            level.full_at = now.saturating_add(missing_ms as u64);
            levels.retain(|_, l| l.full_at > now);
            outcome
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_bucket_gives_its_calls_then_one_as_each_comes_back() {
        let buckets = Buckets::new(None);
        let rate = Rate::parse("3/min").unwrap();
        for _ in 0..3 {
            assert_eq!(buckets.take("ci|*", rate).await, Ok(()));
        }
        let wait = buckets.take("ci|*", rate).await.unwrap_err();
        assert_eq!(wait, Duration::from_secs(20), "one call back every 20 s");
        assert_eq!(
            buckets.take("other|*", rate).await,
            Ok(()),
            "another client's bucket"
        );
        tokio::time::advance(Duration::from_secs(19)).await;
        assert!(buckets.take("ci|*", rate).await.is_err());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(buckets.take("ci|*", rate).await, Ok(()));
        tokio::time::advance(Duration::from_secs(3600)).await;
        for _ in 0..3 {
            assert_eq!(
                buckets.take("ci|*", rate).await,
                Ok(()),
                "full again, never more"
            );
        }
        assert!(buckets.take("ci|*", rate).await.is_err());
    }

    /// Counted in a file, a bucket is one across processes: a fresh
    /// `Buckets` (another `mcpw call`) finds it as the last one left it.
    #[tokio::test]
    async fn a_bucket_in_a_file_is_shared_by_each_process_that_counts_there() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rate-limits.json");
        let rate = Rate::parse("2/h").unwrap();
        let process = || Buckets::new(None).counting_in(Some(file.clone()));
        assert_eq!(process().take("cli|*", rate).await, Ok(()));
        assert_eq!(process().take("cli|*", rate).await, Ok(()));
        let wait = process().take("cli|*", rate).await.unwrap_err();
        assert!(wait > Duration::from_secs(1700), "{wait:?}");
        assert_eq!(process().take("other|*", rate).await, Ok(()));
        // Counted in the process alone, each would start full.
        assert_eq!(Buckets::new(None).take("cli|*", rate).await, Ok(()));
    }

    /// A bucket no process draws from any more is dropped from the file
    /// once it would be full again, whatever its rate; one still counting
    /// (and one from before buckets were dropped by time) is kept.
    #[tokio::test]
    async fn the_file_forgets_each_bucket_once_it_would_be_full_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rate-limits.json");
        let now = crate::clock::now_ms();
        let hour = 3_600_000;
        let before = serde_json::json!({
            "gone|*": {"tokens": 0.0, "at": now - 2 * hour, "fullAt": now - hour},
            "counting|*": {"tokens": 0.0, "at": now, "fullAt": now + hour},
            "old|*": {"tokens": 0.0, "at": now - 2 * hour}
        });
        std::fs::write(&file, before.to_string()).unwrap();
        let rate = Rate::parse("2/h").unwrap();
        let buckets = Buckets::new(None).counting_in(Some(file.clone()));
        assert_eq!(buckets.take("new|*", rate).await, Ok(()));
        let after: BTreeMap<String, serde_json::Value> =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let keys: Vec<&str> = after.keys().map(String::as_str).collect();
        assert_eq!(keys, ["counting|*", "new|*", "old|*"]);
        let full_at = after["new|*"]["fullAt"].as_u64().unwrap();
        assert!(
            full_at >= now + hour / 2,
            "one call of 2/h comes back in 30 min"
        );
    }
}
