//! The first connection to a server being added: on a host of its own
//! that knows only that server, with its metadata cache in a temporary
//! folder, under a deadline. No agent sees it and nothing is written unless
//! it lists its tools; those become its pinned baseline.

use anyhow::{Context, Result, bail};
use mcpw::catalog::Tool;
use mcpw::config::{self, ConfigSources};
use mcpw::pins::{PinFile, Pins, ServerPins};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// `name`'s tools, connected with `entry` alone. `settings` are the few of
/// the user's that reaching it depends on (where the vault is).
pub async fn tools(
    name: &str,
    entry: &Value,
    settings: Value,
    sources: &ConfigSources,
    deadline: Duration,
) -> Result<Vec<Arc<Tool>>> {
    let dir = tempfile::tempdir().context("a temporary folder")?;
    let file = dir.path().join("mcp.json");
    let text = json!({"mcpServers": {name: entry}, "settings": settings}).to_string();
    std::fs::write(&file, text).context("write the trial config")?;
    let env = sources
        .env
        .clone()
        .with(
            "XDG_CACHE_HOME",
            dir.path().join("cache").display().to_string(),
        )
        .with("MCPW_CONFIG", "");
    let trial = ConfigSources {
        user_file: Some(file),
        user_value: None,
        project_dir: None,
        env: env.clone(),
    };
    let cfg = config::load(&trial);
    if let Some(d) = cfg
        .diagnostics
        .iter()
        .find(|d| d.severity == config::Severity::Error)
    {
        bail!("the entry would not load: {}", d.detail());
    }
    let mut options = mcpw::host::HostOptions::for_env(&env);
    options.maintenance = false;
    let host = mcpw::host::Host::start(cfg, env, options)
        .await
        .context("cannot start")?;
    let connected = tokio::time::timeout(deadline, host.connect(name)).await;
    let listed = match connected {
        Err(_) => Err(anyhow::anyhow!(
            "it did not list its tools within {} ms",
            deadline.as_millis()
        )),
        Ok(Err(e)) => Err(anyhow::anyhow!("it could not be reached: {e}")),
        Ok(Ok(_)) => host.entries().await.context("its tools"),
    };
    let tools = listed.map(|entries| {
        entries
            .iter()
            .filter(|e| e.tool.server == name)
            .map(|e| e.tool.clone())
            .collect()
    });
    host.shutdown().await;
    tools
}

/// Records `tools` as `name`'s pinned baseline under `key`.
pub fn pin(cfg: &config::Config, key: String, name: &str, tools: &[Arc<Tool>]) -> Result<()> {
    let pins = Pins::of(cfg);
    let baseline = ServerPins {
        server: name.to_string(),
        tools: tools
            .iter()
            .map(|t| (t.name.clone(), mcpw::pins::pinned(t)))
            .collect(),
        pending: Default::default(),
    };
    PinFile::update(pins.path(), |file| file.servers.insert(key, baseline))
        .with_context(|| format!("write {}", pins.path().display()))?;
    Ok(())
}
