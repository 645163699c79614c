//! Each person's own logins in the OS keyring: one entry per login, named
//! by a digest of (server URL, owner) so that its name says nothing of
//! whose it is, and an index entry (no secret in it) listing the logins,
//! since a keyring cannot be listed. The index is rewritten under the file
//! store's lock, so that two processes never drop each other's entries.

use super::{entry, error, load as load_entry};
use crate::auth::store::StoreError;
use crate::auth::store::file::{locked, store_dir};
use crate::auth::store::person::{Person, PersonLogin};
use ::keyring::Error;
use serde_json::Value;
use std::path::Path;

/// The index entry.
const INDEX: &str = "people";

/// The keyring entry of `person`'s login.
fn entry_name(person: &Person) -> String {
    format!("person:{}", person.digest())
}

/// `person`'s record, if any.
pub(in crate::auth::store) fn load(
    config_dir: &Path,
    person: &Person,
) -> Result<Option<Value>, StoreError> {
    load_entry(&entry_name(person), &store_dir(config_dir))
}

/// Keeps `record` as `person`'s, and lists it in the index.
pub(in crate::auth::store) fn save(
    config_dir: &Path,
    person: &Person,
    record: &Value,
) -> Result<(), StoreError> {
    let file_dir = store_dir(config_dir);
    let key = entry_name(person);
    entry(&key, &file_dir)?
        .set_password(&record.to_string())
        .map_err(|e| error(e, &key, &file_dir))?;
    let login = PersonLogin::of(person, record);
    update_index(config_dir, |index| {
        if index.contains(&login) {
            return false;
        }
        index.retain(|l| (&l.url, &l.owner) != (&login.url, &login.owner));
        index.push(login);
        true
    })
}

/// Forgets `person`'s record; whether there was one.
pub(in crate::auth::store) fn clear(
    config_dir: &Path,
    person: &Person,
) -> Result<bool, StoreError> {
    let held = delete(config_dir, person)?;
    update_index(config_dir, |index| {
        drop_logins(index, |l| l.url == person.url && l.owner == person.owner) > 0
    })?;
    Ok(held)
}

/// Every login the index lists.
pub(in crate::auth::store) fn list(config_dir: &Path) -> Result<Vec<PersonLogin>, StoreError> {
    read_index(config_dir)
}

/// Forgets every login of `owner` the index lists; how many there were.
pub(in crate::auth::store) fn forget(config_dir: &Path, owner: &str) -> Result<usize, StoreError> {
    let mut forgotten = 0;
    update_index(config_dir, |index| {
        let theirs: Vec<PersonLogin> = index.iter().filter(|l| l.owner == owner).cloned().collect();
        for login in &theirs {
            // An entry already gone is forgotten all the same; one the
            // keyring refuses to delete stays listed, to be tried again.
            match delete(config_dir, &Person::new(&login.url, &login.owner)) {
                Ok(_) => forgotten += drop_logins(index, |l| l == login),
                Err(e) => tracing::warn!("{e}"),
            }
        }
        forgotten > 0
    })?;
    Ok(forgotten)
}

/// Deletes `person`'s entry; whether there was one.
fn delete(config_dir: &Path, person: &Person) -> Result<bool, StoreError> {
    let file_dir = store_dir(config_dir);
    let key = entry_name(person);
    match entry(&key, &file_dir)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(Error::NoEntry) => Ok(false),
        Err(e) => Err(error(e, &key, &file_dir)),
    }
}

/// Removes the logins `which` picks from `index`; how many.
fn drop_logins(index: &mut Vec<PersonLogin>, which: impl Fn(&PersonLogin) -> bool) -> usize {
    let before = index.len();
    index.retain(|l| !which(l));
    before - index.len()
}

fn read_index(config_dir: &Path) -> Result<Vec<PersonLogin>, StoreError> {
    let Some(listed) = load_entry(INDEX, &store_dir(config_dir))? else {
        return Ok(Vec::new());
    };
    Ok(parse_index(&listed))
}

/// The logins an index entry lists (entries it cannot read are left out).
fn parse_index(listed: &Value) -> Vec<PersonLogin> {
    let text = |v: &Value, k: &str| v[k].as_str().map(str::to_string);
    listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| {
            Some(PersonLogin {
                url: text(v, "url")?,
                owner: text(v, "owner")?,
                name: text(v, "name"),
            })
        })
        .collect()
}

/// Reads the index, lets `change` edit it, and writes it back if it says
/// it changed: all under the store lock.
fn update_index(
    config_dir: &Path,
    change: impl FnOnce(&mut Vec<PersonLogin>) -> bool,
) -> Result<(), StoreError> {
    locked(config_dir, || {
        let mut index = read_index(config_dir)?;
        if !change(&mut index) {
            return Ok(());
        }
        let file_dir = store_dir(config_dir);
        let entry = entry(INDEX, &file_dir)?;
        let written = match index.is_empty() {
            true => match entry.delete_credential() {
                Ok(()) | Err(Error::NoEntry) => Ok(()),
                Err(e) => Err(e),
            },
            false => entry.set_password(&serde_json::to_string(&index).unwrap_or_default()),
        };
        written.map_err(|e| error(e, INDEX, &file_dir))
    })?
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The index holds what a listing needs and nothing else; it reads
    /// back what was written, and dropping one person's logins leaves the
    /// others'.
    #[test]
    fn the_index_lists_logins_without_secrets() {
        let record =
            json!({"name": "Alice", "credentials": {"token_response": {"access_token": "tok-1"}}});
        let alice = PersonLogin::of(&Person::new("https://s/mcp", "token:alice"), &record);
        let bob = PersonLogin::of(&Person::new("https://s/mcp", "token:bob"), &json!({}));
        let mut index = vec![alice.clone(), bob.clone()];
        let text = serde_json::to_string(&index).unwrap();
        assert!(!text.contains("tok-1"), "{text}");
        assert_eq!(parse_index(&serde_json::from_str(&text).unwrap()), index);
        assert_eq!(drop_logins(&mut index, |l| l.owner == "token:alice"), 1);
        assert_eq!(index, [bob]);
        assert_eq!(parse_index(&json!({"not": "a list"})), []);
        let name = entry_name(&Person::new("https://s/mcp", "token:alice"));
        assert!(
            name.starts_with("person:") && !name.contains("alice"),
            "{name}"
        );
    }
}
