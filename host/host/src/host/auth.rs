//! Logging in to servers that ask for OAuth, and what mcpw holds for them:
//! each server's shared login here, each person's own in [`people`].

pub(super) mod people;
mod sign_in;

pub use sign_in::Unlisted;

use super::{Host, HostError};
use crate::auth::{self, AuthFailure, LoggedIn, Login, Status};
use crate::config::{ServerConfig, Transport};
use crate::lifecycle::LifecycleError;
use crate::upstream::ConnectError;
use std::time::Duration;

/// How a login goes.
#[derive(Clone, Debug)]
pub struct LoginOptions {
    /// Print the authorization URL and read the redirect URL pasted on
    /// stdin, instead of opening a browser.
    pub no_browser: bool,
    /// The server's `WWW-Authenticate` challenge, when a request met one;
    /// otherwise the server is asked first.
    pub challenge: Option<String>,
    /// How long the person has to finish.
    pub wait: Duration,
}

impl Default for LoginOptions {
    fn default() -> Self {
        LoginOptions {
            no_browser: false,
            challenge: None,
            wait: Duration::from_secs(300),
        }
    }
}

impl HostError {
    /// When this error means a login would help: the server, and the
    /// challenge it sent (for [`LoginOptions::challenge`]).
    pub fn login_needed(&self) -> Option<(&str, Option<&str>)> {
        match self {
            HostError::Lifecycle(LifecycleError::Connect {
                server,
                error: ConnectError::NeedsAuth { challenge, .. },
            }) => Some((server, challenge.as_deref())),
            _ => None,
        }
    }
}

impl Host {
    /// The config of a server mcpw logs in to, and its URL.
    fn oauth_server(&self, server: &str) -> Result<(ServerConfig, String), HostError> {
        let found = self
            .manager
            .server(server)
            .ok_or_else(|| LifecycleError::NotFound(server.to_string()))?;
        match &found.config.transport {
            Transport::Http { url, .. } if found.config.oauth_applies() => {
                Ok((found.config.clone(), url.clone()))
            }
            _ => Err(HostError::NoLogin(server.to_string())),
        }
    }

    fn auth_error(server: &str) -> impl Fn(AuthFailure) -> HostError + '_ {
        move |source| HostError::Auth {
            server: server.to_string(),
            source: Box::new(source),
        }
    }

    /// Logs in to `server` and reconnects it with the credentials obtained.
    /// The person is told on stderr what to do.
    pub async fn login(&self, server: &str, options: LoginOptions) -> Result<LoggedIn, HostError> {
        self.oauth_server(server)?;
        let challenge = match options.challenge.clone() {
            Some(c) => Some(c),
            None => match self.manager.auth_challenge(server).await? {
                None => return Err(HostError::LoginNotNeeded(server.to_string())),
                Some(c) => Some(c).filter(|c| !c.is_empty()),
            },
        };
        let logged_in = self.run_login(server, None, challenge, &options).await?;
        self.manager.connect(server, true).await?;
        Ok(logged_in)
    }

    /// Runs the login to `server`, for `owner` or as its shared login.
    async fn run_login(
        &self,
        server: &str,
        owner: Option<&str>,
        challenge: Option<String>,
        options: &LoginOptions,
    ) -> Result<LoggedIn, HostError> {
        let (config, url) = self.oauth_server(server)?;
        let login = Login {
            server,
            url: &url,
            oauth: &config.oauth,
            vault: self.manager.vault().clone(),
            env: &self.env,
            no_browser: options.no_browser,
            challenge,
            wait: options.wait,
            owner,
        };
        login.run().await.map_err(Self::auth_error(server))
    }

    /// Forgets what mcpw holds for `server`; returns whether anything was held.
    pub async fn logout(&self, server: &str) -> Result<bool, HostError> {
        let (_, url) = self.oauth_server(server)?;
        let credentials = auth::ServerCredentials::new(self.manager.vault().clone(), &url);
        let held = credentials
            .stored()
            .await
            .map_err(|e| Self::auth_error(server)(e.into()))?
            .is_some();
        credentials
            .forget()
            .await
            .map_err(|e| Self::auth_error(server)(e.into()))?;
        Ok(held)
    }

    /// What mcpw holds for `server` (never a secret).
    pub async fn auth_status(&self, server: &str) -> Result<Status, HostError> {
        let (_, url) = self.oauth_server(server)?;
        auth::status(self.manager.vault(), &url, None)
            .await
            .map_err(Self::auth_error(server))
    }
}
