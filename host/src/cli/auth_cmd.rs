//! `mcpw auth`: logging in to servers that ask for OAuth, and what mcpw holds.

use super::start;
use anyhow::{Context, Result};
use clap::Subcommand;
use mcpw::config::ConfigSources;
use mcpw::host::{Host, HostError, LoginOptions};
use std::process::ExitCode;

mod status;

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
        /// Log in for this principal, as its own login (token:NAME, oauth:ISSUER#sub:SUB or oauth:ISSUER#client:ID) instead of the server's shared one.
        #[arg(long, value_name = "P")]
        principal: Option<String>,
    },
    /// Forget a server's credentials.
    Logout {
        /// The server.
        server: String,
        /// Forget this principal's own login instead of the server's shared one.
        #[arg(long, value_name = "P")]
        principal: Option<String>,
    },
    /// Forget every login a principal holds, on every server.
    Forget {
        /// The principal (token:NAME, oauth:ISSUER#sub:SUB or oauth:ISSUER#client:ID).
        principal: String,
    },
    /// What mcpw holds for each server it logs in to, shared and each person's (never a secret).
    Status {
        /// Only this server.
        server: Option<String>,
        /// Of the people's own logins, only this principal's.
        #[arg(long, value_name = "P")]
        principal: Option<String>,
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
            principal,
        } => {
            let options = LoginOptions {
                no_browser,
                wait: std::time::Duration::from_secs(wait),
                ..LoginOptions::default()
            };
            login(&host, &server, principal.as_deref(), options).await
        }
        AuthCommand::Logout { server, principal } => {
            logout(&host, &server, principal.as_deref()).await
        }
        AuthCommand::Forget { principal } => forget(&host, &principal).await,
        AuthCommand::Status {
            server,
            principal,
            json,
        } => status::show(&host, server, principal.as_deref(), json).await,
    };
    host.shutdown().await;
    result
}

async fn login(
    host: &Host,
    server: &str,
    principal: Option<&str>,
    options: LoginOptions,
) -> Result<ExitCode> {
    let done = match principal {
        Some(p) => host.login_for(server, p, options).await,
        None => host.login(server, options).await,
    };
    let done = done.with_context(|| format!("cannot log in to \"{server}\""))?;
    let by = done.issuer.as_deref().unwrap_or("its authorization server");
    let scopes = if done.scopes.is_empty() {
        String::new()
    } else {
        format!(" (scopes: {})", done.scopes.join(" "))
    };
    let whose = principal.map(|p| format!(" for {p}")).unwrap_or_default();
    eprintln!("Logged in to \"{server}\"{whose} by {by}{scopes}.");
    Ok(ExitCode::SUCCESS)
}

async fn logout(host: &Host, server: &str, principal: Option<&str>) -> Result<ExitCode> {
    let held = match principal {
        Some(p) => host.logout_for(server, p).await?,
        None => host.logout(server).await?,
    };
    let whose = principal.map(|p| format!(" for {p}")).unwrap_or_default();
    if held {
        eprintln!("Logged out of \"{server}\"{whose}.");
    } else {
        eprintln!("mcpw held no credentials for \"{server}\"{whose}.");
    }
    Ok(ExitCode::SUCCESS)
}

async fn forget(host: &Host, principal: &str) -> Result<ExitCode> {
    match host.forget_principal(principal).await? {
        0 => eprintln!("mcpw held no login of {principal}."),
        1 => eprintln!("Forgot the one login of {principal}."),
        n => eprintln!("Forgot the {n} logins of {principal}."),
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
