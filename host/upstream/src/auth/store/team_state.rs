//! Credentials in shared state, so that a login through one replica serves
//! every replica: each server's credentials sealed with XChaCha20-Poly1305
//! under a key derived from a secret every replica is given
//! (`$MCPW_SHARED_STATE_KEY`, or `settings.sharedStateKey`: `${VAR}` or
//! `!command`), bound to the key they are filed under, in the hash
//! `mcpw:credentials`, and each person's own logins in a hash of their own
//! ([`people`]). Redis never sees a token in the clear. Refreshes take
//! a lock in Redis (`SET NX` with an expiry), so that two replicas never
//! spend the same refresh token.

mod people;
mod seal;

pub(super) use seal::Sealer;

use super::StoreError;
use crate::team_state::{SharedState, key};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The variable holding the secret.
pub const KEY_ENV: &str = "MCPW_SHARED_STATE_KEY";
/// A refresh lock left by a replica that died is taken over after this.
const LOCK_TTL: Duration = Duration::from_secs(60);

fn hash_key() -> String {
    key(&["credentials"])
}
fn expiring_key(name: &str) -> String {
    key(&["logins", name])
}
fn lock_key(name: &str) -> String {
    key(&["credentials", "lock", name])
}

/// The credential store in shared state.
pub(super) struct SharedVault {
    pub(super) state: Arc<SharedState>,
    pub(super) sealer: Sealer,
}

fn unreachable(state: &SharedState, e: impl std::fmt::Display) -> StoreError {
    StoreError::Shared(format!("{}: {e}", state.location()))
}

impl SharedVault {
    pub(super) async fn load(&self, name: &str) -> Result<Option<Value>, StoreError> {
        let sealed = self
            .state
            .hget(hash_key(), name)
            .await
            .map_err(|e| unreachable(&self.state, e))?;
        match sealed {
            None => Ok(None),
            Some(s) => self.sealer.open(name, &s).map(Some).map_err(|why| {
                StoreError::Shared(format!(
                    "the credentials for \"{name}\" in {}: {why}",
                    self.state.location()
                ))
            }),
        }
    }

    pub(super) async fn save(&self, name: &str, value: &Value) -> Result<(), StoreError> {
        let mut cmd = redis::cmd("HSET");
        cmd.arg(hash_key())
            .arg(name)
            .arg(self.sealer.seal(name, value));
        self.state
            .command(cmd)
            .await
            .map_err(|e| unreachable(&self.state, e))
    }

    pub(super) async fn clear(&self, name: &str) -> Result<(), StoreError> {
        let mut cmd = redis::cmd("HDEL");
        cmd.arg(hash_key()).arg(name);
        self.state
            .command(cmd)
            .await
            .map_err(|e| unreachable(&self.state, e))
    }

    /// Keeps `value` sealed under `name` for `ttl` from the first keep (a
    /// login under way): a later keep replaces the value, not the lifetime.
    pub(super) async fn keep_expiring(
        &self,
        name: &str,
        value: &Value,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        if !self.set_expiring(name, value, Some(ttl)).await? {
            self.set_expiring(name, value, None).await?;
        }
        Ok(())
    }

    /// Sets `value` sealed under `name`: a new one living `ttl` (`Some`),
    /// or in place of one there, keeping its lifetime (`None`). Whether it
    /// was set (not, when one was there, or was not).
    pub(super) async fn set_expiring(
        &self,
        name: &str,
        value: &Value,
        ttl: Option<Duration>,
    ) -> Result<bool, StoreError> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(expiring_key(name))
            .arg(self.sealer.seal(&expiring_key(name), value));
        match ttl {
            Some(ttl) => cmd.arg("PX").arg(ttl.as_millis() as u64).arg("NX"),
            None => cmd.arg("XX").arg("KEEPTTL"),
        };
        let set: Option<String> = self
            .state
            .command(cmd)
            .await
            .map_err(|e| unreachable(&self.state, e))?;
        Ok(set.is_some())
    }

    /// What is kept under `name`, while it has not lapsed.
    pub(super) async fn load_expiring(&self, name: &str) -> Result<Option<Value>, StoreError> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(expiring_key(name));
        let sealed: Option<String> = self
            .state
            .command(cmd)
            .await
            .map_err(|e| unreachable(&self.state, e))?;
        match sealed {
            None => Ok(None),
            Some(s) => self
                .sealer
                .open(&expiring_key(name), &s)
                .map(Some)
                .map_err(|why| StoreError::Shared(format!("a login under way: {why}"))),
        }
    }

    /// Drops what is kept under `name`; whether it was there.
    pub(super) async fn clear_expiring(&self, name: &str) -> Result<bool, StoreError> {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(expiring_key(name));
        let gone: i64 = self
            .state
            .command(cmd)
            .await
            .map_err(|e| unreachable(&self.state, e))?;
        Ok(gone > 0)
    }

    /// Drops every value kept expiring that `doomed` says of; how many.
    /// Their keys are scanned: they are few (one per sign-in begun in the
    /// last ten minutes), and each is opened to be judged, for its name
    /// says nothing of it.
    pub(super) async fn clear_expiring_where(
        &self,
        doomed: impl Fn(&Value) -> bool,
    ) -> Result<usize, StoreError> {
        let (prefix, mut cursor, mut dropped) = (expiring_key(""), 0u64, 0);
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor)
                .arg("MATCH")
                .arg(expiring_key("*"))
                .arg("COUNT")
                .arg(100);
            let (next, keys): (u64, Vec<String>) = self
                .state
                .command(scan)
                .await
                .map_err(|e| unreachable(&self.state, e))?;
            for name in keys.iter().filter_map(|k| k.strip_prefix(&prefix)) {
                if let Ok(Some(kept)) = self.load_expiring(name).await
                    && doomed(&kept)
                    && self.clear_expiring(name).await?
                {
                    dropped += 1;
                }
            }
            if next == 0 {
                return Ok(dropped);
            }
            cursor = next;
        }
    }

    /// Takes the refresh lock `lock_name`, waiting at most `timeout`.
    pub(super) async fn lock(
        &self,
        lock_name: &str,
        timeout: Duration,
    ) -> Result<SharedLock, StoreError> {
        let key = lock_key(lock_name);
        let token = format!("{}-{}", std::process::id(), crate::clock::now_ms());
        let deadline = Instant::now() + timeout;
        loop {
            let mut set = redis::cmd("SET");
            set.arg(&key)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(LOCK_TTL.as_millis() as u64);
            let taken: Option<String> = self
                .state
                .command(set)
                .await
                .map_err(|e| unreachable(&self.state, e))?;
            if taken.is_some() {
                return Ok(SharedLock {
                    state: self.state.clone(),
                    key,
                    token,
                });
            }
            if Instant::now() >= deadline {
                return Err(StoreError::Shared(format!(
                    "gave up after {timeout:?} waiting for the refresh lock in {}: another mcpw process is refreshing these credentials",
                    self.state.location()
                )));
            }
            // Polling: Redis has no wait on a key; refreshes are rare and short.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Deletes the lock only if it is still ours (it may have expired and been
/// taken by another process).
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

/// A refresh lock held in shared state; released on drop.
#[derive(Debug)]
pub struct SharedLock {
    state: Arc<SharedState>,
    key: String,
    token: String,
}

impl Drop for SharedLock {
    fn drop(&mut self) {
        let (state, key, token) = (self.state.clone(), self.key.clone(), self.token.clone());
        let release = move || {
            let _ = state.run_blocking(|c| {
                redis::Script::new(RELEASE)
                    .key(key)
                    .arg(token)
                    .invoke::<i64>(c)
            });
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(release);
            }
            Err(_) => release(),
        }
    }
}
