//! `mcpw demo`: the gateway at work on real MCP servers from npm, with a
//! built-in config that leaves the user's own config alone: status, search
//! and calls from the Rust API, then an agent's session (code mode, a big
//! result, a guard, an approval), then where to look next.

mod session;
mod tour;

use anyhow::{Context, Result};
use mcpw::catalog::ConnectionState;
use mcpw::config::{self, Config, ConfigSources};
use mcpw::host::{Host, HostOptions};
use mcpw::plugin::SearchOptions;
use mcpw::present::Content;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";
const MEMORY: &str = "@modelcontextprotocol/server-memory@2026.8.31";

fn step(title: &str) -> Result<()> {
    outln!("\n── {title}");
    Ok(())
}

pub(crate) async fn demo(sources: &ConfigSources) -> Result<ExitCode> {
    let (file, cfg) = demo_config(sources)?;
    outln!("mcpw demo — config: {}", file.display());
    outln!(
        "(the first run fetches two reference servers from npm; later runs start from the cache)"
    );

    let mut options = HostOptions::for_env(&sources.env);
    options.maintenance = false;
    let host = Arc::new(Host::start(cfg, sources.env.clone(), options).await?);

    show_status(&host).await?;
    show_search(&host).await?;
    show_calls(&host).await?;
    let agent = session::Session::open(host.clone()).await?;
    let toured = agent_tour(&agent).await;
    agent.close().await;
    step("how search ranks now")?;
    outln!("  {}", host.search_description());
    host.shutdown().await;
    toured?;
    show_pointers()?;
    Ok(ExitCode::SUCCESS)
}

/// What an agent meets, in one session of the gateway.
async fn agent_tour(agent: &session::Session) -> Result<()> {
    outln!("\n(an agent's session with the gateway, from here on: an MCP client in this process)");
    tour::code_mode(agent).await?;
    tour::big_result(agent).await?;
    tour::guard(agent).await?;
    tour::approval(agent).await
}

/// Where to go from the demo.
fn show_pointers() -> Result<()> {
    step("where to look next")?;
    outln!(
        "  mcpw doctor                        why a client does not see a server, with the remedy"
    );
    outln!("  mcpw serve --http 127.0.0.1:8080   the live page at http://127.0.0.1:8080/");
    outln!("                                     (on stdio: mcpw serve --page prints its address)");
    outln!("  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 mcpw serve");
    outln!("                                     traces: OpenTelemetry spans over OTLP");
    Ok(())
}

/// Writes the demo's own config under the cache directory and loads it, so
/// that the user's config is neither read nor changed.
fn demo_config(sources: &ConfigSources) -> Result<(PathBuf, Config)> {
    let dir = sources.env.cache_dir().join("demo");
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let file = dir.join("mcp.json");
    let guard = dir.join("example-guard.wasm");
    std::fs::write(&guard, mcpw::guests::EXAMPLE_GUARD).context("write the example guard")?;
    // A budget, guards and an approval, each on one tool the tour calls;
    // code mode adds the `code` tool beside the others.
    let demo_config = json!({
        "mcpServers": {
            "everything": {"command": "npx", "args": ["-y", EVERYTHING, "stdio"],
                           "resultBudget": {tour::BIG: tour::BUDGET},
                           "rateLimit": {"get-sum": "1/h"}},
            "memory": {"command": "npx", "args": ["-y", MEMORY],
                       "env": {"MEMORY_FILE_PATH": dir.join("memory.json").display().to_string()},
                       "approve": {"delete_*": "all"}}
        },
        "settings": {"codeMode": true, "guards": [guard.display().to_string()]}
    });
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
    host.servers()
        .connect_many(host.servers().names(), |_, _| {})
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

/// One search, answered by the default ranking guest: by words and meaning
/// when the embedding model is here, else by words while it is fetched.
async fn show_search(host: &Host) -> Result<()> {
    step("search \"sum of two numbers\" (default ranking guest, under wasmtime)")?;
    let by_meaning = host.embedding_model_at_hand();
    if by_meaning {
        host.search_by_meaning_ready().await?;
    }
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
    match (by_meaning, host.embedding_status()) {
        (true, _) => outln!("  {}", host.search_description()),
        (false, Some(status)) => outln!(
            "  (ranked by words: the embedding model {} is not here yet; this first search fetches it in the background, and later searches rank by meaning too)",
            status.name
        ),
        (false, None) => outln!("  {}", host.search_description()),
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
                        // JSON on one line: the servers indent theirs.
                        let text = serde_json::from_str::<serde_json::Value>(text)
                            .map_or_else(|_| text.clone(), |v| v.to_string());
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
