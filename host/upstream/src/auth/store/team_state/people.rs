//! Each person's own logins in shared state, in a hash of their own
//! (`mcpw:credentials:people`), where Redis learns how many logins there
//! are, not whose nor what:
//! - a field is the hex HMAC-SHA256 of (server URL, owner) under a key
//!   derived from the team's secret, so the owner is never in clear;
//! - a value is two sealed parts: a header (URL, owner, name), sealed under
//!   a key of the listing and bound to its field, which a listing opens to
//!   tell whose a login is; and the record, sealed under a key HKDF derives
//!   for that (URL, owner) alone and bound to the pair.
//!
//! A value moved to another field, server or person does not open.

use super::seal::{PeopleKeys, not_ours};
use super::{SharedVault, unreachable};
use crate::auth::store::StoreError;
use crate::auth::store::person::{Person, PersonLogin};
use crate::team_state::key;
use serde_json::Value;

/// Fields asked for per HSCAN round trip.
const SCAN_COUNT: usize = 200;

fn hash_key() -> String {
    key(&["credentials", "people"])
}

impl SharedVault {
    fn keys(&self) -> &PeopleKeys {
        self.sealer.people()
    }

    fn failed(&self, e: impl std::fmt::Display) -> StoreError {
        unreachable(&self.state, e)
    }

    pub(in crate::auth::store) async fn load_person(
        &self,
        person: &Person,
    ) -> Result<Option<Value>, StoreError> {
        let field = self.keys().field(person);
        let sealed = self
            .state
            .hget(hash_key(), &field)
            .await
            .map_err(|e| self.failed(e))?;
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        self.keys().open(person, &sealed).map(Some).map_err(|why| {
            StoreError::Shared(format!(
                "a person's credentials for \"{}\" in {}: {why}",
                person.url,
                self.state.location()
            ))
        })
    }

    pub(in crate::auth::store) async fn save_person(
        &self,
        person: &Person,
        record: &Value,
    ) -> Result<(), StoreError> {
        let (field, value) = self.keys().seal(person, record);
        let mut cmd = redis::cmd("HSET");
        cmd.arg(hash_key()).arg(field).arg(value);
        self.state.command(cmd).await.map_err(|e| self.failed(e))
    }

    pub(in crate::auth::store) async fn clear_person(
        &self,
        person: &Person,
    ) -> Result<bool, StoreError> {
        let mut cmd = redis::cmd("HDEL");
        cmd.arg(hash_key()).arg(self.keys().field(person));
        let removed: i64 = self.state.command(cmd).await.map_err(|e| self.failed(e))?;
        Ok(removed > 0)
    }

    /// Every login whose header opens, with its field. Those that do not
    /// (sealed with another key, or altered) are left as they are, and
    /// counted in a warning.
    async fn listed(&self) -> Result<Vec<(String, PersonLogin)>, StoreError> {
        let mut cursor = "0".to_string();
        let (mut listed, mut unopened) = (Vec::new(), 0usize);
        loop {
            let mut scan = redis::cmd("HSCAN");
            scan.arg(hash_key())
                .arg(&cursor)
                .arg("COUNT")
                .arg(SCAN_COUNT);
            let (next, pairs): (String, Vec<String>) =
                self.state.command(scan).await.map_err(|e| self.failed(e))?;
            for pair in pairs.chunks_exact(2) {
                match self.keys().open_header(&pair[0], &pair[1]) {
                    Some(login) => listed.push((pair[0].clone(), login)),
                    None => unopened += 1,
                }
            }
            if next == "0" {
                break;
            }
            cursor = next;
        }
        if unopened > 0 {
            tracing::warn!(
                "{unopened} person's login(s) in {} {}; they are left as they are",
                self.state.location(),
                not_ours()
            );
        }
        Ok(listed)
    }

    pub(in crate::auth::store) async fn people(&self) -> Result<Vec<PersonLogin>, StoreError> {
        Ok(self.listed().await?.into_iter().map(|(_, l)| l).collect())
    }

    pub(in crate::auth::store) async fn forget_person(
        &self,
        owner: &str,
    ) -> Result<usize, StoreError> {
        let fields: Vec<String> = self
            .listed()
            .await?
            .into_iter()
            .filter(|(_, login)| login.owner == owner)
            .map(|(field, _)| field)
            .collect();
        if fields.is_empty() {
            return Ok(0);
        }
        let mut cmd = redis::cmd("HDEL");
        cmd.arg(hash_key()).arg(fields);
        let removed: i64 = self.state.command(cmd).await.map_err(|e| self.failed(e))?;
        Ok(removed.max(0) as usize)
    }
}
