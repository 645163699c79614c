//! Logins under way: what a sign-in begun in one process needs when the
//! browser comes back, in whichever process that is (rmcp's PKCE verifier
//! and state, and whose login it is), for [`UNDER_WAY`] and for one use.
//! In shared state they are sealed as credentials are, filed under a digest
//! of the state; otherwise they stay in this process, the only one the
//! callback can then reach.

use super::{Backend, StoreError, Vault, refused};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a sign-in may take, from its link to the callback.
pub const UNDER_WAY: Duration = Duration::from_secs(600);

/// This process's logins under way, for vaults outside shared state: by
/// digest of (config directory, state), with when each began.
static LOCAL: Mutex<Option<HashMap<String, (Instant, Value)>>> = Mutex::new(None);

/// The name a login under way is filed under: never the state itself, which
/// travels in the browser's address bar.
fn filed_as(scope: &str, state: &str) -> String {
    let mut hash = Sha256::new();
    for part in [scope, state] {
        hash.update((part.len() as u32).to_be_bytes());
        hash.update(part.as_bytes());
    }
    super::person::hex(&hash.finalize())
}

fn local<T>(f: impl FnOnce(&mut HashMap<String, (Instant, Value)>) -> T) -> T {
    let mut held = LOCAL.lock().unwrap_or_else(|p| p.into_inner());
    let map = held.get_or_insert_with(HashMap::new);
    map.retain(|_, (began, _)| began.elapsed() < UNDER_WAY);
    f(map)
}

impl Vault {
    fn under_way_name(&self, state: &str) -> String {
        match &self.backend {
            Backend::Shared { .. } => filed_as("", state),
            _ => filed_as(&self.config_dir.to_string_lossy(), state),
        }
    }

    /// Keeps `value` for the login whose OAuth state is `state`, replacing
    /// what was kept; it lapses [`UNDER_WAY`] after the first keep.
    pub async fn keep_login_under_way(&self, state: &str, value: &Value) -> Result<(), StoreError> {
        let name = self.under_way_name(state);
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.keep_expiring(&name, value, UNDER_WAY).await,
            Backend::Keyring | Backend::File => {
                local(|map| {
                    let began = map.get(&name).map_or_else(Instant::now, |(b, _)| *b);
                    map.insert(name, (began, value.clone()));
                });
                Ok(())
            }
        }
    }

    /// Replaces what is kept for the login whose OAuth state is `state`,
    /// when it is still under way (never bringing back one ended), keeping
    /// its lifetime. Whether it was.
    pub async fn update_login_under_way(
        &self,
        state: &str,
        value: &Value,
    ) -> Result<bool, StoreError> {
        let name = self.under_way_name(state);
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.set_expiring(&name, value, None).await,
            Backend::Keyring | Backend::File => Ok(local(|map| match map.get_mut(&name) {
                Some((_, kept)) => {
                    *kept = value.clone();
                    true
                }
                None => false,
            })),
        }
    }

    /// What is kept for the login whose OAuth state is `state`, while it
    /// has not lapsed or ended.
    pub async fn login_under_way(&self, state: &str) -> Result<Option<Value>, StoreError> {
        let name = self.under_way_name(state);
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.load_expiring(&name).await,
            Backend::Keyring | Backend::File => {
                Ok(local(|map| map.get(&name).map(|(_, v)| v.clone())))
            }
        }
    }

    /// Ends every login under way for `owner` (the principal its record's
    /// `owner` names): a person forgotten cannot finish a sign-in begun
    /// before. How many. Outside shared state, only this process's.
    pub async fn end_logins_under_way_of(&self, owner: &str) -> Result<usize, StoreError> {
        let doomed = |record: &Value| record["owner"] == owner;
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.clear_expiring_where(doomed).await,
            Backend::Keyring | Backend::File => Ok(local(|map| {
                let before = map.len();
                map.retain(|_, (_, record)| !doomed(record));
                before - map.len()
            })),
        }
    }

    /// Ends the login whose OAuth state is `state`: it cannot be finished
    /// again. Returns whether it was under way, so that of two callbacks
    /// with one state only one goes on.
    pub async fn end_login_under_way(&self, state: &str) -> Result<bool, StoreError> {
        let name = self.under_way_name(state);
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.clear_expiring(&name).await,
            Backend::Keyring | Backend::File => Ok(local(|map| map.remove(&name).is_some())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::store::StoreKind;
    use serde_json::json;

    /// A login under way is found by its state in the vault that kept it,
    /// not in another one, and ends once.
    #[tokio::test]
    async fn a_login_under_way_is_found_by_its_state_and_ends_once() {
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::File, tmp.path().join("a"));
        let other = Vault::new(StoreKind::File, tmp.path().join("b"));
        vault
            .keep_login_under_way("s1", &json!({"x": 1}))
            .await
            .unwrap();
        assert_eq!(
            vault.login_under_way("s1").await.unwrap(),
            Some(json!({"x": 1}))
        );
        assert_eq!(vault.login_under_way("s2").await.unwrap(), None);
        assert_eq!(other.login_under_way("s1").await.unwrap(), None);
        assert!(vault.end_login_under_way("s1").await.unwrap());
        assert!(!vault.end_login_under_way("s1").await.unwrap());
        assert_eq!(vault.login_under_way("s1").await.unwrap(), None);
        assert!(
            !vault
                .update_login_under_way("s1", &json!({"x": 2}))
                .await
                .unwrap()
        );
        assert_eq!(
            vault.login_under_way("s1").await.unwrap(),
            None,
            "not brought back"
        );
        assert_ne!(filed_as("", "s1"), filed_as("", "s2"));
        assert!(!filed_as("", "state-123").contains("state"));
    }

    /// A person's logins under way end with them; another's stay.
    #[tokio::test]
    async fn a_persons_logins_under_way_end_with_them() {
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::File, tmp.path());
        for (state, owner) in [
            ("a1", "token:ada"),
            ("a2", "token:ada"),
            ("b1", "token:bob"),
        ] {
            let record = json!({"owner": owner});
            vault.keep_login_under_way(state, &record).await.unwrap();
        }
        assert_eq!(vault.end_logins_under_way_of("token:ada").await.unwrap(), 2);
        assert_eq!(vault.login_under_way("a1").await.unwrap(), None);
        assert!(vault.login_under_way("b1").await.unwrap().is_some());
        assert_eq!(vault.end_logins_under_way_of("token:ada").await.unwrap(), 0);
    }
}
