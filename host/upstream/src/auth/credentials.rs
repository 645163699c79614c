//! One server's record in the vault: rmcp's credentials (the issuer inside;
//! rmcp drops credentials whose issuer is not the server's current one) and
//! the authorization server's metadata, under the server's URL.

use super::store::{StoreError, Vault};
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
    key: String,
}

impl ServerCredentials {
    /// The credentials kept for `url` in `vault`.
    pub fn new(vault: Vault, url: &str) -> Self {
        ServerCredentials {
            vault,
            key: url.to_string(),
        }
    }

    /// The credentials one person (`owner`, a principal's key such as
    /// `oauth:<issuer>#sub:<sub>` or `token:<name>`) holds for `url`, apart
    /// from the server's shared login and from every other person's.
    pub fn person(vault: Vault, url: &str, owner: &str) -> Self {
        ServerCredentials {
            vault,
            key: format!("person\u{1f}{owner}\u{1f}{url}"),
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
        Ok(self.vault.load(&self.key).await?.unwrap_or_default())
    }

    async fn update(&self, field: &str, value: serde_json::Value) -> Result<(), StoreError> {
        let mut record = self.record().await?;
        if !record.is_object() {
            record = serde_json::json!({});
        }
        record[field] = value;
        self.vault.save(&self.key, &record).await
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

    /// Forgets everything about this server.
    pub async fn forget(&self) -> Result<(), StoreError> {
        self.vault.clear(&self.key).await
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
            .acquire_refresh_lock(&self.key, REFRESH_WAIT)
            .await
            .map_err(store_error)?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}
