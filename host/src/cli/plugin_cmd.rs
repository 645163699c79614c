//! `mcpw plugin check`.

use anyhow::{Context, Result};
use clap::Subcommand;
use mcpw::config::ConfigSources;
use mcpw::plugin::inspect::GuestReport;
use mcpw::plugin::{Capability, Grants, GuestModule, LoadOptions, Role, StaticServices};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Roles a guest implements, imports it requests, and which are granted.
    Check {
        /// The guest component.
        file: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: PluginCommand, sources: &ConfigSources) -> Result<ExitCode> {
    let PluginCommand::Check { file, json } = cmd;
    let cfg = super::load_config(sources);
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let options = LoadOptions {
        limits: cfg.settings.plugins.limits,
        grants: Grants::none(),
        services: Arc::new(StaticServices::default()),
        cache: super::compile_cache(sources),
    };
    let module = GuestModule::load(&file.display().to_string(), &bytes, options)?;
    let report = GuestReport::of(&module);
    let grants = |role: Role| {
        cfg.settings
            .plugins
            .grants
            .get(&role)
            .copied()
            .unwrap_or_default()
    };
    // For each import: which of the guest's roles may use it.
    let imports: Vec<(String, String)> = report
        .imports
        .iter()
        .map(|name| {
            let status = match capability_of(name) {
                Some(Err(())) => "always granted".to_string(),
                Some(Ok(cap)) => {
                    let granted: Vec<String> = report
                        .roles
                        .iter()
                        .filter(|r| grants(**r).allows(cap))
                        .map(|r| r.config_key().to_string())
                        .collect();
                    if granted.is_empty() {
                        "denied (grant it in settings.plugins.grants)".into()
                    } else {
                        format!("granted to {}", granted.join(", "))
                    }
                }
                None if name.starts_with("wasi:") => {
                    "sandboxed: no files, env, args, stdio or network".into()
                }
                None => "unknown to this host".into(),
            };
            (name.clone(), status)
        })
        .collect();
    if json {
        super::print_json(&serde_json::json!({
            "guest": file.display().to_string(),
            "roles": report.roles.iter().map(|r| r.config_key()).collect::<Vec<_>>(),
            "imports": imports.iter().map(|(n, s)| serde_json::json!({"name": n, "status": s})).collect::<Vec<_>>(),
            "exports": report.exports,
        }))?;
    } else {
        outln!(
            "guest: {} ({} KiB)",
            file.display(),
            bytes.len().div_ceil(1024)
        );
        outln!("roles:");
        for role in Role::ALL {
            let mark = if report.roles.contains(&role) {
                "yes"
            } else {
                "no "
            };
            outln!("  {mark}  {role:<13} ({})", role.export_name());
        }
        outln!("imports:");
        for (name, status) in &imports {
            outln!("  {name:<40} {status}");
        }
    }
    Ok(if report.roles.is_empty() {
        eprintln!("mcpw: {} implements no mcpw role", file.display());
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `Ok(capability)` for a grantable mcpw import, `Err(())` for `log`, `None` otherwise.
fn capability_of(import: &str) -> Option<Result<Capability, ()>> {
    let iface = import.strip_prefix("mcpw:plugin/")?.split('@').next()?;
    if iface == "log" || iface == "types" {
        return Some(Err(()));
    }
    Capability::parse(iface).map(Ok)
}
