//! The file store: every key's credentials in one JSON object, in a private
//! file under mcpw's config directory.
//!
//! The file store trusts nothing it did not check: everything is opened
//! through directory handles (so a symlink cannot redirect a read or a write),
//! the directory must be 0700 and the file 0600 and both ours, and a wider mode
//! is refused rather than silently fixed, since it may mean the secrets
//! already leaked ([`private`]). Writes are atomic (temporary file, fsync,
//! rename) and serialized across processes by a lock file.
//!
//! The refresh locks live here too, one lock file per key, whichever local
//! store keeps the credentials: the keyring has no locks of its own.

pub(super) mod people;
mod private;

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use cap_std::fs::Dir;
use serde_json::{Map, Value};

use super::StoreError;
use private::{open_config_dir, open_private_dir, open_private_file};

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

/// The file store's directory for the config directory `config_dir`.
pub(super) fn store_dir(config_dir: &Path) -> PathBuf {
    config_dir.join(DIR_NAME)
}

/// The credentials stored under `key`, or `None` if there are none.
pub(super) fn load(config_dir: &Path, key: &str) -> Result<Option<Value>, StoreError> {
    with_file_store(config_dir, false, |map| (map.get(key).cloned(), false))
}

/// Stores `value` under `key`, replacing what was there.
pub(super) fn save(config_dir: &Path, key: String, value: Value) -> Result<(), StoreError> {
    with_file_store(config_dir, true, |map| {
        map.insert(key, value);
        ((), true)
    })
}

/// Forgets the credentials stored under `key`; succeeds if there were none.
pub(super) fn clear(config_dir: &Path, key: &str) -> Result<(), StoreError> {
    with_file_store(config_dir, false, |map| ((), map.remove(key).is_some()))
}

/// Takes the refresh lock file `name` (in [`LOCKS_DIR`]) within `timeout`;
/// closing the file releases it.
pub(super) fn refresh_lock(
    config_dir: &Path,
    name: &str,
    timeout: Duration,
) -> Result<std::fs::File, StoreError> {
    let dir_path = config_dir.join(DIR_NAME);
    let Some(creds) = open_private_dir(&open_config_dir(config_dir, true)?, &dir_path, true)?
    else {
        unreachable!("created on demand")
    };
    let locks_path = dir_path.join(LOCKS_DIR);
    let Some(locks) = open_private_dir(&creds, &locks_path, true)? else {
        unreachable!("created on demand")
    };
    let path = locks_path.join(name);
    let file = open_private_file(&locks, &path, true)?.expect("created on demand");
    lock_within(
        &file,
        &path,
        timeout,
        "another mcpw process is refreshing these credentials",
    )?;
    Ok(file)
}

/// Runs `f` on the stored map under the store lock, writing the map back if
/// `f` says it changed. Without `create`, a missing store is an empty map and
/// nothing is created.
fn with_file_store<T>(
    config_dir: &Path,
    create: bool,
    f: impl FnOnce(&mut Map<String, Value>) -> (T, bool),
) -> Result<T, StoreError> {
    with_file(config_dir, FILE_NAME, create, f)
}

/// [`with_file_store`] for the file `name` of the store's directory.
fn with_file<T>(
    config_dir: &Path,
    name: &str,
    create: bool,
    f: impl FnOnce(&mut Map<String, Value>) -> (T, bool),
) -> Result<T, StoreError> {
    let Some(held) = store_lock(config_dir, create)? else {
        return Ok(f(&mut Map::new()).0);
    };
    let file_path = held.dir_path.join(name);
    let mut map = match open_private_file(&held.creds, &file_path, false)? {
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
        write_atomically(&held.creds, &held.dir_path, name, &Value::Object(map))?;
    }
    drop(held);
    Ok(out)
}

/// The store's directory, opened, while its lock is held (released on drop).
struct StoreLock {
    creds: Dir,
    dir_path: PathBuf,
    _lock: std::fs::File,
}

/// Takes the store lock, which serializes every read-modify-write of the
/// store's files (and of the keyring's index of people) across processes.
/// Without `create`, `None` when there is no store yet.
fn store_lock(config_dir: &Path, create: bool) -> Result<Option<StoreLock>, StoreError> {
    let dir_path = config_dir.join(DIR_NAME);
    if !create && !config_dir.exists() {
        return Ok(None);
    }
    let Some(creds) = open_private_dir(&open_config_dir(config_dir, create)?, &dir_path, create)?
    else {
        return Ok(None);
    };
    let lock_path = dir_path.join(STORE_LOCK);
    let lock = open_private_file(&creds, &lock_path, true)?.expect("created on demand");
    lock_within(
        &lock,
        &lock_path,
        STORE_LOCK_TIMEOUT,
        "another mcpw process is still using the credential store",
    )?;
    Ok(Some(StoreLock {
        creds,
        dir_path,
        _lock: lock,
    }))
}

/// Runs `f` while holding the store lock (created if need be).
pub(super) fn locked<T>(config_dir: &Path, f: impl FnOnce() -> T) -> Result<T, StoreError> {
    let held = store_lock(config_dir, true)?;
    let out = f();
    drop(held);
    Ok(out)
}

/// The credentials file at `path` does not parse, because of `reason`.
fn corrupt(path: &Path, reason: String) -> StoreError {
    StoreError::Corrupt {
        path: path.to_owned(),
        reason,
    }
}

/// Replaces the store's file `name` with `value` (see [`crate::state_file`]):
/// a crash leaves the old file or the new one, owner-only, and nothing else.
fn write_atomically(
    creds: &Dir,
    dir_path: &Path,
    name: &str,
    value: &Value,
) -> Result<(), StoreError> {
    let text = serde_json::to_vec_pretty(value).expect("a JSON value always serializes");
    crate::state_file::replace(creds, name, crate::state_file::Access::Private, |w| {
        w.write_all(&text)
    })
    .map_err(io_error(&dir_path.join(name)))
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

/// Maps an I/O error on `path`.
fn io_error(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

// The tests use Unix modes and symlinks.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::auth::store::{StoreKind, Vault, refresh_lock_name};
    use mcpw_test_support::fs::{chmod, mode, names};
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
}
