//! `mcpw auth`: logging in to servers that ask for OAuth, and what mcpw holds.

use super::start;
use anyhow::{Context, Result};
use clap::Subcommand;
use mcpw::config::ConfigSources;
use mcpw::host::{Host, HostError, LoginOptions};
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum AuthCommand {
    /// Log in to a server: opens the authorization page ($BROWSER, else the platform's opener) and waits for its redirect.
    Login {
        /// The server.
        server: String,
        /// Print the URL instead of opening a browser, and read the address the browser was sent back to from stdin.
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the login to be finished, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = 300)]
        wait: u64,
    },
    /// Forget a server's credentials.
    Logout {
        /// The server.
        server: String,
    },
    /// What mcpw holds for each server it logs in to (never a secret).
    Status {
        /// Only this server.
        server: Option<String>,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(cmd: AuthCommand, sources: &ConfigSources) -> Result<ExitCode> {
    let host = start(sources).await?;
    let result = match cmd {
        AuthCommand::Login {
            server,
            no_browser,
            wait,
        } => login(&host, &server, no_browser, wait).await,
        AuthCommand::Logout { server } => {
            let held = host.logout(&server).await;
            held.map(|held| {
                if held {
                    eprintln!("Logged out of \"{server}\".");
                } else {
                    eprintln!("mcpw held no credentials for \"{server}\".");
                }
                ExitCode::SUCCESS
            })
            .map_err(Into::into)
        }
        AuthCommand::Status { server, json } => status(&host, server, json).await,
    };
    host.shutdown().await;
    result
}

async fn login(host: &Host, server: &str, no_browser: bool, wait: u64) -> Result<ExitCode> {
    let options = LoginOptions {
        no_browser,
        wait: std::time::Duration::from_secs(wait),
        ..LoginOptions::default()
    };
    let done = host
        .login(server, options)
        .await
        .with_context(|| format!("cannot log in to \"{server}\""))?;
    let by = done.issuer.as_deref().unwrap_or("its authorization server");
    let scopes = if done.scopes.is_empty() {
        String::new()
    } else {
        format!(" (scopes: {})", done.scopes.join(" "))
    };
    eprintln!("Logged in to \"{server}\" by {by}{scopes}.");
    Ok(ExitCode::SUCCESS)
}

async fn status(host: &Host, only: Option<String>, json: bool) -> Result<ExitCode> {
    let servers: Vec<String> = match only {
        Some(s) => vec![s],
        None => host
            .config()
            .servers
            .iter()
            .filter(|s| s.config.oauth_applies())
            .map(|s| s.name.clone())
            .collect(),
    };
    let mut rows = serde_json::Map::new();
    for server in &servers {
        let status = host.auth_status(server).await?;
        rows.insert(server.clone(), serde_json::to_value(&status)?);
        if !json {
            let line = match (&status.logged_in, &status.issuer) {
                (true, issuer) => format!(
                    "✓ {server}: logged in{}{}{}",
                    issuer
                        .as_deref()
                        .map(|i| format!(" by {i}"))
                        .unwrap_or_default(),
                    if status.scopes.is_empty() {
                        String::new()
                    } else {
                        format!(", scopes {}", status.scopes.join(" "))
                    },
                    if status.refreshable {
                        ", refreshable"
                    } else {
                        ""
                    }
                ),
                (false, _) => format!("○ {server}: not logged in (`mcpw auth login {server}`)"),
            };
            outln!("{line}");
        }
    }
    if json {
        super::print_json(&rows)?;
    } else if servers.is_empty() {
        outln!("No configured server uses OAuth (HTTP servers without static credentials).");
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `attempt`; when it fails because a server wants a login and a browser
/// can be opened here, logs in (with the server's challenge) and tries
/// again: at most twice, so that a server that keeps asking for more scope
/// is not logged in to forever.
pub(crate) async fn with_login<T, F, Fut>(
    host: &Host,
    env: &mcpw::paths::Environment,
    mut attempt: F,
) -> Result<T, HostError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, HostError>>,
{
    let mut logins = 0;
    loop {
        match attempt().await {
            Err(e) if logins < 2 && mcpw::auth::browser_available(env) => {
                let Some((server, challenge)) = e.login_needed() else {
                    return Err(e);
                };
                let server = server.to_string();
                let options = LoginOptions {
                    challenge: challenge.map(str::to_string),
                    ..LoginOptions::default()
                };
                logins += 1;
                eprintln!("Server \"{server}\" asks for a login.");
                match host.login(&server, options).await {
                    Ok(_) => continue,
                    Err(HostError::NoLogin(_)) => return Err(e),
                    Err(login) => return Err(login),
                }
            }
            other => return other,
        }
    }
}
