//! Each server mcpw serves, connected as `mcpw connect` would under a
//! deadline: the protocol revision, the tools, their schemas, pin drift and
//! the login state. No login is started and no token refreshed: a server
//! whose token would need either is reported and left unconnected.

use super::finding::{Finding, Section, Severity};
use crate::config::Config;
use crate::host::{Host, HostError};
use std::time::Duration;

/// Every live finding of `host`'s enabled servers, connected side by side,
/// each within `deadline`.
pub async fn check(host: &Host, deadline: Duration) -> Vec<Finding> {
    let cfg = host.config();
    let checks = cfg
        .servers
        .iter()
        .filter(|s| s.config.enabled)
        .map(|s| server(host, &cfg, &s.name, deadline));
    futures::future::join_all(checks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

fn finding(
    severity: Severity,
    check: &'static str,
    server: &str,
    message: String,
    remedy: String,
) -> Finding {
    Finding::new(Section::Live, severity, check, message, remedy)
        .server(server)
        .client("mcpw")
}

async fn server(host: &Host, cfg: &Config, name: &str, deadline: Duration) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(login) = login(host, cfg, name, &mut out).await
        && !login
    {
        return out;
    }
    let connected = tokio::time::timeout(deadline, host.servers().connect(name, true)).await;
    match connected {
        Err(_) => out.push(finding(
            Severity::Blocking,
            "connect",
            name,
            format!("no answer within {} ms", deadline.as_millis()),
            format!("run `mcpw connect {name}` to see it connect (or fail) without a deadline; raise --timeout-ms if it is only slow to start"),
        )),
        Ok(Err(e)) => {
            let e = HostError::from(e);
            let (message, remedy) = match e.login_needed() {
                Some(_) => ("asks for a login".to_string(), format!("mcpw auth login {name}")),
                None => (format!("cannot connect: {e}"), format!("run `mcpw connect {name}` for the whole error; `mcpw config validate` checks its definition")),
            };
            let check = if e.login_needed().is_some() { "login" } else { "connect" };
            out.push(finding(Severity::Blocking, check, name, message, remedy));
        }
        Ok(Ok(_)) => connected_server(host, cfg, name, &mut out),
    }
    out
}

/// The login state of a server mcpw logs in to; `None` for one it does not.
/// `Some(false)` when connecting would start a login or refresh a token.
async fn login(host: &Host, cfg: &Config, name: &str, out: &mut Vec<Finding>) -> Option<bool> {
    let server = cfg.server(name)?;
    if !server.config.oauth_applies() {
        return None;
    }
    let status = match host.auth_status(name).await {
        Ok(s) => s,
        Err(e) => {
            out.push(finding(
                Severity::Warning,
                "login",
                name,
                format!("cannot read its stored login: {e}"),
                "`mcpw auth status` says more".into(),
            ));
            return Some(true);
        }
    };
    let now = crate::clock::now_ms() / 1000;
    let expired = status.expires_at.is_some_and(|at| at <= now);
    let (severity, message, remedy, connect) = match (status.logged_in, expired, status.refreshable) {
        (false, _, _) if server.config.oauth.unattended() => (
            Severity::Warning,
            format!("no token yet: connecting would get one by {}, which doctor does not start", server.config.oauth.grant_type.describe()),
            format!("mcpw connect {name}"),
            false,
        ),
        // It may not ask for one: the connection says.
        (false, _, _) => (Severity::Info, "not logged in (the server may not ask for a login)".to_string(), String::new(), true),
        (true, true, true) => (
            Severity::Warning,
            "logged in; the access token expired and is refreshable: it is refreshed at the next connection (doctor does not)".to_string(),
            format!("mcpw connect {name}"),
            false,
        ),
        (true, true, false) => (Severity::Blocking, "logged in, but the access token expired and cannot be refreshed".to_string(), format!("mcpw auth login {name}"), false),
        (true, false, refreshable) => (
            Severity::Info,
            format!("logged in{}", if refreshable { ", refreshable" } else { "" }),
            String::new(),
            true,
        ),
    };
    out.push(finding(severity, "login", name, message, remedy));
    Some(connect)
}

/// What a connected server offers: its revision and tools, their schemas,
/// and whether they drifted from the pinned ones.
fn connected_server(host: &Host, cfg: &Config, name: &str, out: &mut Vec<Finding>) {
    let servers = host.servers();
    let revision = servers
        .status(name)
        .ok()
        .and_then(|s| s.protocol_version)
        .unwrap_or_else(|| "unknown".into());
    let tools = servers.tools(name).ok().flatten().unwrap_or_default();
    out.push(finding(
        Severity::Info,
        "connect",
        name,
        format!(
            "connected: protocol revision {revision}, {} tool(s)",
            tools.len()
        ),
        String::new(),
    ));
    for tool in &tools {
        for problem in super::schema::lint(tool) {
            out.push(finding(
                Severity::Warning,
                "schema-lint",
                name,
                format!("tool \"{}\" {problem}", tool.name),
                "the server's maintainers can fix the tool's definition; `mcpw describe` shows it"
                    .into(),
            ));
        }
    }
    out.extend(drift(cfg, name, &tools));
}

/// The tools whose definitions differ from the pinned ones, read without
/// writing the pins.
fn drift(cfg: &Config, name: &str, tools: &[crate::catalog::Tool]) -> Option<Finding> {
    let file = crate::pins::PinFile::read(crate::pins::Pins::of(cfg).path());
    let key = crate::pins::key_in(cfg, name, &file)?;
    let Some(pins) = file.servers.get(&key) else {
        return Some(finding(
            Severity::Info,
            "pins",
            name,
            "pinned, but not listed since: its tools are pinned as they are at the next listing"
                .into(),
            String::new(),
        ));
    };
    let drifted = crate::pins::drifted(pins, tools);
    Some(if drifted.is_empty() {
        finding(
            Severity::Info,
            "pins",
            name,
            "every tool matches its pinned definition".into(),
            String::new(),
        )
    } else {
        finding(
            Severity::Warning,
            "pins",
            name,
            format!(
                "tool definitions changed or new since pinned, withheld from the agent until approved: {}",
                drifted.join(", ")
            ),
            "`mcpw trust` shows what changed and approves it".into(),
        )
    })
}
