//! Credentials in the OS keyring: one entry per key, under the service
//! "mcpw", holding the credentials' JSON text; each person's own logins
//! beside them ([`people`]).
//!
//! An unreachable keyring fails closed: the error names the file store as
//! the alternative instead of silently using it. The file store's directory
//! (`file_dir`) is passed in for that message only.

pub(super) mod people;

use std::path::Path;

use ::keyring::{Entry, Error};
use serde_json::Value;

use super::StoreError;

/// The keyring service name every entry is filed under.
const SERVICE: &str = "mcpw";

/// The credentials stored under `key`, or `None` if there are none.
pub(super) fn load(key: &str, file_dir: &Path) -> Result<Option<Value>, StoreError> {
    match entry(key, file_dir)?.get_password() {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| StoreError::KeyringCorrupt {
                key: key.to_owned(),
                reason: e.to_string(),
            }),
        Err(Error::NoEntry) => Ok(None),
        Err(e) => Err(error(e, key, file_dir)),
    }
}

/// Stores `text` (the credentials' JSON) under `key`.
pub(super) fn save(key: &str, text: &str, file_dir: &Path) -> Result<(), StoreError> {
    entry(key, file_dir)?
        .set_password(text)
        .map_err(|e| error(e, key, file_dir))
}

/// Deletes the entry for `key`; succeeds if there was none.
pub(super) fn clear(key: &str, file_dir: &Path) -> Result<(), StoreError> {
    match entry(key, file_dir)?.delete_credential() {
        Ok(()) | Err(Error::NoEntry) => Ok(()),
        Err(e) => Err(error(e, key, file_dir)),
    }
}

fn entry(key: &str, file_dir: &Path) -> Result<Entry, StoreError> {
    Entry::new(SERVICE, key).map_err(|e| error(e, key, file_dir))
}

/// Maps a keyring error, failing closed: an unreachable keyring names the
/// file store as the alternative instead of silently using it.
fn error(e: Error, key: &str, file_dir: &Path) -> StoreError {
    match e {
        Error::PlatformFailure(_) | Error::NoStorageAccess(_) => StoreError::KeyringUnavailable {
            reason: e.to_string(),
            file_dir: file_dir.to_owned(),
        },
        // Its Display lists the matching credentials; keep those out of messages.
        Error::Ambiguous(_) => StoreError::Keyring {
            key: key.to_owned(),
            reason: "more than one keyring entry matches it".to_owned(),
        },
        e => StoreError::Keyring {
            key: key.to_owned(),
            reason: e.to_string(),
        },
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::super::{StoreError, StoreKind, Vault};
    use serde_json::json;

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
}
