//! Each person's own logins to servers: an operator logs in for a principal
//! (how a machine such as `token:ci` gets a login of its own), logs them out,
//! forgets all their logins, and sees who holds what; and at `serve` start
//! the logins of principals the config no longer admits are forgotten.

use super::{Host, HostError, LoginOptions};
use crate::auth::{self, AuthFailure, LoggedIn, Owner, Status};
use crate::config::Transport;

/// One person's own login to a server, as `mcpw auth status` shows it
/// (never a secret).
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersonStatus {
    /// The principal's key.
    pub owner: String,
    /// What the person is called, when the login was given a name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What is held.
    #[serde(flatten)]
    pub status: Status,
}

impl Host {
    /// Logs in to `server` for `owner` (a principal's key), as that
    /// principal's own login beside the server's shared one. The person at
    /// the browser is told on stderr what to do. The server's own connection
    /// is left as it is: it is the shared login's.
    pub async fn login_for(
        &self,
        server: &str,
        owner: &str,
        options: LoginOptions,
    ) -> Result<LoggedIn, HostError> {
        Owner::parse(owner)?;
        let (config, _) = self.oauth_server(server)?;
        let grant = config.oauth.grant_type;
        if grant.unattended() {
            let why = match config.per_person() {
                // The person's ID token is got by signing them in, in
                // their own browser, at the link their call is answered with.
                true => "each person's login comes from their own ID token: they sign in at the link the gateway answers their call with".to_string(),
                false => format!(
                    "it logs in by itself with {}, as no one: a principal's own login is made in a browser",
                    grant.describe()
                ),
            };
            return Err(Self::auth_error(server)(AuthFailure::Config(why)));
        }
        // No probe for the server's challenge: a probe sends the shared
        // login, and the login finds the server's metadata without it.
        let challenge = options.challenge.clone();
        self.run_login(server, Some(owner), challenge, &options)
            .await
    }

    /// Forgets `owner`'s own login to `server`; whether one was held. For
    /// cross-app access, their standing login at the identity provider
    /// goes too: it would make a new one at their next call.
    pub async fn logout_for(&self, server: &str, owner: &str) -> Result<bool, HostError> {
        Owner::parse(owner)?;
        let (config, url) = self.oauth_server(server)?;
        let vault = self.manager.vault();
        if config.signs_in_for_id_tokens() {
            let login = auth::CrossAppLogin {
                server,
                url: &url,
                oauth: &config.oauth,
                vault: vault.clone(),
                owner,
            };
            login.sign_out().await.map_err(Self::auth_error(server))?;
        }
        Ok(vault.clear_person(&url, owner).await?)
    }

    /// Forgets every login `owner` holds, on every server, configured or
    /// not; how many there were.
    pub async fn forget_principal(&self, owner: &str) -> Result<usize, HostError> {
        Owner::parse(owner)?;
        Ok(self.manager.vault().forget_person(owner).await?)
    }

    /// Each person's own login to each configured server mcpw logs in to
    /// (only `owner`'s, when given), by server name, with what it holds.
    pub async fn people_status(
        &self,
        owner: Option<&str>,
    ) -> Result<Vec<(String, PersonStatus)>, HostError> {
        if let Some(owner) = owner {
            Owner::parse(owner)?;
        }
        let vault = self.manager.vault();
        let people = vault.people().await?;
        let config = self.config();
        let mut out = Vec::new();
        for server in config.servers.iter().filter(|s| s.config.oauth_applies()) {
            let Transport::Http { url, .. } = &server.config.transport else {
                continue;
            };
            let theirs = people
                .iter()
                .filter(|l| &l.url == url && owner.is_none_or(|o| o == l.owner));
            for login in theirs {
                let status = auth::status(vault, url, Some(&login.owner))
                    .await
                    .map_err(Self::auth_error(&server.name))?;
                let person = PersonStatus {
                    owner: login.owner.clone(),
                    name: login.name.clone(),
                    status,
                };
                out.push((server.name.clone(), person));
            }
        }
        Ok(out)
    }

    /// Forgets the logins of principals the config no longer admits: a
    /// `token:<name>` whose name is not among `tokens` (the clients this
    /// process admits by token), an `oauth:<issuer>#…` whose issuer is not
    /// in `serve.oauth.issuers`. Each principal forgotten is named in one
    /// log line (its token's name or its issuer, never a secret). Nothing
    /// is done while the credential store cannot be read.
    pub async fn prune_people(&self, tokens: &[&str]) {
        let vault = self.manager.vault();
        let people = match vault.people().await {
            Ok(people) => people,
            Err(e) => {
                tracing::debug!("people's logins not checked: {e}");
                return;
            }
        };
        let config = self.config();
        let issuers: Vec<&str> = config
            .serve
            .oauth
            .iter()
            .flat_map(|o| o.issuers.iter().map(|i| i.issuer.as_str()))
            .collect();
        let mut owners: Vec<&str> = people.iter().map(|l| l.owner.as_str()).collect();
        owners.dedup();
        for owner in owners {
            let Some(whose) = gone(owner, tokens, &issuers) else {
                continue;
            };
            match vault.forget_person(owner).await {
                Ok(n) => tracing::warn!("forgot {n} login(s) of {whose}"),
                Err(e) => tracing::warn!("cannot forget the logins of {whose}: {e}"),
            }
        }
    }
}

/// Whose logins `owner`'s are, when its principal is no longer admitted
/// (a token not among `tokens`, an issuer not among `issuers`); `None`
/// while it is, and for a key of no known form (left for a person to judge).
fn gone(owner: &str, tokens: &[&str], issuers: &[&str]) -> Option<String> {
    match Owner::parse(owner).ok()? {
        Owner::Token(name) if !tokens.contains(&name) => {
            Some(format!("token \"{name}\", no longer in serve.tokens"))
        }
        Owner::OAuth { issuer } if !issuers.contains(&issuer) => Some(format!(
            "a principal of issuer {issuer}, no longer in serve.oauth.issuers"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_principals_the_config_dropped_are_gone() {
        let (tokens, issuers) = (&["ci", "(--token)"][..], &["https://idp"][..]);
        assert_eq!(gone("token:ci", tokens, issuers), None);
        assert_eq!(gone("token:(--token)", tokens, issuers), None);
        assert_eq!(gone("oauth:https://idp#sub:alice", tokens, issuers), None);
        let token = gone("token:old", tokens, issuers).unwrap();
        assert!(
            token.contains("\"old\"") && token.contains("serve.tokens"),
            "{token}"
        );
        let person = gone("oauth:https://gone#sub:bob", tokens, issuers).unwrap();
        assert!(
            person.contains("https://gone") && !person.contains("bob"),
            "{person}"
        );
        assert_eq!(gone("not a key", tokens, issuers), None);
    }
}
