//! `mcpw plugin server`: an author's check of an MCP server component. It
//! starts the component in the sandbox (its own cache and state, so that the
//! user's are untouched), lists its tools, resources and prompts, and
//! reports what it reached for that mcpw refused (connections, requests).

use anyhow::{Context, Result, bail};
use mcpw::config::ConfigSources;
use mcpw::host::Host;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// The name the checked component is served under.
const NAME: &str = "component";

/// What to check.
pub(crate) struct Check {
    /// The component.
    pub file: PathBuf,
    /// Its permissions (JSON).
    pub permissions: Option<String>,
    /// A tool to call, and its arguments (JSON).
    pub call: Option<(String, Option<String>)>,
    /// Print JSON.
    pub json: bool,
}

impl Check {
    pub(crate) async fn run(self) -> Result<ExitCode> {
        let permissions: Value = match &self.permissions {
            Some(text) => serde_json::from_str(text).context("--permissions is not JSON")?,
            None => json!({}),
        };
        let call = match &self.call {
            Some((tool, args)) => {
                let args: Value = match args {
                    Some(text) => serde_json::from_str(text).context("--args is not JSON")?,
                    None => json!({}),
                };
                Some((format!("{NAME}__{tool}"), args.as_object().cloned()))
            }
            None => None,
        };
        check(self.file, permissions, call, self.json).await
    }
}

async fn check(
    file: PathBuf,
    permissions: Value,
    call: Option<(String, Option<serde_json::Map<String, Value>>)>,
    as_json: bool,
) -> Result<ExitCode> {
    let file = file
        .canonicalize()
        .with_context(|| format!("{}", file.display()))?;
    let scratch = tempfile::tempdir().context("a scratch folder for the check")?;
    let env = mcpw::paths::Environment::from_process()
        .with(
            "XDG_CACHE_HOME",
            scratch.path().join("cache").display().to_string(),
        )
        .with(
            "XDG_STATE_HOME",
            scratch.path().join("state").display().to_string(),
        );
    let definition = json!({"component": file, "permissions": permissions});
    let sources = ConfigSources {
        user_file: None,
        user_value: Some(json!({"mcpServers": {NAME: definition}})),
        project_dir: None,
        env,
    };
    let host = Host::from_sources(&sources)
        .await
        .context("the component's definition")?;
    let started = Instant::now();
    let connected = host.connect(NAME).await;
    let took = started.elapsed();
    let mut report = match &connected {
        Ok(_) => offered(&host).await?,
        Err(_) => json!({}),
    };
    if let (Ok(_), Some((tool, args))) = (&connected, call) {
        report["called"] = match host.call(&tool, args).await {
            Ok(outcome) => {
                json!({"tool": tool, "isError": outcome.is_error, "content": outcome.content})
            }
            Err(e) => json!({"tool": tool, "error": e.to_string()}),
        };
    }
    host.shutdown().await;
    let status = connected.context("the component did not start")?;
    report["startMs"] = json!(took.as_millis() as u64);
    report["protocolVersion"] = json!(status.protocol_version);
    report["refused"] = json!(mcpw::components::refusals());
    let peak = mcpw::components::memory_peak() as f64 / (1 << 20) as f64;
    report["memoryPeakMiB"] = json!((peak * 10.0).round() / 10.0);
    print(&report, as_json)?;
    Ok(ExitCode::SUCCESS)
}

/// What the component offers, as its server lists it.
async fn offered(host: &Host) -> Result<Value> {
    let snapshot = host.snapshot().await?;
    let tools: Vec<Value> = snapshot
        .entries()
        .iter()
        .filter(|e| e.tool.server == NAME && e.tool.kind == mcpw::catalog::ToolKind::Tool)
        .map(|e| json!({"name": e.tool.name, "description": e.tool.description}))
        .collect();
    let resources: Vec<&str> = snapshot
        .resources()
        .resources()
        .iter()
        .filter(|r| r.server == NAME)
        .map(|r| r.uri.as_str())
        .collect();
    let prompts: Vec<&str> = snapshot
        .prompts()
        .iter()
        .filter(|p| p.server == NAME)
        .map(|p| p.original.as_str())
        .collect();
    Ok(json!({"tools": tools, "resources": resources, "prompts": prompts}))
}

fn print(report: &Value, as_json: bool) -> Result<()> {
    if as_json {
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    let list = |key: &str| -> Vec<String> {
        let items = report[key].as_array().into_iter().flatten();
        items
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    println!(
        "started and listed in {} ms ({})",
        report["startMs"],
        report["protocolVersion"].as_str().unwrap_or("?")
    );
    let Some(tools) = report["tools"].as_array() else {
        bail!("no tools listed");
    };
    println!("{} tools:", tools.len());
    for tool in tools {
        let description = tool["description"].as_str().unwrap_or("");
        println!("  {}: {description}", tool["name"].as_str().unwrap_or("?"));
    }
    println!("resources: {}", list("resources").join(", "));
    println!("prompts: {}", list("prompts").join(", "));
    if let Some(called) = report.get("called") {
        println!(
            "called {}: {}",
            called["tool"],
            called.get("error").unwrap_or(&called["content"])
        );
    }
    println!("memory: {} MiB at most", report["memoryPeakMiB"]);
    match list("refused") {
        refused if refused.is_empty() => println!("refused: nothing"),
        refused => println!("refused: {}", refused.join("; ")),
    }
    Ok(())
}
