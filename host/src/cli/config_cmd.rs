//! `mcpw config show|validate`.

use anyhow::Result;
use clap::Subcommand;
use mcpw::config::{self, ConfigSources, Severity, show};
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum ConfigCommand {
    /// The merged config: sources, servers (secrets masked), settings, problems.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check every source; exit 1 on any error.
    Validate {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Loads every user guest the settings name, as `serve` would, so a guest that
/// cannot be read, compiled or linked, or lacks its role, fails validation.
fn guest_problems(cfg: &config::Config, sources: &ConfigSources) -> Vec<config::Diagnostic> {
    let mut out = Vec::new();
    for (role, path) in &cfg.settings.plugins.guests {
        let problem = match std::fs::read(path) {
            Err(e) => Some(format!("cannot read the guest: {e}")),
            Ok(bytes) => match mcpw::plugin::GuestModule::load(
                &path.display().to_string(),
                &bytes,
                super::plugin_cmd::load_options(sources, cfg.settings.plugins.limits),
            ) {
                Err(e) => Some(e.to_string()),
                Ok(m) if !m.roles().contains(role) => Some(format!(
                    "the guest does not implement the {} role (it must export `{}`)",
                    role.config_key(),
                    role.export_name()
                )),
                Ok(_) => None,
            },
        };
        if let Some(message) = problem {
            let mut d = config::Diagnostic::file(Severity::Error, path, message);
            d.field = Some(format!("settings.plugins.{}", role.config_key()));
            out.push(d);
        }
    }
    out
}

pub(crate) fn run(cmd: ConfigCommand, sources: &ConfigSources) -> Result<ExitCode> {
    let mut cfg = config::load(sources);
    if matches!(cmd, ConfigCommand::Validate { .. }) {
        let problems = guest_problems(&cfg, sources);
        cfg.diagnostics.extend(problems);
    }
    match cmd {
        ConfigCommand::Show { json } => {
            if json {
                super::print_json(&show::to_json(&cfg))?;
            } else {
                outln!("{}", show::to_text(&cfg).trim_end());
            }
            Ok(ExitCode::SUCCESS)
        }
        ConfigCommand::Validate { json } => {
            let errors = cfg
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count();
            let warnings = cfg.diagnostics.len() - errors;
            if json {
                super::print_json(&serde_json::json!({
                    "valid": errors == 0,
                    "servers": cfg.servers.len(),
                    "diagnostics": cfg.diagnostics,
                }))?;
            } else {
                for d in &cfg.diagnostics {
                    outln!("{d}");
                }
                let read = cfg.sources.iter().filter(|s| s.found).count();
                outln!(
                    "{} server(s) from {read} file(s): {errors} error(s), {warnings} warning(s)",
                    cfg.servers.len()
                );
            }
            Ok(if errors == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}
