//! The credential vault: where OAuth credentials (one opaque JSON document per
//! server) are kept. A vault has one backend: the OS keyring (`keyring`), a
//! private file ([`file`]), or, with shared state and its key, Redis, where
//! credentials are kept sealed and every replica finds them (`team_state`).
//! A vault that must not be used (shared state without a usable key) has a
//! backend that refuses everything. Each person's own logins are kept apart
//! from the servers' shared ones, listable in every backend ([`people`]).

mod file;
mod keyring;
mod logins;
mod people;
mod person;
mod team_state;

pub use logins::UNDER_WAY;
pub use person::{Person, PersonLogin};
pub use team_state::{KEY_ENV, SharedLock};

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

pub use crate::config::model::StoreKind;

/// Why the vault could not load, save or lock credentials. The messages are
/// shown to users, and never include a credential.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The OS keyring cannot be reached; the store fails closed rather than
    /// falling back to a file on its own.
    #[error(
        "The OS keyring is unavailable ({reason}). Set \"settings\": {{\"credentialStore\": \"file\"}} to keep credentials in a file under {file_dir}."
    )]
    KeyringUnavailable {
        /// The keyring's own error text.
        reason: String,
        /// The file store's directory, the alternative.
        file_dir: PathBuf,
    },
    /// The keyring is reachable but refused this entry.
    #[error("The OS keyring refused the credentials for \"{key}\": {reason}.")]
    Keyring {
        /// The entry's key.
        key: String,
        /// What the keyring said.
        reason: String,
    },
    /// The keyring entry is not a JSON document (edited by hand, or not ours).
    #[error(
        "The OS keyring entry \"{key}\" (service \"mcpw\") is not valid JSON ({reason}); delete it and log in again."
    )]
    KeyringCorrupt {
        /// The entry's key.
        key: String,
        /// The parser's message (positions only, never content).
        reason: String,
    },
    /// Group or other users have access: the credentials may already be exposed.
    #[error(
        "{path} has mode {mode:04o}, which lets other users reach the credentials; mcpw will not use it. Run `{fix}` and check who could have read it."
    )]
    Permissions {
        /// The offending file or directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// The command that makes it private.
        fix: String,
    },
    /// Owned by another user, who could read or replace the credentials.
    #[error("{path} is owned by user id {uid}, not by you; mcpw will not keep credentials in it.")]
    Owner {
        /// The offending file or directory.
        path: PathBuf,
        /// Its owner.
        uid: u32,
    },
    /// A symlink where the store expects its own file or directory: it could
    /// redirect reads and writes elsewhere.
    #[error(
        "{path} is a symbolic link; mcpw will not follow it for credentials. Replace it with a real {expected}."
    )]
    Symlink {
        /// The link.
        path: PathBuf,
        /// "file" or "directory".
        expected: &'static str,
    },
    /// A directory where a file is expected, or the reverse.
    #[error("{path} is not a {expected}; mcpw cannot keep credentials there.")]
    WrongType {
        /// The offending path.
        path: PathBuf,
        /// "file" or "directory".
        expected: &'static str,
    },
    /// An I/O error on the file store.
    #[error("Cannot access the credential store at {path}: {source}.")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The credentials file does not parse; it is left untouched for the user.
    #[error(
        "The credentials file {path} is not a valid JSON object ({reason}); mcpw left it as it is. Fix or remove it, then log in again."
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parser's message (positions only, never content).
        reason: String,
    },
    /// A lock stayed taken for the whole timeout.
    #[error("Gave up after {waited:?} waiting for the lock {path}: {holder}.")]
    LockTimeout {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
        /// Who presumably holds it.
        holder: &'static str,
    },
    /// The blocking task running the operation failed (panicked).
    #[error("The credential store task failed: {0}.")]
    Task(String),
    /// Credentials in shared state: Redis away, or a value the key does not open.
    #[error("Shared credential store {0}.")]
    Shared(String),
}

/// The credential storage of one user (or of a team, in shared state):
/// every server's credentials, by key.
#[derive(Clone)]
pub struct Vault {
    /// mcpw's config directory: the file store and the refresh lock files
    /// live under it, and messages name it whatever the backend.
    config_dir: PathBuf,
    backend: Backend,
}

/// Where a vault keeps credentials.
#[derive(Clone)]
enum Backend {
    /// The OS keyring ([`keyring`]); refresh locks are lock files all the same.
    Keyring,
    /// The private file under the config directory ([`file`]).
    File,
    /// Sealed in shared state ([`team_state`]), in place of the `local` store
    /// the config chose, which [`Vault::kind`] still answers.
    Shared {
        local: StoreKind,
        vault: Arc<team_state::SharedVault>,
    },
    /// Nothing: every operation fails, saying `why` (shared state without a
    /// usable key). `instead_of` (never itself refused) still answers
    /// [`Vault::kind`] and [`Vault::is_shared`].
    Refused {
        why: Arc<str>,
        instead_of: Box<Backend>,
    },
}

impl Backend {
    /// The local store configured, whatever the backend.
    fn kind(&self) -> StoreKind {
        match self {
            Backend::Keyring => StoreKind::Keyring,
            Backend::File => StoreKind::File,
            Backend::Shared { local, .. } => *local,
            Backend::Refused { instead_of, .. } => instead_of.kind(),
        }
    }

    /// The shared-state store, when credentials are (or would be) kept there.
    fn shared(&self) -> Option<&team_state::SharedVault> {
        match self {
            Backend::Shared { vault, .. } => Some(vault),
            Backend::Refused { instead_of, .. } => instead_of.shared(),
            Backend::Keyring | Backend::File => None,
        }
    }

    /// This backend with credentials in `vault` instead; a refused one stays
    /// refused.
    fn into_shared(self, vault: Arc<team_state::SharedVault>) -> Backend {
        match self {
            Backend::Refused { why, instead_of } => Backend::Refused {
                why,
                instead_of: Box::new(instead_of.into_shared(vault)),
            },
            local => Backend::Shared {
                local: local.kind(),
                vault,
            },
        }
    }
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.backend.shared() {
            Some(s) => write!(f, "Vault(shared state {})", s.state.location()),
            None => write!(
                f,
                "Vault({:?}, {})",
                self.backend.kind(),
                self.config_dir.display()
            ),
        }
    }
}

/// Held while refreshing one key's credentials; released on drop.
#[derive(Debug)]
pub enum RefreshLock {
    /// A lock file (closing it releases the lock: flock locks belong to the open file).
    File(std::fs::File),
    /// A lock in shared state.
    Shared(SharedLock),
}

impl Vault {
    /// A vault of `kind` whose file store lives under `config_dir`. Touches
    /// nothing until used.
    pub fn new(kind: StoreKind, config_dir: impl Into<PathBuf>) -> Vault {
        let backend = match kind {
            StoreKind::Keyring => Backend::Keyring,
            StoreKind::File => Backend::File,
        };
        Vault {
            config_dir: config_dir.into(),
            backend,
        }
    }

    /// A vault that refuses every operation, saying `why`.
    pub fn unusable(self, why: String) -> Vault {
        let instead_of = match self.backend {
            Backend::Refused { instead_of, .. } => instead_of,
            usable => Box::new(usable),
        };
        Vault {
            backend: Backend::Refused {
                why: why.into(),
                instead_of,
            },
            ..self
        }
    }

    /// The vault in `state` instead, sealed with `secret`; refuses a secret
    /// too short to be a key.
    pub fn in_shared_state(
        self,
        state: Arc<crate::team_state::SharedState>,
        secret: &str,
    ) -> Result<Vault, String> {
        let sealer = team_state::Sealer::new(secret)?;
        let vault = Arc::new(team_state::SharedVault { state, sealer });
        Ok(Vault {
            backend: self.backend.into_shared(vault),
            ..self
        })
    }

    /// With credentials in shared state, the key every replica seals the
    /// state of a request it holds for a client with (derived from the
    /// team's key, not the key itself).
    pub fn held_requests_key(&self) -> Option<[u8; 32]> {
        self.backend.shared().map(|v| v.sealer.held_requests_key())
    }

    /// Whether credentials are kept in shared state.
    pub fn is_shared(&self) -> bool {
        self.backend.shared().is_some()
    }

    /// Where credentials are kept.
    pub fn kind(&self) -> StoreKind {
        self.backend.kind()
    }

    /// The file store's directory (for messages), whatever the kind.
    pub fn file_dir(&self) -> PathBuf {
        file::store_dir(&self.config_dir)
    }

    /// The credentials stored under `key`, or `None` if there are none.
    pub async fn load(&self, key: &str) -> Result<Option<Value>, StoreError> {
        let (key, config_dir) = (key.to_owned(), self.config_dir.clone());
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.load(&key).await,
            Backend::Keyring => {
                blocking(move || keyring::load(&key, &file::store_dir(&config_dir))).await
            }
            Backend::File => blocking(move || file::load(&config_dir, &key)).await,
        }
    }

    /// Stores `value` under `key`, replacing what was there.
    pub async fn save(&self, key: &str, value: &Value) -> Result<(), StoreError> {
        let (key, config_dir) = (key.to_owned(), self.config_dir.clone());
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.save(&key, value).await,
            Backend::Keyring => {
                let text = value.to_string();
                blocking(move || keyring::save(&key, &text, &file::store_dir(&config_dir))).await
            }
            Backend::File => {
                let value = value.clone();
                blocking(move || file::save(&config_dir, key, value)).await
            }
        }
    }

    /// Forgets the credentials stored under `key`; succeeds if there were none.
    pub async fn clear(&self, key: &str) -> Result<(), StoreError> {
        let (key, config_dir) = (key.to_owned(), self.config_dir.clone());
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.clear(&key).await,
            Backend::Keyring => {
                blocking(move || keyring::clear(&key, &file::store_dir(&config_dir))).await
            }
            Backend::File => blocking(move || file::clear(&config_dir, &key)).await,
        }
    }

    /// Takes the cross-process lock on `key`'s credentials for a whole token
    /// refresh (load, request, save), so that two mcpw processes never spend
    /// the same refresh token. Waits at most `timeout`.
    pub async fn acquire_refresh_lock(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<RefreshLock, StoreError> {
        let name = refresh_lock_name(key);
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => {
                vault.lock(&name, timeout).await.map(RefreshLock::Shared)
            }
            // The keyring has no locks: its refreshes take a lock file too.
            Backend::Keyring | Backend::File => {
                let config_dir = self.config_dir.clone();
                blocking(move || file::refresh_lock(&config_dir, &name, timeout))
                    .await
                    .map(RefreshLock::File)
            }
        }
    }
}

/// What every operation of a refused vault fails with.
fn refused(why: &str) -> StoreError {
    StoreError::Shared(format!("unusable: {why}"))
}

/// Runs a blocking store operation off the async executor: keyring calls may
/// wait on D-Bus, file calls on disk and locks.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
}

/// The lock file name for `key`: hashed, so any key makes a safe file name.
fn refresh_lock_name(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.lock")
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kind_parses_and_serializes() {
        assert_eq!(StoreKind::parse("file"), Some(StoreKind::File));
        assert_eq!(StoreKind::parse("keyring"), Some(StoreKind::Keyring));
        assert_eq!(StoreKind::parse("plain"), None);
        assert_eq!(
            serde_json::to_value(StoreKind::File).unwrap(),
            json!("file")
        );
        assert_eq!(StoreKind::default(), StoreKind::Keyring);
    }
}

impl crate::secrets::Kept for Vault {
    fn secret<'a>(
        &'a self,
        key: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Option<String>, String>> {
        Box::pin(async move {
            let kept = self.load(key).await.map_err(|e| e.to_string())?;
            Ok(kept.and_then(|v| v.as_str().map(str::to_string)))
        })
    }
}
