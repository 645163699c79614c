//! `mcpw demo`: the gateway at work on real MCP servers from npm, with a
//! built-in config that leaves the user's own config alone.

use anyhow::{Context, Result};
use mcpw::catalog::ConnectionState;
use mcpw::config::{self, Config, ConfigSources};
use mcpw::host::{Host, HostOptions};
use mcpw::plugin::SearchOptions;
use mcpw::present::Content;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";
const MEMORY: &str = "@modelcontextprotocol/server-memory@2026.8.31";

fn step(title: &str) -> Result<()> {
    outln!("\n── {title}");
    Ok(())
}

pub async fn demo(sources: &ConfigSources) -> Result<ExitCode> {
    let (file, cfg) = demo_config(sources)?;
    outln!("mcpw demo — config: {}", file.display());
    outln!(
        "(the first run fetches two reference servers from npm; later runs start from the cache)"
    );

    let mut options = HostOptions::for_env(&sources.env);
    options.maintenance = false;
    let host = Host::start(cfg, sources.env.clone(), options).await?;

    show_status(&host).await?;
    show_search(&host).await?;
    show_calls(&host).await?;
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Writes the demo's own config under the cache directory and loads it, so
/// that the user's config is neither read nor changed.
fn demo_config(sources: &ConfigSources) -> Result<(PathBuf, Config)> {
    let dir = sources.env.cache_dir().join("demo");
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let file = dir.join("mcp.json");
    let demo_config = json!({"mcpServers": {
        "everything": {"command": "npx", "args": ["-y", EVERYTHING, "stdio"]},
        "memory": {"command": "npx", "args": ["-y", MEMORY],
                   "env": {"MEMORY_FILE_PATH": dir.join("memory.json").display().to_string()}}
    }});
    std::fs::write(&file, serde_json::to_vec_pretty(&demo_config)?)
        .context("write the demo config")?;
    let cfg = config::load(&ConfigSources {
        user_value: None,
        user_file: Some(file.clone()),
        project_dir: None,
        env: sources.env.clone(),
    });
    anyhow::ensure!(!cfg.has_errors(), "demo config: {:?}", cfg.diagnostics);
    Ok((file, cfg))
}

/// Connects every server and shows how each fared and how many tools the
/// gateway offers in all.
async fn show_status(host: &Host) -> Result<()> {
    step("status (connecting every server)")?;
    host.manager()
        .connect_many(host.manager().server_names(), |_, _| {})
        .await;
    for s in host.status() {
        let mark = if s.state == ConnectionState::Connected {
            "✓"
        } else {
            "✗"
        };
        let err = s
            .last_error
            .as_deref()
            .map(|e| format!(": {}", e.lines().next().unwrap_or("")))
            .unwrap_or_default();
        outln!("{mark} {} ({} tools){err}", s.name, s.tool_count);
    }
    let entries = host.entries().await?;
    outln!("{} tools behind one gateway", entries.len());
    Ok(())
}

/// One search, answered by the default ranking guest.
async fn show_search(host: &Host) -> Result<()> {
    step("search \"sum of two numbers\" (default ranking guest, under wasmtime)")?;
    let hits = host
        .search(
            "sum of two numbers",
            SearchOptions {
                limit: 3,
                ..Default::default()
            },
        )
        .await?;
    for (entry, score) in &hits {
        outln!("  {score:>5}  {}", entry.name);
    }
    Ok(())
}

/// A few tool calls on both servers, each answer cut short; a failed call is
/// shown and the tour goes on.
async fn show_calls(host: &Host) -> Result<()> {
    let calls = [
        ("everything__get-sum", json!({"a": 2, "b": 3})),
        ("everything__echo", json!({"message": "hello through mcpw"})),
        (
            "memory__create_entities",
            json!({"entities": [{"name": "mcpw", "entityType": "project", "observations": ["demoed"]}]}),
        ),
        ("memory__search_nodes", json!({"query": "mcpw"})),
    ];
    for (tool, args) in calls {
        step(&format!("call {tool} {args}"))?;
        match host.call(tool, args.as_object().cloned()).await {
            Ok(out) => {
                for c in &out.content {
                    if let Content::Text { text } = c {
                        let short: String = text.chars().take(300).collect();
                        outln!("  {}", short.replace('\n', "\n  "));
                    }
                }
            }
            Err(e) => outln!("  error: {e}"),
        }
    }
    Ok(())
}
