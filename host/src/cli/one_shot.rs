//! What a command that runs once needs: a host started from the config,
//! and its answer printed as JSON.

use anyhow::{Context, Result};
use mcpw::config::{self, Config, ConfigSources};

/// A host for one command: the config loaded, no periodic maintenance.
pub(crate) async fn start(sources: &ConfigSources) -> Result<mcpw::host::Host> {
    let cfg = load_config(sources);
    let mut options = mcpw::host::HostOptions::for_env(&sources.env);
    options.maintenance = false;
    // Each run is one client's next call: the limits count across runs.
    options.rate_limit_file = Some(sources.env.state_dir().join("rate-limits.json"));
    mcpw::host::Host::start(cfg, sources.env.clone(), options)
        .await
        .context("cannot start")
}

/// Loads the config; problems are logged, not fatal (the commands that check
/// config report them themselves).
pub(crate) fn load_config(sources: &ConfigSources) -> Config {
    let cfg = config::load(sources);
    for d in &cfg.diagnostics {
        match d.severity {
            config::Severity::Error => tracing::error!("{}", d.detail()),
            config::Severity::Warning => tracing::warn!("{}", d.detail()),
        }
    }
    cfg
}

/// Prints JSON to stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<()> {
    outln!(
        "{}",
        serde_json::to_string_pretty(value).context("serialize output")?
    );
    Ok(())
}
