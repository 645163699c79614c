//! `mcpw trust`: the project's servers that wait for approval; approving
//! them, and taking approvals back.

use anyhow::{Context, Result, bail};
use mcpw::config::trust::{Approvals, ProjectServers, ProjectTrust};
use mcpw::config::{self, ConfigSources};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct TrustArgs {
    /// Servers to approve (with --revoke: whose approval to take back). None:
    /// list what waits and what is approved.
    names: Vec<String>,
    /// Approve every server that waits.
    #[arg(long, conflicts_with = "revoke")]
    all: bool,
    /// Take approvals back: the named servers', or all of this repository's.
    #[arg(long)]
    revoke: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: TrustArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = config::load(sources);
    let trust = &cfg.trust;
    let Some(repository) = trust.repository.clone() else {
        bail!("no project folder: project trust applies to a project's servers");
    };
    if args.revoke {
        let names = args.names.clone();
        let gone = change(trust, |a| a.revoke(&repository, &names))?;
        return report(&args, &gone, "took back the approval of", trust);
    }
    if !args.all && args.names.is_empty() {
        return list(&args, trust, &Approvals::read(&trust.file));
    }
    if trust.mode != ProjectServers::Ask {
        bail!(
            "settings.projectServers is \"{}\": no project server waits for approval",
            serde_json::to_value(trust.mode)?.as_str().unwrap_or("?")
        );
    }
    let unknown: Vec<&String> = args
        .names
        .iter()
        .filter(|n| !trust.waiting.iter().any(|w| &w.name == *n))
        .collect();
    if !unknown.is_empty() {
        let waiting: Vec<&str> = trust.waiting.iter().map(|w| w.name.as_str()).collect();
        bail!(
            "not waiting for approval: {} (waiting: {})",
            join(unknown.iter().map(|n| n.as_str())),
            if waiting.is_empty() {
                "none".into()
            } else {
                join(waiting.into_iter())
            }
        );
    }
    let chosen: Vec<_> = trust
        .waiting
        .iter()
        .filter(|w| args.all || args.names.contains(&w.name))
        .cloned()
        .collect();
    let now = mcpw::clock::now_ms();
    let approved = change(trust, |a| {
        for w in &chosen {
            a.approve(&repository, w, now);
        }
        chosen.iter().map(|w| w.name.clone()).collect::<Vec<_>>()
    })?;
    report(&args, &approved, "approved", trust)
}

/// Changes the approvals' file under its lock.
fn change<R>(trust: &ProjectTrust, f: impl FnOnce(&mut Approvals) -> R) -> Result<R> {
    mcpw::config::trust::update(&trust.file, f)
        .with_context(|| format!("cannot write {}", trust.file.display()))
}

fn report(
    args: &TrustArgs,
    names: &[String],
    done: &str,
    trust: &ProjectTrust,
) -> Result<ExitCode> {
    if args.json {
        super::print_json(&serde_json::json!({"repository": trust.repository, done: names}))?;
    } else if names.is_empty() {
        outln!("Nothing to do.");
    } else {
        outln!(
            "{} {}.",
            capitalised(done),
            join(names.iter().map(String::as_str))
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn list(args: &TrustArgs, trust: &ProjectTrust, approvals: &Approvals) -> Result<ExitCode> {
    let repository = trust.repository.as_deref().unwrap_or("".as_ref());
    let approved = approvals
        .repositories
        .get(&repository.display().to_string())
        .cloned()
        .unwrap_or_default();
    if args.json {
        super::print_json(&serde_json::json!({
            "mode": trust.mode,
            "repository": repository,
            "waiting": trust.waiting,
            "approved": approved,
            "ignored": trust.ignored,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("Project servers of {}:", repository.display());
    match trust.notice() {
        Some(notice) => outln!("{notice}"),
        None => outln!("none waits for approval."),
    }
    for (name, a) in &approved {
        outln!("approved: {name}: {}", a.runs);
    }
    if !trust.ignored.is_empty() {
        outln!(
            "ignored (settings.projectServers is \"ignore\"): {}",
            join(trust.ignored.iter().map(String::as_str))
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn join<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
