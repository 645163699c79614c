//! Carrying a plan out: one trial connection on a host of its own that
//! knows only the new server (its metadata cache in a temporary folder,
//! under a deadline; no agent sees it), then, only if it listed its tools,
//! those tools pinned as its baseline and its entry written. Each install
//! and removal is an audit line.

use super::{Plan, edit};
use crate::audit::{AuditLog, Decision, Record};
use crate::catalog::Tool;
use crate::config::{self, Config, ConfigSources, SourceKind};
use crate::paths::Environment;
use crate::pins::{Pins, ServerPins};
use crate::team_state::SharedState;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `plan`'s tools, connected with its entry alone under `deadline`. Only the
/// user's `credentialStore` is carried over (where `${vault:…}` is read).
pub async fn trial(
    plan: &Plan,
    user: &Config,
    env: &Environment,
    deadline: Duration,
) -> Result<Vec<Arc<Tool>>, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
    let file = dir.path().join("mcp.json");
    let settings = json!({"credentialStore": user.settings.credential_store});
    let text = json!({"mcpServers": {&plan.name: &plan.entry}, "settings": settings});
    std::fs::write(&file, text.to_string()).map_err(|e| format!("the trial config: {e}"))?;
    let cache = dir.path().join("cache").display().to_string();
    let env = env
        .clone()
        .with("XDG_CACHE_HOME", cache)
        .with("MCPW_CONFIG", "");
    let sources = ConfigSources {
        user_file: Some(file),
        user_value: None,
        project_dir: None,
        env: env.clone(),
    };
    let cfg = config::load(&sources);
    if let Some(d) = cfg
        .diagnostics
        .iter()
        .find(|d| d.severity == config::Severity::Error)
    {
        return Err(format!("the entry would not load: {}", d.detail()));
    }
    let mut options = crate::host::HostOptions::for_env(&env);
    options.maintenance = false;
    let host = crate::host::Host::start(cfg, env, options)
        .await
        .map_err(|e| e.to_string())?;
    let listed = match tokio::time::timeout(deadline, host.connect(&plan.name)).await {
        Err(_) => Err(format!(
            "it did not list its tools within {} ms",
            deadline.as_millis()
        )),
        Ok(Err(e)) => Err(format!("it could not be reached: {e}")),
        Ok(Ok(_)) => host.entries().await.map_err(|e| e.to_string()),
    };
    let tools = listed.map(|entries| {
        entries
            .iter()
            .filter(|e| e.tool.server == plan.name)
            .map(|e| e.tool.clone())
            .collect()
    });
    host.shutdown().await;
    tools
}

/// Where an added server's entry goes.
#[derive(Clone, Debug)]
pub enum Target {
    /// The user's config file.
    User,
    /// The `.mcp.json` of this project folder.
    Project(PathBuf),
}

/// Pins `tools` as the baseline of `plan`'s server and writes its entry
/// into `target`'s file. Returns the file.
pub fn write(
    plan: &Plan,
    user: &Config,
    env: &Environment,
    target: &Target,
    tools: &[Arc<Tool>],
    vault_keys: Vec<String>,
) -> Result<PathBuf, String> {
    let (file, key) = match target {
        Target::Project(dir) => {
            let repository = user.trust.repository.clone().unwrap_or(dir.clone());
            let key = crate::pins::project_key(&repository, &plan.name);
            (dir.join(".mcp.json"), key)
        }
        Target::User => {
            let file = user
                .sources
                .iter()
                .find(|s| s.kind == SourceKind::User)
                .map(|s| s.path.clone())
                .unwrap_or_else(|| env.default_config_file());
            (file, crate::pins::user_key(&plan.name))
        }
    };
    let shared = SharedState::for_config(user, env).map_err(|e| e.to_string())?;
    let pins = Pins::of(user).sharing(shared);
    let baseline = ServerPins {
        server: plan.name.clone(),
        tools: tools
            .iter()
            .map(|t| (crate::pins::item_key(t), crate::pins::pinned(t)))
            .collect(),
        pending: Default::default(),
        keyed_by_kind: true,
    };
    pins.pin(key, baseline)?;
    edit::insert(
        &file,
        &plan.name,
        &plan.entry,
        vault_keys,
        &env.state_home(),
    )
    .map_err(|e| e.to_string())?;
    Ok(file)
}

/// Forgets the pins `write` kept for `name` (user's or project's), so that
/// a server later defined by hand under that name is not taken as added.
pub fn unpin(user: &Config, env: &Environment, name: &str) -> Result<(), String> {
    let shared = SharedState::for_config(user, env).map_err(|e| e.to_string())?;
    let mut keys = vec![crate::pins::user_key(name)];
    if let Some(repository) = &user.trust.repository {
        keys.push(crate::pins::project_key(repository, name));
    }
    Pins::of(user).sharing(shared).forget(&keys)
}

/// Approves the project entry of `name` that `mcpw add` just wrote: the
/// user approved its plan, so it does not wait again for `mcpw trust`.
/// `sources` must be the ones that read the project.
pub fn approve_project_entry(sources: &ConfigSources, name: &str) -> Result<(), String> {
    let cfg = config::load(sources);
    let trust = &cfg.trust;
    let (Some(repository), Some(waiting)) = (
        trust.repository.as_ref(),
        trust.waiting.iter().find(|w| w.name == name),
    ) else {
        return Ok(());
    };
    let now = crate::clock::now_ms();
    config::trust::update(&trust.file, |a| a.approve(repository, waiting, now))
        .map_err(|e| format!("{}: {e}", trust.file.display()))
}

/// An audit line that is not a call's: an install (`via` "install"), a
/// removal ("remove"), a task's end ("task"), of `server` by `client`.
pub fn record(
    via: &'static str,
    server: &str,
    client: &str,
    decision: Decision,
    reason: Option<String>,
) -> Record {
    Record {
        time: crate::audit::iso_time(crate::clock::now_ms()),
        session: None,
        client: client.to_string(),
        server: server.to_string(),
        tool: String::new(),
        resource: None,
        skill: None,
        prompt: None,
        via,
        decision,
        reason,
        duration_ms: 0,
        arguments_bytes: 0,
        result_bytes: 0,
        error: None,
        arguments: None::<serde_json::Map<String, Value>>,
    }
}

/// Writes `record` where `user`'s `settings.audit` says, for a command
/// that runs no host (a serving host writes through its own log).
pub fn audit(user: &Config, record: &Record) {
    if let Some(config) = user.settings.audit.clone() {
        AuditLog::new(config, None).write(record);
    }
}
