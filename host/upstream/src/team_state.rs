//! State shared by mcpw processes through Redis (`--shared-state
//! redis://HOST:PORT[/DB]`, or `settings.sharedState`): the replicas of a team
//! gateway, and the commands run beside them, see one metadata cache, one
//! record of failures, one set of statistics, one store of logins and every
//! session.
//!
//! Redis is never on a call's path. Every process keeps what it needs in
//! memory and on disk as without shared state; Redis is written beside that
//! and read where another process's work matters (at start, before a
//! connect, when a session arrives that another replica began). When Redis
//! cannot be reached, processes serve from what they hold, say so (logs,
//! `/readyz`), and write what they missed once it answers again.

mod health;
pub mod sessions;

pub use health::{Health, Reach};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::sync::Arc;
use std::time::Duration;

/// The variable naming the shared state; `--shared-state` sets it.
pub const ENV: &str = "MCPW_SHARED_STATE";

/// How often a serving process checks that Redis answers.
pub const MONITOR_EVERY: Duration = Duration::from_secs(2);

/// Every key mcpw writes starts with this.
pub const PREFIX: &str = "mcpw:";

/// How long one Redis command may take before it counts as unreachable:
/// long enough for a busy Redis, short enough that a caller waiting on it
/// (a restore, a start) notices a dead one quickly.
pub const TIMEOUT: Duration = Duration::from_secs(2);

/// Why shared state cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SharedStateError {
    /// The URL.
    #[error(
        "shared state \"{0}\": expected redis://HOST:PORT[/DB] (or redis+unix:///path.sock), with an optional user:password@"
    )]
    BadUrl(String),
    /// A command failed (Redis down, refused, timed out).
    #[error("shared state {location}: {source}")]
    Redis {
        /// The URL, password hidden.
        location: String,
        /// Why.
        source: redis::RedisError,
    },
    /// Something stored that cannot be read back.
    #[error("shared state {location}: {what} cannot be read: {why}")]
    Corrupt {
        /// The URL, password hidden.
        location: String,
        /// Which value.
        what: String,
        /// Why.
        why: String,
    },
}

/// A connection to the shared state. Connects on first use, reconnects by
/// itself, and tracks whether Redis answers ([`Health`]).
pub struct SharedState {
    location: String,
    client: redis::Client,
    /// Made on first async use (it needs the runtime).
    conn: std::sync::OnceLock<ConnectionManager>,
    health: Arc<Health>,
}

impl std::fmt::Debug for SharedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedState({})", self.location)
    }
}

pub use crate::config::shared_url::redact;

impl SharedState {
    /// Checks that `url` names a Redis server mcpw can use.
    fn check_url(url: &str) -> Result<redis::Client, SharedStateError> {
        let bad = || SharedStateError::BadUrl(redact(url));
        if !crate::config::shared_url::is_usable(url) {
            return Err(bad());
        }
        redis::Client::open(url).map_err(|_| bad())
    }

    /// The shared state a process should use: `$MCPW_SHARED_STATE` (which
    /// `--shared-state` sets), else `settings.sharedState`; `None` for none.
    pub fn url_for(
        config: &crate::config::Config,
        env: &crate::paths::Environment,
    ) -> Option<String> {
        env.get(ENV)
            .filter(|u| !u.trim().is_empty())
            .map(str::to_string)
            .or_else(|| config.settings.shared_state.clone())
    }

    /// The shared state a process's config and environment name (see
    /// [`SharedState::url_for`]), opened; `None` for none.
    pub fn for_config(
        config: &crate::config::Config,
        env: &crate::paths::Environment,
    ) -> Result<Option<Arc<SharedState>>, SharedStateError> {
        Self::url_for(config, env)
            .map(|url| Self::open(&url))
            .transpose()
    }

    /// Shared state at `url`; connects on first use.
    pub fn open(url: &str) -> Result<Arc<SharedState>, SharedStateError> {
        let client = Self::check_url(url)?;
        let location = redact(url);
        Ok(Arc::new(SharedState {
            health: Arc::new(Health::new(location.clone())),
            location,
            client,
            conn: std::sync::OnceLock::new(),
        }))
    }

    /// The async connection, made on first use; it reconnects by itself.
    fn conn(&self) -> redis::RedisResult<ConnectionManager> {
        if let Some(c) = self.conn.get() {
            return Ok(c.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            // One quick retry: a dead Redis must fail a command in about
            // TIMEOUT, not after a ladder of backoffs.
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        let made = ConnectionManager::new_lazy_with_config(self.client.clone(), config)?;
        Ok(self.conn.get_or_init(|| made).clone())
    }

    /// The URL, password hidden.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Whether Redis answers, as last seen.
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// One command, on the async connection.
    pub async fn command<T: redis::FromRedisValue + Send>(
        &self,
        cmd: redis::Cmd,
    ) -> Result<T, SharedStateError> {
        self.run(|mut c| async move { cmd.query_async(&mut c).await })
            .await
    }

    /// A pipeline (its commands in one round trip), on the async connection.
    pub async fn pipeline<T: redis::FromRedisValue + Send>(
        &self,
        pipe: redis::Pipeline,
    ) -> Result<T, SharedStateError> {
        self.run(|mut c| async move { pipe.query_async(&mut c).await })
            .await
    }

    /// `field` of the hash at `key`.
    pub async fn hget(&self, key: String, field: &str) -> Result<Option<String>, SharedStateError> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(key).arg(field);
        self.command(cmd).await
    }

    /// Runs `f` on the async connection, noting whether Redis answered.
    pub async fn run<T, F, Fut>(&self, f: F) -> Result<T, SharedStateError>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let outcome = match self.conn() {
            Ok(conn) => tokio::time::timeout(TIMEOUT * 2, f(conn))
                .await
                .unwrap_or_else(|_| Err(timed_out())),
            Err(e) => Err(e),
        };
        self.noted(outcome)
    }

    /// Runs `f` on a connection of its own, blocking: for threads that are
    /// not async (the cache writer, statistics at exit).
    pub fn run_blocking<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, SharedStateError> {
        let outcome = self
            .client
            .get_connection_with_timeout(TIMEOUT)
            .and_then(|mut c| {
                c.set_read_timeout(Some(TIMEOUT))?;
                c.set_write_timeout(Some(TIMEOUT))?;
                f(&mut c)
            });
        self.noted(outcome)
    }

    fn noted<T>(&self, outcome: redis::RedisResult<T>) -> Result<T, SharedStateError> {
        match outcome {
            Ok(v) => {
                self.health.answered();
                Ok(v)
            }
            Err(source) => {
                // A command Redis refused (a wrong type, a script error) says
                // nothing about whether it can be reached.
                if is_unreachable(&source) {
                    self.health.failed(&source);
                }
                Err(SharedStateError::Redis {
                    location: self.location.clone(),
                    source,
                })
            }
        }
    }

    /// A value stored as JSON that cannot be read back.
    pub fn corrupt(&self, what: impl Into<String>, why: impl ToString) -> SharedStateError {
        SharedStateError::Corrupt {
            location: self.location.clone(),
            what: what.into(),
            why: why.to_string(),
        }
    }

    /// A dedicated connection for pub/sub.
    pub async fn pubsub(&self) -> Result<redis::aio::PubSub, SharedStateError> {
        let outcome = tokio::time::timeout(TIMEOUT, self.client.get_async_pubsub())
            .await
            .unwrap_or_else(|_| Err(timed_out()));
        self.noted(outcome)
    }

    /// Pings Redis every `every` while this state is alive, so that a Redis
    /// that went away (or came back) is noticed without waiting for work.
    pub fn spawn_monitor(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(state) = weak.upgrade() else { return };
                let _ = state.command::<()>(redis::cmd("PING")).await;
            }
        })
    }
}

fn timed_out() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "no answer in time",
    ))
}

fn is_unreachable(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_unrecoverable_error()
}

/// A Redis key: [`PREFIX`] and the parts, joined with `:`.
pub fn key(parts: &[&str]) -> String {
    let mut k = PREFIX.to_string();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            k.push(':');
        }
        k.push_str(p);
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show_and_other_schemes_are_refused() {
        assert_eq!(
            redact("redis://user:hunter2@cache:6379/2"),
            "redis://user:****@cache:6379/2"
        );
        assert_eq!(redact("redis://cache:6379"), "redis://cache:6379");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let e = SharedState::open("http://user:hunter2@cache").unwrap_err();
            assert!(!e.to_string().contains("hunter2"), "{e}");
            assert!(e.to_string().contains("redis://HOST:PORT"), "{e}");
            assert!(SharedState::open("redis://127.0.0.1:1/0").is_ok());
        });
    }

    #[test]
    fn keys_are_prefixed() {
        assert_eq!(key(&["cache", "servers"]), "mcpw:cache:servers");
    }
}
