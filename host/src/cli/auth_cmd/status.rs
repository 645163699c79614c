//! `mcpw auth status`: each server's shared login, then each person's own.

use anyhow::Result;
use mcpw::auth::Status;
use mcpw::host::{Host, PersonStatus};
use std::process::ExitCode;

/// Shows what is held for `only` (else every server mcpw logs in to): as
/// lines, or as JSON, one object per server with its people in `people`.
pub(super) async fn show(
    host: &Host,
    only: Option<String>,
    principal: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
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
    let mut people = host.people_status(principal).await?;
    let mut rows = serde_json::Map::new();
    for server in &servers {
        let status = host.auth_status(server).await?;
        let theirs: Vec<PersonStatus> = people
            .extract_if(.., |(s, _)| s == server)
            .map(|(_, p)| p)
            .collect();
        if !json {
            outln!("{}", shared_line(server, &status));
            for person in &theirs {
                outln!("  {}", person_line(server, person));
            }
        }
        let mut row = serde_json::to_value(&status)?;
        row["people"] = serde_json::to_value(&theirs)?;
        rows.insert(server.clone(), row);
    }
    if json {
        super::super::print_json(&rows)?;
    } else if servers.is_empty() {
        outln!("No configured server uses OAuth (HTTP servers without static credentials).");
    }
    Ok(ExitCode::SUCCESS)
}

fn shared_line(server: &str, status: &Status) -> String {
    match status.logged_in {
        true => format!("✓ {server}: logged in{}", held(status, None)),
        false => format!("○ {server}: not logged in (`mcpw auth login {server}`)"),
    }
}

fn person_line(server: &str, person: &PersonStatus) -> String {
    let who = match &person.name {
        Some(name) => format!("{} ({name})", person.owner),
        None => person.owner.clone(),
    };
    match person.status.logged_in {
        true => format!("✓ {who}: logged in{}", held(&person.status, Some(now()))),
        false => format!(
            "○ {who}: not logged in (`mcpw auth login {server} --principal {}`)",
            person.owner
        ),
    }
}

/// What a login holds: its issuer, scopes, the token's expiry (when `now`
/// is given and the expiry known) and whether it refreshes.
fn held(status: &Status, now: Option<u64>) -> String {
    let mut out = String::new();
    if let Some(issuer) = &status.issuer {
        out.push_str(&format!(" by {issuer}"));
    }
    if !status.scopes.is_empty() {
        out.push_str(&format!(", scopes {}", status.scopes.join(" ")));
    }
    if let (Some(now), Some(at)) = (now, status.expires_at) {
        match at.checked_sub(now) {
            Some(left) if left > 0 => out.push_str(&format!(", expires in {}", minutes(left))),
            _ => out.push_str(", expired"),
        }
    }
    if status.refreshable {
        out.push_str(", refreshable");
    }
    out
}

fn minutes(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s"),
        _ => format!("{} min", secs / 60),
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
