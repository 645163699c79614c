//! The credential vault: where OAuth credentials (one opaque JSON document per
//! server) are kept, either in the OS keyring or in a private file.
//!
//! The file store trusts nothing it did not check: everything is opened
//! through directory handles (so a symlink cannot redirect a read or a write),
//! the directory must be 0700 and the file 0600 and both ours, and a wider mode
//! is refused rather than silently fixed, since it may mean the secrets
//! already leaked. Writes are atomic (temporary file, fsync, rename) and
//! serialized across processes by a lock file.
//!
//! On non-Unix platforms the mode and owner checks are skipped: there is no
//! mode to check, and the per-user profile directory already carries ACLs.
//!
//! With shared state and its key, credentials are kept sealed in Redis
//! instead ([`shared`]), where every replica finds them.

mod team_state;

pub use team_state::{KEY_ENV, SharedLock};

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use std::time::Duration;

use cap_std::fs::{Dir, File, Metadata, OpenOptions};
#[cfg(unix)]
use cap_std::fs::{MetadataExt, OpenOptionsExt};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The keyring service name every entry is filed under.
const SERVICE: &str = "mcpw";
/// The file store's directory, under the config directory.
const DIR_NAME: &str = "credentials";
/// The file store itself, inside [`DIR_NAME`].
const FILE_NAME: &str = "credentials.json";
/// Serializes read-modify-write of [`FILE_NAME`] across processes.
const STORE_LOCK: &str = ".lock";
/// Holds the per-key refresh locks, inside [`DIR_NAME`].
const LOCKS_DIR: &str = "locks";
/// The store lock is held only for a file read and write, so waiting this long
/// means the holder is stuck; better an error than a hang.
const STORE_LOCK_TIMEOUT: Duration = Duration::from_secs(30);

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
    kind: StoreKind,
    config_dir: PathBuf,
    shared: Option<std::sync::Arc<team_state::SharedVault>>,
    /// Why this vault refuses everything (shared state without a usable key).
    refused: Option<std::sync::Arc<str>>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.shared {
            Some(s) => write!(f, "Vault(shared state {})", s.state.location()),
            None => write!(f, "Vault({:?}, {})", self.kind, self.config_dir.display()),
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
        Vault {
            kind,
            config_dir: config_dir.into(),
            shared: None,
            refused: None,
        }
    }

    /// A vault that refuses every operation, saying `why`.
    pub fn unusable(self, why: String) -> Vault {
        Vault {
            refused: Some(why.into()),
            ..self
        }
    }

    fn check(&self) -> Result<(), StoreError> {
        match &self.refused {
            Some(why) => Err(StoreError::Shared(format!("unusable: {why}"))),
            None => Ok(()),
        }
    }

    /// The vault in `state` instead, sealed with `secret`; refuses a secret
    /// too short to be a key.
    pub fn in_shared_state(
        self,
        state: std::sync::Arc<crate::team_state::SharedState>,
        secret: &str,
    ) -> Result<Vault, String> {
        let sealer = team_state::Sealer::new(secret)?;
        Ok(Vault {
            shared: Some(std::sync::Arc::new(team_state::SharedVault {
                state,
                sealer,
            })),
            ..self
        })
    }

    /// Whether credentials are kept in shared state.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Where credentials are kept.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// The file store's directory (for messages), whatever the kind.
    pub fn file_dir(&self) -> PathBuf {
        self.config_dir.join(DIR_NAME)
    }

    /// The credentials stored under `key`, or `None` if there are none.
    pub async fn load(&self, key: &str) -> Result<Option<Value>, StoreError> {
        self.check()?;
        if let Some(shared) = &self.shared {
            return shared.load(key).await;
        }
        let (key, config_dir) = (key.to_owned(), self.config_dir.clone());
        match self.kind {
            StoreKind::Keyring => blocking(move || keyring_load(&key, &config_dir)).await,
            StoreKind::File => {
                blocking(move || {
                    with_file_store(&config_dir, false, |map| (map.get(&key).cloned(), false))
                })
                .await
            }
        }
    }

    /// Stores `value` under `key`, replacing what was there.
    pub async fn save(&self, key: &str, value: &Value) -> Result<(), StoreError> {
        self.check()?;
        if let Some(shared) = &self.shared {
            return shared.save(key, value).await;
        }
        let (key, config_dir) = (key.to_owned(), self.config_dir.clone());
        match self.kind {
            StoreKind::Keyring => {
                let text = value.to_string();
                blocking(move || {
                    let entry = keyring_entry(&key, &config_dir)?;
                    entry
                        .set_password(&text)
                        .map_err(|e| keyring_error(e, &key, &config_dir))
                })
                .await
            }
            StoreKind::File => {
                let value = value.clone();
                blocking(move || {
                    with_file_store(&config_dir, true, |map| {
                        map.insert(key, value);
                        ((), true)
                    })
                })
                .await
            }
        }
    }

    /// Forgets the credentials stored under `key`; succeeds if there were none.
    pub async fn clear(&self, key: &str) -> Result<(), StoreError> {
        self.check()?;
        if let Some(shared) = &self.shared {
            return shared.clear(key).await;
        }
        let (key, config_dir) = (key.to_owned(), self.config_dir.clone());
        match self.kind {
            StoreKind::Keyring => {
                blocking(move || {
                    let entry = keyring_entry(&key, &config_dir)?;
                    match entry.delete_credential() {
                        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
                        Err(e) => Err(keyring_error(e, &key, &config_dir)),
                    }
                })
                .await
            }
            StoreKind::File => {
                blocking(move || {
                    with_file_store(&config_dir, false, |map| ((), map.remove(&key).is_some()))
                })
                .await
            }
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
        self.check()?;
        let name = refresh_lock_name(key);
        if let Some(shared) = &self.shared {
            return shared.lock(&name, timeout).await.map(RefreshLock::Shared);
        }
        let config_dir = self.config_dir.clone();
        blocking(move || {
            let dir_path = config_dir.join(DIR_NAME);
            let Some(creds) =
                open_private_dir(&open_config_dir(&config_dir, true)?, &dir_path, true)?
            else {
                unreachable!("created on demand")
            };
            let locks_path = dir_path.join(LOCKS_DIR);
            let Some(locks) = open_private_dir(&creds, &locks_path, true)? else {
                unreachable!("created on demand")
            };
            let path = locks_path.join(&name);
            let file = open_private_file(&locks, &path, true)?.expect("created on demand");
            lock_within(
                &file,
                &path,
                timeout,
                "another mcpw process is refreshing these credentials",
            )?;
            Ok(RefreshLock::File(file))
        })
        .await
    }
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

// ---- keyring backend ----

fn keyring_entry(key: &str, config_dir: &Path) -> Result<keyring::Entry, StoreError> {
    keyring::Entry::new(SERVICE, key).map_err(|e| keyring_error(e, key, config_dir))
}

fn keyring_load(key: &str, config_dir: &Path) -> Result<Option<Value>, StoreError> {
    match keyring_entry(key, config_dir)?.get_password() {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| StoreError::KeyringCorrupt {
                key: key.to_owned(),
                reason: e.to_string(),
            }),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(keyring_error(e, key, config_dir)),
    }
}

/// Maps a keyring error, failing closed: an unreachable keyring names the
/// file store as the alternative instead of silently using it.
fn keyring_error(e: keyring::Error, key: &str, config_dir: &Path) -> StoreError {
    match e {
        keyring::Error::PlatformFailure(_) | keyring::Error::NoStorageAccess(_) => {
            StoreError::KeyringUnavailable {
                reason: e.to_string(),
                file_dir: config_dir.join(DIR_NAME),
            }
        }
        // Its Display lists the matching credentials; keep those out of messages.
        keyring::Error::Ambiguous(_) => StoreError::Keyring {
            key: key.to_owned(),
            reason: "more than one keyring entry matches it".to_owned(),
        },
        e => StoreError::Keyring {
            key: key.to_owned(),
            reason: e.to_string(),
        },
    }
}

// ---- file backend ----

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Runs `f` on the stored map under the store lock, writing the map back if
/// `f` says it changed. Without `create`, a missing store is an empty map and
/// nothing is created.
fn with_file_store<T>(
    config_dir: &Path,
    create: bool,
    f: impl FnOnce(&mut Map<String, Value>) -> (T, bool),
) -> Result<T, StoreError> {
    let dir_path = config_dir.join(DIR_NAME);
    if !create && !config_dir.exists() {
        return Ok(f(&mut Map::new()).0);
    }
    let Some(creds) = open_private_dir(&open_config_dir(config_dir, create)?, &dir_path, create)?
    else {
        return Ok(f(&mut Map::new()).0);
    };
    let lock_path = dir_path.join(STORE_LOCK);
    let lock = open_private_file(&creds, &lock_path, true)?.expect("created on demand");
    lock_within(
        &lock,
        &lock_path,
        STORE_LOCK_TIMEOUT,
        "another mcpw process is still using the credential store",
    )?;

    let file_path = dir_path.join(FILE_NAME);
    let mut map = match open_private_file(&creds, &file_path, false)? {
        None => Map::new(),
        Some(mut file) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(io_error(&file_path))?;
            match serde_json::from_slice(&bytes) {
                Ok(Value::Object(map)) => map,
                Ok(_) => {
                    return Err(corrupt(
                        &file_path,
                        "the top level is not an object".to_owned(),
                    ));
                }
                Err(e) => return Err(corrupt(&file_path, e.to_string())),
            }
        }
    };
    let (out, changed) = f(&mut map);
    if changed {
        write_atomically(&creds, &dir_path, &Value::Object(map))?;
    }
    drop(lock);
    Ok(out)
}

fn corrupt(path: &Path, reason: String) -> StoreError {
    StoreError::Corrupt {
        path: path.to_owned(),
        reason,
    }
}

/// Replaces `credentials.json` with `value` (see [`crate::state_file`]): a
/// crash leaves the old file or the new one, owner-only, and nothing else.
fn write_atomically(creds: &Dir, dir_path: &Path, value: &Value) -> Result<(), StoreError> {
    let text = serde_json::to_vec_pretty(value).expect("a JSON value always serializes");
    crate::state_file::replace(creds, FILE_NAME, crate::state_file::Access::Private, |w| {
        w.write_all(&text)
    })
    .map_err(io_error(&dir_path.join(FILE_NAME)))
}

/// The config directory, created (with ordinary permissions) if `create`.
/// The only path opened with ambient authority; everything below goes through
/// handles.
fn open_config_dir(config_dir: &Path, create: bool) -> Result<Dir, StoreError> {
    if create {
        std::fs::create_dir_all(config_dir).map_err(io_error(config_dir))?;
    }
    Dir::open_ambient_dir(config_dir, cap_std::ambient_authority()).map_err(io_error(config_dir))
}

/// Opens the private (0700, ours, not a symlink) directory `path`, a child of
/// `parent`, creating it if missing and `create`; `None` if missing otherwise.
fn open_private_dir(parent: &Dir, path: &Path, create: bool) -> Result<Option<Dir>, StoreError> {
    let name = path.file_name().expect("a child path");
    let seen = crate::private_fs::child_dir_seen(parent, Path::new(name), create);
    let Some(seen) = seen.map_err(io_error(path))? else {
        return Ok(None);
    };
    check_type(&seen, path, true)?;
    let dir = parent.open_dir(name).map_err(io_error(path))?;
    check_private(
        &dir.dir_metadata().map_err(io_error(path))?,
        &seen,
        path,
        true,
    )?;
    Ok(Some(dir))
}

/// Opens the private (0600, ours, not a symlink) file `path` in `dir`: for
/// reading, or read-write and created if missing when `create` (lock files).
fn open_private_file(
    dir: &Dir,
    path: &Path,
    create: bool,
) -> Result<Option<std::fs::File>, StoreError> {
    let name = path.file_name().expect("a child path");
    let mut options = OpenOptions::new();
    options.read(true).write(create);
    let seen = match dir.symlink_metadata(name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
            let mut fresh = options.clone();
            fresh.create_new(true);
            #[cfg(unix)]
            fresh.mode(0o600);
            match dir.open_with(name, &fresh) {
                // create_new never follows a symlink, so this file is ours.
                Ok(file) => return Ok(Some(file.into_std())),
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                    return Err(io_error(path)(e));
                }
                Err(_) => dir.symlink_metadata(name).map_err(io_error(path))?,
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        other => other.map_err(io_error(path))?,
    };
    check_type(&seen, path, false)?;
    let file: File = dir.open_with(name, &options).map_err(io_error(path))?;
    check_private(
        &file.metadata().map_err(io_error(path))?,
        &seen,
        path,
        false,
    )?;
    Ok(Some(file.into_std()))
}

/// Checks what `symlink_metadata` saw: the expected type, and no symlink.
fn check_type(seen: &Metadata, path: &Path, dir: bool) -> Result<(), StoreError> {
    let expected = if dir { "directory" } else { "file" };
    if seen.file_type().is_symlink() {
        return Err(StoreError::Symlink {
            path: path.to_owned(),
            expected,
        });
    }
    if (dir && !seen.is_dir()) || (!dir && !seen.is_file()) {
        return Err(StoreError::WrongType {
            path: path.to_owned(),
            expected,
        });
    }
    Ok(())
}

/// Checks what was actually opened: the same object that was inspected (no
/// swap in between), owned by us and closed to group and others.
#[cfg(unix)]
fn check_private(
    opened: &Metadata,
    seen: &Metadata,
    path: &Path,
    dir: bool,
) -> Result<(), StoreError> {
    if (opened.dev(), opened.ino()) != (seen.dev(), seen.ino()) {
        let source = io::Error::other("it was replaced while being opened");
        return Err(io_error(path)(source));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if opened.uid() != euid {
        return Err(StoreError::Owner {
            path: path.to_owned(),
            uid: opened.uid(),
        });
    }
    let mode = opened.mode() & 0o7777;
    if mode & 0o077 != 0 {
        let want = if dir { "700" } else { "600" };
        return Err(StoreError::Permissions {
            path: path.to_owned(),
            mode,
            fix: format!("chmod {want} {}", path.display()),
        });
    }
    Ok(())
}

/// No modes or owners to check off Unix (see the module docs).
#[cfg(not(unix))]
fn check_private(_: &Metadata, _: &Metadata, _: &Path, _: bool) -> Result<(), StoreError> {
    Ok(())
}

/// Takes `file`'s exclusive lock within `timeout` ([`crate::file_lock`]);
/// `holder` says who is presumably holding it when we give up.
fn lock_within(
    file: &std::fs::File,
    path: &Path,
    timeout: Duration,
    holder: &'static str,
) -> Result<(), StoreError> {
    crate::file_lock::lock_within(file, timeout).map_err(|e| match e.kind() {
        io::ErrorKind::TimedOut => StoreError::LockTimeout {
            path: path.to_owned(),
            waited: timeout,
            holder,
        },
        _ => io_error(path)(e),
    })
}

// The tests use Unix modes and symlinks.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::test_fs::{chmod, mode, names};
    use serde_json::json;

    /// A file vault with credentials for "a" already saved.
    async fn seeded() -> (tempfile::TempDir, Vault, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::File, tmp.path().join("mcpw"));
        vault.save("a", &json!({"token": "A"})).await.unwrap();
        let file = vault.file_dir().join(FILE_NAME);
        (tmp, vault, file)
    }

    #[tokio::test]
    async fn file_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::File, tmp.path().join("mcpw"));
        assert_eq!(vault.load("a").await.unwrap(), None);
        vault.save("a", &json!({"token": "A"})).await.unwrap();
        vault.save("b", &json!({"token": "B"})).await.unwrap();
        assert_eq!(vault.load("a").await.unwrap(), Some(json!({"token": "A"})));
        assert_eq!(vault.load("b").await.unwrap(), Some(json!({"token": "B"})));
        vault.clear("a").await.unwrap();
        vault.clear("a").await.unwrap();
        assert_eq!(vault.load("a").await.unwrap(), None);
        assert_eq!(vault.load("b").await.unwrap(), Some(json!({"token": "B"})));

        let dir = vault.file_dir();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(FILE_NAME)), 0o600);
        assert_eq!(mode(&dir.join(STORE_LOCK)), 0o600);
        assert_eq!(names(&dir), [STORE_LOCK, FILE_NAME]);
    }

    #[tokio::test]
    async fn wider_file_mode_is_refused() {
        let (_tmp, vault, file) = seeded().await;
        chmod(&file, 0o644);
        let before = std::fs::read(&file).unwrap();
        let load = vault.load("a").await.unwrap_err().to_string();
        let save = vault.save("b", &json!(1)).await.unwrap_err().to_string();
        for msg in [load, save] {
            assert!(msg.contains(&file.display().to_string()), "{msg}");
            assert!(msg.contains("chmod 600") && msg.contains("0644"), "{msg}");
        }
        assert_eq!(std::fs::read(&file).unwrap(), before);
        assert_eq!(mode(&file), 0o644);
    }

    #[tokio::test]
    async fn wider_dir_mode_is_refused() {
        let (_tmp, vault, file) = seeded().await;
        let dir = vault.file_dir();
        chmod(&dir, 0o755);
        let before = std::fs::read(&file).unwrap();
        let load = vault.load("a").await.unwrap_err().to_string();
        let save = vault.save("b", &json!(1)).await.unwrap_err().to_string();
        for msg in [load, save] {
            assert!(msg.contains(&dir.display().to_string()), "{msg}");
            assert!(msg.contains("chmod 700") && msg.contains("0755"), "{msg}");
        }
        assert_eq!(std::fs::read(&file).unwrap(), before);
        assert_eq!(mode(&dir), 0o755);
    }

    #[tokio::test]
    async fn symlinked_dir_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        chmod(&target, 0o700);
        let config = tmp.path().join("mcpw");
        std::fs::create_dir(&config).unwrap();
        std::os::unix::fs::symlink(&target, config.join(DIR_NAME)).unwrap();
        let vault = Vault::new(StoreKind::File, &config);
        for err in [
            vault.save("a", &json!(1)).await.unwrap_err(),
            vault.load("a").await.unwrap_err(),
            vault
                .acquire_refresh_lock("a", Duration::ZERO)
                .await
                .unwrap_err(),
        ] {
            assert!(matches!(err, StoreError::Symlink { .. }), "{err}");
            assert!(
                err.to_string()
                    .contains(&vault.file_dir().display().to_string())
            );
        }
        assert!(names(&target).is_empty());
    }

    #[tokio::test]
    async fn symlinked_file_is_refused() {
        let (tmp, vault, file) = seeded().await;
        let target = tmp.path().join("target.json");
        std::fs::write(&target, "{\"x\": 1}").unwrap();
        chmod(&target, 0o600);
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(&target, &file).unwrap();
        for err in [
            vault.save("b", &json!(1)).await.unwrap_err(),
            vault.load("a").await.unwrap_err(),
            vault.clear("a").await.unwrap_err(),
        ] {
            assert!(matches!(err, StoreError::Symlink { .. }), "{err}");
            assert!(err.to_string().contains(&file.display().to_string()));
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "{\"x\": 1}");
        assert!(
            std::fs::symlink_metadata(&file)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[tokio::test]
    async fn corrupt_file_is_refused_and_kept() {
        let (_tmp, vault, file) = seeded().await;
        std::fs::write(&file, "not json {").unwrap();
        for err in [
            vault.load("a").await.unwrap_err(),
            vault.save("b", &json!(1)).await.unwrap_err(),
        ] {
            assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
            assert!(err.to_string().contains(&file.display().to_string()));
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "not json {");
    }

    #[tokio::test]
    async fn refresh_lock_excludes_same_key_only() {
        fn send_static<T: Send + 'static>(_: &T) {}
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::Keyring, tmp.path().join("mcpw"));
        let first = vault
            .acquire_refresh_lock("k", Duration::from_secs(1))
            .await
            .unwrap();
        send_static(&first);
        let start = std::time::Instant::now();
        let err = vault
            .acquire_refresh_lock("k", Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(start.elapsed() >= Duration::from_millis(200));
        assert!(matches!(err, StoreError::LockTimeout { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("another mcpw process is refreshing"),
            "{err}"
        );
        let other = vault
            .acquire_refresh_lock("other", Duration::ZERO)
            .await
            .unwrap();
        drop(first);
        let again = vault
            .acquire_refresh_lock("k", Duration::ZERO)
            .await
            .unwrap();
        drop((other, again));
        let locks = vault.file_dir().join(LOCKS_DIR);
        assert_eq!(mode(&locks), 0o700);
        assert_eq!(mode(&locks.join(refresh_lock_name("k"))), 0o600);
        assert_eq!(refresh_lock_name("k").len(), 16 + ".lock".len());
    }

    #[tokio::test]
    async fn keyring_failure_names_the_file_store() {
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::Keyring, tmp.path().join("mcpw"));
        let key = format!("mcpw-store-test-{}", std::process::id());
        match vault.save(&key, &json!({"token": "secret-value"})).await {
            // A working keyring on this machine: clean up after ourselves.
            Ok(()) => vault.clear(&key).await.unwrap(),
            Err(err) => {
                let msg = err.to_string();
                assert!(
                    matches!(err, StoreError::KeyringUnavailable { .. }),
                    "{msg}"
                );
                assert!(msg.contains("\"credentialStore\": \"file\""), "{msg}");
                assert!(
                    msg.contains(&vault.file_dir().display().to_string()),
                    "{msg}"
                );
                assert!(!msg.contains("secret-value"), "{msg}");
            }
        }
        // Failing closed never falls back to the file store.
        assert!(!vault.file_dir().exists());
    }

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
