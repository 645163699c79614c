//! A person's standing login at their identity provider: the refresh token
//! it gave the gateway's client when they signed in for cross-app access,
//! kept to renew their ID token with no sign-in (see [`super::renew`]).
//! Only the refresh token is kept (never an ID token or the provider's
//! access token), sealed like every person's login, under a key of the
//! issuer and the client that is no server's URL; renewals take a lock on
//! it, so that two never spend one refresh token.

use super::store::{Person, RefreshLock, StoreError, Vault};
use serde_json::{Value, json};
use std::time::Duration;

/// How long a renewal waits for another one of the same login.
const RENEWAL_WAIT: Duration = Duration::from_secs(30);

/// One person's login at one identity provider, as one client there.
pub(super) struct Identity<'a> {
    vault: &'a Vault,
    person: Person,
}

impl<'a> Identity<'a> {
    /// `owner`'s login at `issuer`, as the gateway's client `client_id`.
    pub(super) fn of(vault: &'a Vault, (issuer, client_id): (&str, &str), owner: &str) -> Self {
        // `oidc:` keeps it apart from every server's URL.
        let key = format!("oidc:{issuer}#{client_id}");
        Identity {
            vault,
            person: Person::new(&key, owner),
        }
    }

    /// The refresh token kept, if any.
    pub(super) async fn refresh_token(&self) -> Result<Option<String>, StoreError> {
        let record = self.vault.load_person(&self.person).await?;
        let token = record.and_then(|r| r["identity"]["refreshToken"].as_str().map(str::to_string));
        Ok(token)
    }

    /// Keeps `refresh_token` in place of any before.
    pub(super) async fn keep(&self, refresh_token: &str) -> Result<(), StoreError> {
        let record = json!({"identity": {"refreshToken": refresh_token}});
        self.vault.save_person(&self.person, &record).await
    }

    /// Drops the login, when it still holds `spent` (a renewal elsewhere
    /// may have kept a newer one meanwhile).
    pub(super) async fn drop_if(&self, spent: &str) -> Result<(), StoreError> {
        if self.refresh_token().await?.as_deref() == Some(spent) {
            self.vault
                .clear_person(&self.person.url, &self.person.owner)
                .await?;
        }
        Ok(())
    }

    /// Drops the login.
    pub(super) async fn forget(&self) -> Result<(), StoreError> {
        let (url, owner) = (&self.person.url, &self.person.owner);
        self.vault.clear_person(url, owner).await.map(|_| ())
    }

    /// The lock renewals of this login take, held until dropped.
    pub(super) async fn lock(&self) -> Result<RefreshLock, StoreError> {
        let key = format!("identity:{}", self.person.digest());
        self.vault.acquire_refresh_lock(&key, RENEWAL_WAIT).await
    }
}

/// The refresh token of a token `answer`, if it gave one.
pub(super) fn refresh_token_of(answer: &Value) -> Option<&str> {
    answer["refresh_token"].as_str().filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::store::StoreKind;

    /// A login is kept per issuer and client apart from servers' logins,
    /// replaced when rotated, and dropped only while it holds the token
    /// spent.
    #[tokio::test]
    async fn a_standing_login_is_dropped_only_while_it_holds_the_spent_token() {
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::File, tmp.path());
        let ada = "oauth:https://idp.example#sub:ada";
        let at = ("https://idp.example", "mcpw");
        let login = Identity::of(&vault, at, ada);
        let other_client = Identity::of(&vault, ("https://idp.example", "other"), ada);
        login.keep("rt-1").await.unwrap();
        assert_eq!(other_client.refresh_token().await.unwrap(), None);
        login.keep("rt-2").await.unwrap();
        login.drop_if("rt-1").await.unwrap();
        assert_eq!(
            login.refresh_token().await.unwrap().as_deref(),
            Some("rt-2")
        );
        login.drop_if("rt-2").await.unwrap();
        assert_eq!(login.refresh_token().await.unwrap(), None);
        assert_eq!(refresh_token_of(&json!({"refresh_token": ""})), None);
        assert_eq!(refresh_token_of(&json!({"refresh_token": "r"})), Some("r"));
    }
}
