//! Each person's own logins: one record per (server URL, owner), apart from
//! the servers' shared logins, in whichever backend the vault has, and
//! listable there, so that a person's logins can be shown and forgotten
//! together. The record is the same JSON document as a shared login's, with
//! `url` and `owner` added, so that whoever opens it knows whose it is.

use super::person::{Person, PersonLogin};
use super::{Backend, StoreError, Vault, blocking, file, keyring, refused};
use serde_json::Value;

impl Vault {
    /// `person`'s record, or `None` if they hold none.
    pub async fn load_person(&self, person: &Person) -> Result<Option<Value>, StoreError> {
        let (person, config_dir) = (person.clone(), self.config_dir.clone());
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.load_person(&person).await,
            Backend::Keyring => blocking(move || keyring::people::load(&config_dir, &person)).await,
            Backend::File => blocking(move || file::people::load(&config_dir, &person)).await,
        }
    }

    /// Keeps `record` as `person`'s, replacing what was there.
    pub async fn save_person(&self, person: &Person, record: &Value) -> Result<(), StoreError> {
        let record = person.stamped(record);
        let (person, config_dir) = (person.clone(), self.config_dir.clone());
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.save_person(&person, &record).await,
            Backend::Keyring => {
                blocking(move || keyring::people::save(&config_dir, &person, &record)).await
            }
            Backend::File => {
                blocking(move || file::people::save(&config_dir, &person, record)).await
            }
        }
    }

    /// Forgets `owner`'s login to the server at `url`; whether one was held.
    pub async fn clear_person(&self, url: &str, owner: &str) -> Result<bool, StoreError> {
        let (person, config_dir) = (Person::new(url, owner), self.config_dir.clone());
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.clear_person(&person).await,
            Backend::Keyring => {
                blocking(move || keyring::people::clear(&config_dir, &person)).await
            }
            Backend::File => blocking(move || file::people::clear(&config_dir, &person)).await,
        }
    }

    /// Every person's login held, on every server (never a secret).
    pub async fn people(&self) -> Result<Vec<PersonLogin>, StoreError> {
        let config_dir = self.config_dir.clone();
        let mut people = match &self.backend {
            Backend::Refused { why, .. } => return Err(refused(why)),
            Backend::Shared { vault, .. } => vault.people().await?,
            Backend::Keyring => blocking(move || keyring::people::list(&config_dir)).await?,
            Backend::File => blocking(move || file::people::list(&config_dir)).await?,
        };
        people.sort_by(|a, b| (&a.owner, &a.url).cmp(&(&b.owner, &b.url)));
        Ok(people)
    }

    /// Forgets every login `owner` holds, on every server; how many there were.
    pub async fn forget_person(&self, owner: &str) -> Result<usize, StoreError> {
        // A sign-in of theirs under way cannot make a login after this.
        self.end_logins_under_way_of(owner).await?;
        let (owner, config_dir) = (owner.to_string(), self.config_dir.clone());
        match &self.backend {
            Backend::Refused { why, .. } => Err(refused(why)),
            Backend::Shared { vault, .. } => vault.forget_person(&owner).await,
            Backend::Keyring => {
                blocking(move || keyring::people::forget(&config_dir, &owner)).await
            }
            Backend::File => blocking(move || file::people::forget(&config_dir, &owner)).await,
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::auth::store::StoreKind;
    use mcpw_test_support::fs::mode;
    use serde_json::json;

    const ALICE: &str = "oauth:https://idp#sub:alice";
    const BOB: &str = "token:bob";
    const S: &str = "https://s/mcp";
    const T: &str = "https://t/mcp";

    /// A file vault with Alice's logins to S and T, Bob's to S, and S's
    /// shared login.
    async fn seeded() -> (tempfile::TempDir, Vault) {
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::File, tmp.path().join("mcpw"));
        assert_eq!(vault.people().await.unwrap(), []);
        for (url, owner, record) in [
            (S, ALICE, json!({"credentials": "A-s", "name": "Alice"})),
            (T, ALICE, json!({"credentials": "A-t"})),
            (S, BOB, json!({"credentials": "B-s"})),
        ] {
            let person = Person::new(url, owner);
            vault.save_person(&person, &record).await.unwrap();
        }
        vault
            .save(S, &json!({"credentials": "shared"}))
            .await
            .unwrap();
        (tmp, vault)
    }

    async fn credentials(vault: &Vault, url: &str, owner: &str) -> Option<Value> {
        let record = vault.load_person(&Person::new(url, owner)).await.unwrap();
        record.map(|r| r["credentials"].clone())
    }

    /// The file store: two people's logins to two servers, each apart, and
    /// a listing names them.
    #[tokio::test]
    async fn people_in_the_file_store_are_kept_apart() {
        let (_tmp, vault) = seeded().await;
        let alice = vault.load_person(&Person::new(S, ALICE)).await.unwrap();
        let alice = alice.unwrap();
        assert_eq!(alice["credentials"], "A-s");
        assert_eq!(
            (alice["url"].as_str(), alice["owner"].as_str()),
            (Some(S), Some(ALICE))
        );
        assert_eq!(credentials(&vault, S, BOB).await, Some(json!("B-s")));
        assert_eq!(credentials(&vault, T, BOB).await, None);
        let listed = vault.people().await.unwrap();
        let pairs: Vec<_> = listed
            .iter()
            .map(|p| (p.owner.as_str(), p.url.as_str()))
            .collect();
        assert_eq!(pairs, [(ALICE, S), (ALICE, T), (BOB, S)]);
        assert_eq!(listed[0].name.as_deref(), Some("Alice"));
        let file = vault.file_dir().join(file::people::FILE_NAME);
        assert_eq!(mode(&file), 0o600);
    }

    /// Forgetting one person leaves no trace of them, and the other's
    /// logins and the shared one whole.
    #[tokio::test]
    async fn forgetting_a_person_in_the_file_store_leaves_the_others() {
        let (_tmp, vault) = seeded().await;
        assert_eq!(vault.forget_person(ALICE).await.unwrap(), 2);
        assert_eq!(vault.forget_person(ALICE).await.unwrap(), 0);
        assert_eq!(credentials(&vault, S, ALICE).await, None);
        assert_eq!(credentials(&vault, S, BOB).await, Some(json!("B-s")));
        let shared = vault.load(S).await.unwrap();
        assert_eq!(shared, Some(json!({"credentials": "shared"})));
        let file = vault.file_dir().join(file::people::FILE_NAME);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("alice") && !text.contains("A-"), "{text}");
        assert!(vault.clear_person(S, BOB).await.unwrap());
        assert!(!vault.clear_person(S, BOB).await.unwrap());
        assert_eq!(vault.people().await.unwrap(), []);
    }
}
