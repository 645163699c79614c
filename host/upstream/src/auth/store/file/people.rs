//! Each person's own logins in the file store: a file of their own beside
//! `credentials.json` (whose top level is the servers' shared logins, by
//! URL), under the same lock and the same rules (0600, written atomically).
//! It maps each owner to their logins by server URL, so that a listing reads
//! it whole and forgetting a person removes one entry.

use super::{StoreError, with_file};
use crate::auth::store::person::{Person, PersonLogin};
use serde_json::{Map, Value};
use std::path::Path;

/// The people's logins, inside the store's directory.
pub(in crate::auth::store) const FILE_NAME: &str = "people.json";

/// `person`'s record, if any.
pub(in crate::auth::store) fn load(
    config_dir: &Path,
    person: &Person,
) -> Result<Option<Value>, StoreError> {
    with_file(config_dir, FILE_NAME, false, |people| {
        let record = people
            .get(&person.owner)
            .and_then(|logins| logins.get(&person.url))
            .cloned();
        (record, false)
    })
}

/// Keeps `record` as `person`'s.
pub(in crate::auth::store) fn save(
    config_dir: &Path,
    person: &Person,
    record: Value,
) -> Result<(), StoreError> {
    with_file(config_dir, FILE_NAME, true, |people| {
        let logins = people
            .entry(person.owner.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !logins.is_object() {
            *logins = Value::Object(Map::new());
        }
        logins[&person.url] = record;
        ((), true)
    })
}

/// Forgets `person`'s record; whether there was one.
pub(in crate::auth::store) fn clear(
    config_dir: &Path,
    person: &Person,
) -> Result<bool, StoreError> {
    with_file(config_dir, FILE_NAME, false, |people| {
        let Some(Value::Object(logins)) = people.get_mut(&person.owner) else {
            return (false, false);
        };
        let held = logins.remove(&person.url).is_some();
        if logins.is_empty() {
            people.remove(&person.owner);
        }
        (held, held)
    })
}

/// Every login kept.
pub(in crate::auth::store) fn list(config_dir: &Path) -> Result<Vec<PersonLogin>, StoreError> {
    with_file(config_dir, FILE_NAME, false, |people| {
        let listed = people
            .iter()
            .filter_map(|(owner, logins)| Some((owner, logins.as_object()?)))
            .flat_map(|(owner, logins)| {
                logins
                    .iter()
                    .map(|(url, record)| PersonLogin::of(&Person::new(url, owner), record))
            })
            .collect();
        (listed, false)
    })
}

/// Forgets every login of `owner`; how many there were.
pub(in crate::auth::store) fn forget(config_dir: &Path, owner: &str) -> Result<usize, StoreError> {
    with_file(config_dir, FILE_NAME, false, |people| {
        let count = match people.remove(owner) {
            Some(Value::Object(logins)) => logins.len(),
            Some(_) => 1,
            None => return (0, false),
        };
        (count, true)
    })
}
