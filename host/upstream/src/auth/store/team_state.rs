//! Credentials in shared state, so that a login through one replica serves
//! every replica: each server's credentials sealed with XChaCha20-Poly1305
//! under a key derived from a secret every replica is given
//! (`$MCPW_SHARED_STATE_KEY`, or `settings.sharedStateKey`: `${VAR}` or
//! `!command`), bound to the key they are filed under, in the hash
//! `mcpw:credentials`. Redis never sees a token in the clear. Refreshes take
//! a lock in Redis (`SET NX` with an expiry), so that two replicas never
//! spend the same refresh token.

use super::StoreError;
use crate::team_state::{SharedState, key};
use base64::Engine;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The variable holding the secret.
pub const KEY_ENV: &str = "MCPW_SHARED_STATE_KEY";
/// Fewer characters than this is too easy to guess for a key that guards
/// every login of a team.
const MIN_SECRET: usize = 16;
/// What a sealed value starts with: the scheme, for a later change of it.
const SCHEME: &str = "v1.";
/// A refresh lock left by a replica that died is taken over after this.
const LOCK_TTL: Duration = Duration::from_secs(60);

fn hash_key() -> String {
    key(&["credentials"])
}
fn lock_key(name: &str) -> String {
    key(&["credentials", "lock", name])
}

/// Seals and opens credentials with the team's secret; holds the key of the
/// requests the replicas hold for clients, derived from the same secret.
pub(super) struct Sealer(XChaCha20Poly1305, [u8; 32]);

impl Sealer {
    /// From the secret as given; refuses one too short to be a key.
    pub(super) fn new(secret: &str) -> Result<Sealer, String> {
        let secret = secret.trim();
        if secret.chars().count() < MIN_SECRET {
            return Err(format!(
                "the shared state key has fewer than {MIN_SECRET} characters; use a random one, such as the output of `openssl rand -base64 32`"
            ));
        }
        let mut h = Sha256::new();
        h.update(b"mcpw shared credentials v1\0");
        h.update(secret.as_bytes());
        let key = h.finalize();
        let mut held = Sha256::new();
        held.update(b"mcpw held requests v1\0");
        held.update(secret.as_bytes());
        Ok(Sealer(XChaCha20Poly1305::new(&key), held.finalize().into()))
    }

    /// The key a held request's state is sealed with, the same at every
    /// replica (see `gateway::held`).
    pub(super) fn held_requests_key(&self) -> [u8; 32] {
        self.1
    }

    /// `value` sealed, bound to `name` (a value moved under another name does
    /// not open).
    pub(super) fn seal(&self, name: &str, value: &Value) -> String {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let plain = value.to_string();
        let sealed = self
            .0
            .encrypt(
                &nonce,
                Payload {
                    msg: plain.as_bytes(),
                    aad: name.as_bytes(),
                },
            )
            .expect("sealing in memory cannot fail");
        let mut bytes = nonce.to_vec();
        bytes.extend(sealed);
        format!(
            "{SCHEME}{}",
            base64::engine::general_purpose::STANDARD_NO_PAD.encode(bytes)
        )
    }

    /// The value sealed under `name`, if this key sealed it.
    pub(super) fn open(&self, name: &str, sealed: &str) -> Result<Value, String> {
        let bad = || {
            "they do not open with this key (another key sealed them, or they were altered)"
                .to_string()
        };
        let bytes = sealed
            .strip_prefix(SCHEME)
            .and_then(|b| {
                base64::engine::general_purpose::STANDARD_NO_PAD
                    .decode(b)
                    .ok()
            })
            .filter(|b| b.len() > 24)
            .ok_or_else(bad)?;
        let (nonce, sealed) = bytes.split_at(24);
        let plain = self
            .0
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: name.as_bytes(),
                },
            )
            .map_err(|_| bad())?;
        serde_json::from_slice(&plain).map_err(|_| bad())
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sealed_values_open_with_their_key_and_name_only() {
        let a = Sealer::new("a team secret of some length").unwrap();
        let b = Sealer::new("another team secret, as long").unwrap();
        let v = json!({"access_token": "tok-123"});
        let sealed = a.seal("https://s/mcp", &v);
        assert!(!sealed.contains("tok-123"));
        assert_ne!(
            sealed,
            a.seal("https://s/mcp", &v),
            "a fresh nonce each time"
        );
        assert_eq!(a.open("https://s/mcp", &sealed).unwrap(), v);
        assert!(b.open("https://s/mcp", &sealed).is_err(), "another key");
        assert!(a.open("https://t/mcp", &sealed).is_err(), "another name");
        let mut tampered = sealed.clone();
        tampered.replace_range(10..11, if &sealed[10..11] == "A" { "B" } else { "A" });
        assert!(a.open("https://s/mcp", &tampered).is_err(), "altered");
        let short = Sealer::new("short").err().unwrap();
        assert!(short.contains("openssl rand"), "{short}");
    }
}
