//! `mcpw config show|validate`.

use anyhow::Result;
use clap::Subcommand;
use mcpw::config::{self, ConfigSources, Severity, show};
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum ConfigCommand {
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

pub fn run(cmd: ConfigCommand, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = config::load(sources);
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
