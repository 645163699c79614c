//! `mcpw doctor`: why a client does not see a server.

use anyhow::{Context, Result};
use mcpw::config::{self, ConfigSources};
use mcpw::doctor::{Finding, Report, Section, Severity};
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub(crate) struct DoctorArgs {
    /// Print JSON: `{"findings": [...], "summary": {...}}`.
    #[arg(long)]
    json: bool,
    /// Read the files only: connect no server, reach no service.
    #[arg(long)]
    offline: bool,
    /// How long each server, and each gateway service, may take to answer.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    timeout_ms: u64,
}

pub(crate) async fn doctor(args: DoctorArgs, sources: &ConfigSources) -> Result<ExitCode> {
    // Not `load_config`: its problems are findings here, not log lines.
    let cfg = config::load(sources);
    let project = sources
        .project_dir
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let mut findings = mcpw::doctor::file_findings(&cfg, &sources.env, &project);
    let deadline = Duration::from_millis(args.timeout_ms);
    if !args.offline {
        findings.extend(live(&cfg, sources, deadline).await?);
        findings.extend(mcpw::doctor::gateway::check(&cfg, &sources.env, deadline).await);
    }
    findings.extend(guests(&cfg, sources));
    let report = Report::new(findings);
    if args.json {
        super::print_json(&report)?;
    } else {
        outln!("{}", report.to_text().trim_end());
    }
    Ok(if report.blocking() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The servers mcpw serves, connected through a host of their own whose
/// metadata cache is a scratch file: the real cache is left as it was.
async fn live(
    cfg: &config::Config,
    sources: &ConfigSources,
    deadline: Duration,
) -> Result<Vec<Finding>> {
    if !cfg.servers.iter().any(|s| s.config.enabled) {
        return Ok(Vec::new());
    }
    let scratch = tempfile::tempdir().context("create a scratch folder")?;
    let mut options = mcpw::host::HostOptions::for_env(&sources.env);
    options.maintenance = false;
    options.metadata_cache = Some(scratch.path().join("metadata.json"));
    options.compile_cache = super::compile_cache(sources);
    let host = match mcpw::host::Host::start(cfg.clone(), sources.env.clone(), options).await {
        Ok(h) => h,
        Err(e) => {
            return Ok(vec![
                Finding::new(
                    Section::Live,
                    Severity::Blocking,
                    "start",
                    format!("mcpw cannot start: {e}"),
                    "`mcpw config validate` checks the config",
                )
                .client("mcpw"),
            ]);
        }
    };
    let findings = mcpw::doctor::live::check(&host, deadline).await;
    host.shutdown().await;
    Ok(findings)
}

/// The user's guests pass `mcpw plugin test`'s contract checks for their
/// role. A project's guests that wait for approval are not among them.
fn guests(cfg: &config::Config, sources: &ConfigSources) -> Vec<Finding> {
    let mut out = Vec::new();
    for (role, path) in &cfg.settings.plugins.guests {
        let name = path.display().to_string();
        let options = super::plugin_cmd::load_options(sources, cfg.settings.plugins.limits);
        let failed: Vec<String> = match std::fs::read(path)
            .map_err(|e| format!("cannot read it: {e}"))
            .and_then(|bytes| {
                mcpw::plugin::conformance::run(&name, &bytes, options, Some(*role))
                    .map_err(|e| e.to_string())
            }) {
            Err(why) => vec![why],
            Ok(checks) => checks
                .iter()
                .filter(|c| !c.passed())
                .map(|c| format!("{}: {}", c.name, c.failure.as_deref().unwrap_or("failed")))
                .collect(),
        };
        let f = if failed.is_empty() {
            Finding::new(
                Section::Gateway,
                Severity::Info,
                "guest-contract",
                format!("the {} guest passes its contract checks", role.config_key()),
                "",
            )
        } else {
            Finding::new(
                Section::Gateway,
                Severity::Blocking,
                "guest-contract",
                format!(
                    "the {} guest fails: {}",
                    role.config_key(),
                    failed.join("; ")
                ),
                format!(
                    "`mcpw plugin test {name} --role {}` shows every check",
                    role.config_key()
                ),
            )
        };
        out.push(f.client("mcpw").file(path));
    }
    out
}
