//! Secrets fetched by commands: an `env` or `headers` value (or `bearerToken`,
//! or a client token of `serve.tokens`) that starts with `!` is replaced by the trimmed stdout of that command, run by
//! the shell. `!!` stands for a literal `!`. Fails closed: a command that fails or
//! runs over 10 s is an error, and neither its output nor the value is ever logged.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The secret values of one connection (resolved `env`, `headers`, tokens,
/// credentials in its URL), masked out of every error text it produces: a
/// library's error may quote a request URL or a server may echo its input.
#[derive(Clone, Default)]
pub struct Redactions(Arc<Mutex<Vec<String>>>);

impl Redactions {
    /// Masks `value` from now on, if it is long enough to be a credential
    /// (masking every short word would garble messages: `LOG_LEVEL=info`).
    pub fn add(&self, value: &str) {
        if value.trim().len() >= 8 {
            self.add_secret(value);
        }
    }

    /// Masks `value` from now on: something known to be secret (a command's
    /// output, a token), unless too short to mask without garbling messages.
    pub fn add_secret(&self, value: &str) {
        if value.trim().len() >= 4 {
            let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
            v.push(value.trim().to_string());
            // Longest first, so a secret containing another is masked whole.
            v.sort_by_key(|s| std::cmp::Reverse(s.len()));
            v.dedup();
        }
    }

    /// Masks a URL's credentials: user info and query values.
    pub fn add_url(&self, url: &str) {
        if let Ok(u) = reqwest::Url::parse(url) {
            self.add(u.username());
            if let Some(p) = u.password() {
                self.add_secret(p);
            }
            for (_, v) in u.query_pairs() {
                self.add_secret(&v);
            }
            // As written, too: error texts quote the URL still encoded.
            for pair in u.query().unwrap_or("").split('&') {
                if let Some((_, v)) = pair.split_once('=') {
                    self.add_secret(v);
                }
            }
        }
    }

    /// `text` with every known secret replaced by `****`.
    pub fn apply(&self, text: &str) -> String {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.iter().fold(text.to_string(), |t, secret| {
            t.replace(secret.as_str(), "****")
        })
    }
}

/// How long a secret command may run.
pub const SECRET_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a secret command gave no secret; never its output.
#[derive(Debug, thiserror::Error)]
pub enum CommandFailed {
    /// The shell did not start.
    #[error("could not start: {0}")]
    Start(std::io::Error),
    /// It ran past [`SECRET_TIMEOUT`].
    #[error("did not finish within {} s", SECRET_TIMEOUT.as_secs())]
    Timeout,
    /// Waiting for it failed.
    #[error("failed: {0}")]
    Wait(std::io::Error),
    /// It exited unsuccessfully.
    #[error("failed ({0})")]
    Status(std::process::ExitStatus),
    /// Its output is not text.
    #[error("printed something that is not UTF-8")]
    NotUtf8,
    /// It printed only white space.
    #[error("printed nothing")]
    Empty,
}

/// A secret command of a server's config failed; the message names the
/// server and the field.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SecretError(pub String);

/// Resolves one value; `what` names it in errors (`env.API_KEY`).
pub async fn resolve(value: &str, what: &str, server: &str) -> Result<String, SecretError> {
    resolve_value(value).await.map_err(|why| {
        SecretError(format!(
            "server \"{server}\": the secret command for `{what}` {why}"
        ))
    })
}

/// The value of a client secret: its `!command` run, or its variable read;
/// an error says why (never the value).
pub async fn resolve_source(
    source: &crate::config::TokenSource,
    env: &crate::paths::Environment,
) -> Result<String, String> {
    match source {
        crate::config::TokenSource::Value(v) => resolve_value(v)
            .await
            .map_err(|why| format!("its command {why}")),
        crate::config::TokenSource::Env(var) => env
            .get(var)
            .filter(|v| !v.trim().is_empty())
            .map(str::to_string)
            .ok_or_else(|| format!("environment variable {var} is not set")),
    }
}

/// A value as written (`!!` for a leading `!`), or the trimmed output of
/// its `!command`.
pub async fn resolve_value(value: &str) -> Result<String, CommandFailed> {
    if let Some(rest) = value.strip_prefix("!!") {
        return Ok(format!("!{rest}"));
    }
    let Some(command) = value.strip_prefix('!') else {
        return Ok(value.to_string());
    };
    let mut shell = tokio::process::Command::new("sh");
    shell
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    // Its own process group, registered, so that it dies with mcpw even on a
    // signal; but at a terminal it stays in ours, where it may ask for a
    // password (`op`, `pass`, pinentry) — a background group cannot.
    let interactive = crate::processes::at_a_terminal();
    if !interactive {
        shell.process_group(0);
    }
    let (child, _guard) = {
        let _registering = crate::processes::spawning();
        let child = shell.spawn().map_err(CommandFailed::Start)?;
        let guard = child
            .id()
            .map(|pid| crate::processes::Guard::new(pid, !interactive));
        (child, guard)
    };
    let output = match tokio::time::timeout(SECRET_TIMEOUT, child.wait_with_output()).await {
        Err(_) => return Err(CommandFailed::Timeout),
        Ok(Err(e)) => return Err(CommandFailed::Wait(e)),
        Ok(Ok(o)) => o,
    };
    if !output.status.success() {
        return Err(CommandFailed::Status(output.status));
    }
    let text = String::from_utf8(output.stdout).map_err(|_| CommandFailed::NotUtf8)?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(CommandFailed::Empty);
    }
    Ok(secret.to_string())
}

/// Resolves every value of a map (`env`, `headers`), adding each to
/// `redact`: `!command`s run, and `${vault:NAME}` references replaced by
/// the secrets `vault` keeps (`mcpw add` puts them there).
pub async fn resolve_all(
    pairs: &[(String, String)],
    field: &str,
    server: &str,
    redact: &Redactions,
    vault: Option<&dyn Kept>,
) -> Result<Vec<(String, String)>, SecretError> {
    let mut out = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let what = format!("{field}.{k}");
        let value = resolve(v, &what, server).await?;
        if v.starts_with('!') && !v.starts_with("!!") {
            redact.add_secret(&value);
        } else {
            redact.add(&value);
        }
        let value = from_vault(value, vault, &what, server, redact).await?;
        out.push((k.clone(), value));
    }
    Ok(out)
}

/// Where the secrets `${vault:NAME}` names are kept (mcpw's credential
/// vault): the value under a key, if any.
pub trait Kept: Send + Sync {
    /// The string kept under `key`.
    fn secret<'a>(
        &'a self,
        key: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Option<String>, String>>;
}

/// The vault key of the secret `${vault:NAME}` names.
pub fn vault_key(name: &str) -> String {
    format!("secret/{name}")
}

/// `value` with each `${vault:NAME}` replaced by the secret kept under it.
async fn from_vault(
    mut value: String,
    vault: Option<&dyn Kept>,
    what: &str,
    server: &str,
    redact: &Redactions,
) -> Result<String, SecretError> {
    while let Some(at) = value.find("${vault:") {
        let Some(len) = value[at..].find('}') else {
            break;
        };
        let name = value[at + 8..at + len].to_string();
        let missing = |why: String| {
            SecretError(format!(
                "server \"{server}\": `{what}` refers to the vault's secret \"{name}\", {why}"
            ))
        };
        let Some(vault) = vault else {
            return Err(missing("and no vault is open here".into()));
        };
        let kept = vault
            .secret(&vault_key(&name))
            .await
            .map_err(|e| missing(format!("which cannot be read: {e}")))?;
        let Some(secret) = kept.as_deref() else {
            return Err(missing(
                "which the vault does not hold: `mcpw add` again, or edit the entry".into(),
            ));
        };
        redact.add_secret(secret);
        value.replace_range(at..at + len + 1, secret);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn commands_literals_and_escapes() {
        assert_eq!(resolve("plain", "env.A", "s").await.unwrap(), "plain");
        assert_eq!(
            resolve("!echo '  s3cret  '", "env.A", "s").await.unwrap(),
            "s3cret"
        );
        assert_eq!(
            resolve("!!not a command", "env.A", "s").await.unwrap(),
            "!not a command"
        );
    }

    #[tokio::test]
    async fn failures_are_errors_that_do_not_leak_output() {
        let err = resolve("!echo leaked-value; exit 3", "headers.Authorization", "srv")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("srv")
                && err.contains("headers.Authorization")
                && err.contains("exit status: 3"),
            "{err}"
        );
        assert!(!err.contains("leaked-value"));
        assert!(
            resolve("!true", "env.A", "s")
                .await
                .unwrap_err()
                .to_string()
                .contains("printed nothing")
        );
    }
}
