//! Secrets fetched by commands: an `env` or `headers` value (or `bearerToken`)
//! that starts with `!` is replaced by the trimmed stdout of that command, run by
//! the shell. `!!` stands for a literal `!`. Fails closed: a command that fails or
//! runs over 10 s is an error, and neither its output nor the value is ever logged.

use super::ConnectError;
use std::process::Stdio;
use std::time::Duration;

/// How long a secret command may run.
pub const SECRET_TIMEOUT: Duration = Duration::from_secs(10);

/// Resolves one value; `what` names it in errors (`env.API_KEY`).
pub async fn resolve(value: &str, what: &str, server: &str) -> Result<String, ConnectError> {
    if let Some(rest) = value.strip_prefix("!!") {
        return Ok(format!("!{rest}"));
    }
    let Some(command) = value.strip_prefix('!') else {
        return Ok(value.to_string());
    };
    let fail = |why: String| {
        ConnectError::Secret(format!(
            "server \"{server}\": the secret command for `{what}` {why}"
        ))
    };
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(format!("could not start: {e}")))?;
    let output = match tokio::time::timeout(SECRET_TIMEOUT, child.wait_with_output()).await {
        Err(_) => {
            return Err(fail(format!(
                "did not finish within {} s",
                SECRET_TIMEOUT.as_secs()
            )));
        }
        Ok(Err(e)) => return Err(fail(format!("failed: {e}"))),
        Ok(Ok(o)) => o,
    };
    if !output.status.success() {
        return Err(fail(format!("failed ({})", output.status)));
    }
    let text = String::from_utf8(output.stdout)
        .map_err(|_| fail("printed something that is not UTF-8".into()))?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(fail("printed nothing".into()));
    }
    Ok(secret.to_string())
}

/// Resolves every value of a map (`env`, `headers`).
pub async fn resolve_all(
    pairs: &[(String, String)],
    field: &str,
    server: &str,
) -> Result<Vec<(String, String)>, ConnectError> {
    let mut out = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        out.push((
            k.clone(),
            resolve(v, &format!("{field}.{k}"), server).await?,
        ));
    }
    Ok(out)
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
