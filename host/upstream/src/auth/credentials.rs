//! One server's record in the vault: rmcp's credentials (the issuer inside;
//! rmcp drops credentials whose issuer is not the server's current one) and
//! the authorization server's metadata, under the server's URL for its
//! shared login, or as one person's own login to it.

use super::store::{Person, StoreError, Vault};
use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use std::time::Duration;

/// How long a refresh waits for another mcpw process refreshing the same
/// credentials: about one token request, with room.
const REFRESH_WAIT: Duration = Duration::from_secs(45);

/// The credentials of the server at one URL.
#[derive(Clone)]
pub struct ServerCredentials {
    vault: Vault,
    whose: Whose,
}

/// Whose credentials they are.
#[derive(Clone)]
enum Whose {
    /// The server's shared login: the record under its URL.
    Shared(String),
    /// One person's own.
    Person(Person),
}

impl ServerCredentials {
    /// The credentials kept for `url` in `vault`.
    pub fn new(vault: Vault, url: &str) -> Self {
        ServerCredentials {
            vault,
            whose: Whose::Shared(url.to_string()),
        }
    }

    /// The credentials one person (`owner`, a principal's key such as
    /// `oauth:<issuer>#sub:<sub>` or `token:<name>`) holds for `url`, apart
    /// from the server's shared login and from every other person's.
    pub fn person(vault: Vault, url: &str, owner: &str) -> Self {
        ServerCredentials {
            vault,
            whose: Whose::Person(Person::new(url, owner)),
        }
    }

    /// The shared login's credentials for `url` when `owner` is none, else
    /// that person's.
    pub fn of(vault: Vault, url: &str, owner: Option<&str>) -> Self {
        match owner {
            Some(owner) => Self::person(vault, url, owner),
            None => Self::new(vault, url),
        }
    }

    async fn record(&self) -> Result<serde_json::Value, StoreError> {
        let record = match &self.whose {
            Whose::Shared(url) => self.vault.load(url).await?,
            Whose::Person(person) => self.vault.load_person(person).await?,
        };
        Ok(record.unwrap_or_default())
    }

    async fn keep(&self, record: &serde_json::Value) -> Result<(), StoreError> {
        match &self.whose {
            Whose::Shared(url) => self.vault.save(url, record).await,
            Whose::Person(person) => self.vault.save_person(person, record).await,
        }
    }

    async fn update(&self, field: &str, value: serde_json::Value) -> Result<(), StoreError> {
        let mut record = self.record().await?;
        if !record.is_object() {
            record = serde_json::json!({});
        }
        record[field] = value;
        self.keep(&record).await
    }

    /// The credentials stored, if any (a record that does not parse counts as none).
    pub async fn stored(&self) -> Result<Option<StoredCredentials>, StoreError> {
        Ok(self.read().await?.0)
    }

    /// The credentials and the authorization server's metadata (as discovered
    /// at the login), from one read of the record.
    pub async fn read(
        &self,
    ) -> Result<(Option<StoredCredentials>, Option<AuthorizationMetadata>), StoreError> {
        let mut record = self.record().await?;
        let credentials = serde_json::from_value(record["credentials"].take()).ok();
        let metadata = serde_json::from_value(record["metadata"].take()).ok();
        Ok((credentials, metadata))
    }

    /// Keeps the authorization server's metadata.
    pub async fn save_metadata(&self, metadata: &AuthorizationMetadata) -> Result<(), StoreError> {
        let value = serde_json::to_value(metadata).unwrap_or_default();
        self.update("metadata", value).await
    }

    /// Forgets everything about this server (for this person).
    pub async fn forget(&self) -> Result<(), StoreError> {
        match &self.whose {
            Whose::Shared(url) => self.vault.clear(url).await,
            Whose::Person(person) => self
                .vault
                .clear_person(&person.url, &person.owner)
                .await
                .map(drop),
        }
    }

    /// What the refresh lock is named after: the URL for the shared login,
    /// a digest of (URL, owner) for a person's, so that two people never
    /// wait on each other's refresh, and no lock says whose it is.
    fn lock_key(&self) -> String {
        match &self.whose {
            Whose::Shared(url) => url.clone(),
            Whose::Person(person) => format!("person:{}", person.digest()),
        }
    }
}

fn store_error(e: StoreError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.stored().await.map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let value = serde_json::to_value(&credentials)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        self.update("credentials", value).await.map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.update("credentials", serde_json::Value::Null)
            .await
            .map_err(store_error)
    }

    /// The authorization server refused the refresh token for good: the
    /// tokens go (the metadata stays), so that the next connection is told
    /// to log in, and the login registers afresh.
    async fn on_refresh_token_rejected(
        &self,
        rejected: &StoredCredentials,
    ) -> Result<(), AuthError> {
        let current = self.stored().await.map_err(store_error)?;
        // Only if nobody replaced them meanwhile.
        let same = current
            .is_some_and(|c| serde_json::to_value(&c).ok() == serde_json::to_value(rejected).ok());
        if same {
            self.update("credentials", serde_json::Value::Null)
                .await
                .map_err(store_error)?;
        }
        Ok(())
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let lock = self
            .vault
            .acquire_refresh_lock(&self.lock_key(), REFRESH_WAIT)
            .await
            .map_err(store_error)?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::auth::store::StoreKind;

    fn stored(token: &str) -> StoredCredentials {
        StoredCredentials::new("mcpw".into(), None, vec![token.into()], None)
    }

    /// The shared login and each person's are separate records: saving,
    /// clearing or forgetting one leaves the others; and a person's refresh
    /// lock is theirs alone.
    #[tokio::test]
    async fn each_persons_credentials_are_their_own() {
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::File, tmp.path().join("mcpw"));
        let url = "https://s/mcp";
        let shared = ServerCredentials::new(vault.clone(), url);
        let alice = ServerCredentials::person(vault.clone(), url, "token:alice");
        let bob = ServerCredentials::of(vault.clone(), url, Some("token:bob"));
        for (who, token) in [(&shared, "shared"), (&alice, "alice"), (&bob, "bob")] {
            CredentialStore::save(who, stored(token)).await.unwrap();
        }
        let scopes = |c: Option<StoredCredentials>| c.map(|c| c.granted_scopes);
        assert_eq!(
            scopes(alice.stored().await.unwrap()),
            Some(vec!["alice".into()])
        );
        assert_eq!(
            scopes(bob.stored().await.unwrap()),
            Some(vec!["bob".into()])
        );
        CredentialStore::clear(&alice).await.unwrap();
        assert_eq!(scopes(alice.stored().await.unwrap()), None);
        assert_eq!(
            scopes(bob.stored().await.unwrap()),
            Some(vec!["bob".into()])
        );
        bob.forget().await.unwrap();
        assert_eq!(scopes(bob.stored().await.unwrap()), None);
        assert_eq!(
            scopes(shared.stored().await.unwrap()),
            Some(vec!["shared".into()])
        );

        let held = alice.acquire_refresh_guard().await.unwrap();
        let wait = Duration::from_millis(100);
        let again = vault.acquire_refresh_lock(&alice.lock_key(), wait).await;
        assert!(again.is_err(), "the same person's refreshes take turns");
        let other = vault
            .acquire_refresh_lock(&bob.lock_key(), Duration::ZERO)
            .await;
        assert!(other.is_ok(), "another person's does not wait");
        let theirs = vault
            .acquire_refresh_lock(&shared.lock_key(), Duration::ZERO)
            .await;
        assert!(theirs.is_ok(), "nor does the shared login's");
        assert!(!alice.lock_key().contains("alice"));
        drop(held);
    }
}
