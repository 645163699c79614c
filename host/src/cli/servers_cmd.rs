//! Commands that talk to servers: status, tools, describe, call, connect, cache.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use mcpw::cache::{self, MetadataCache};
use mcpw::catalog::{ConnectionState, ListenReport, ServerStatus};
use mcpw::config::{ConfigSources, Exposure};
use mcpw::gateway::{Gateway, Session};
use mcpw::host::Host;
use mcpw::present::{self, Content};
use mcpw::servers::ServerError;
use serde_json::{Value, json};
use std::io::IsTerminal;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct StatusArgs {
    /// Connect every enabled server first, to report live status.
    #[arg(long)]
    connect: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct ToolsArgs {
    /// Only this server's tools.
    server: Option<String>,
    /// The tools `mcpw serve --exposure EXPOSURE` lists at start (proxy,
    /// tool-search, direct, code or auto), with their schemas, from the cache
    /// alone: no server is started. With --json: {"tools": [...], "uncached": [servers]}.
    #[arg(long, value_name = "EXPOSURE", conflicts_with = "server")]
    exposure: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct DescribeArgs {
    /// The tool's name (as `mcpw tools` shows it).
    tool: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct CallArgs {
    /// The tool's name (as `mcpw tools` shows it).
    tool: String,
    /// Arguments: a JSON object (default `{}`); `-` reads it from stdin.
    args: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Answer a server's questions (elicitation) from stdin, a line per
    /// field, an empty line taking the field's default; for scripts.
    #[arg(long)]
    answers_from_stdin: bool,
}

#[derive(Args)]
pub(crate) struct ConnectArgs {
    /// The server to (re)connect now.
    server: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
pub(crate) enum CacheCommand {
    /// What the metadata cache holds.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget cached metadata (of one server, or all).
    Clear {
        /// Only this server.
        server: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Progress lines for a person at a terminal; nothing when stderr is piped.
fn progress(name: &str, result: &Result<(), ServerError>) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    match result {
        Ok(()) => eprintln!("  ✓ {name}"),
        Err(e) => eprintln!("  ✗ {name}: {}", first_line(&e.to_string())),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn status_line(s: &ServerStatus, host: &Host) -> String {
    let lifecycle = match s.lifecycle {
        mcpw::config::Lifecycle::Lazy => "lazy",
        mcpw::config::Lifecycle::Eager => "eager",
        mcpw::config::Lifecycle::KeepAlive => "keep-alive",
    };
    match s.state {
        ConnectionState::Connected => format!(
            "✓ {} ({} tools, {lifecycle}, MCP {}{})",
            s.name,
            s.tool_count,
            s.protocol_version.as_deref().unwrap_or("?"),
            match &s.listen {
                Some(listen) if *listen != ListenReport::Listening =>
                    format!("; {}", listen.describe()),
                _ => String::new(),
            }
        ),
        ConnectionState::Cached => format!(
            "○ {} ({} tools, cached, not connected, {lifecycle})",
            s.name, s.tool_count
        ),
        ConnectionState::NotConnected => format!("○ {} (not connected, {lifecycle})", s.name),
        ConnectionState::Disabled => format!("- {} (disabled)", s.name),
        ConnectionState::NeedsAuth => {
            format!(
                "⚠ {} (needs auth: {})",
                s.name,
                first_line(s.last_error.as_deref().unwrap_or(""))
            )
        }
        ConnectionState::Failed => {
            let (ago, left) = host.servers().failure(&s.name).unwrap_or((0, 0));
            format!(
                "✗ {} (failed {ago}s ago, retry in {left}s: {})",
                s.name,
                first_line(s.last_error.as_deref().unwrap_or(""))
            )
        }
    }
}

/// `mcpw status --json`.
fn print_status_json(
    host: &mcpw::host::Host,
    servers: &[mcpw::catalog::ServerStatus],
) -> Result<()> {
    let list: Vec<Value> = servers
        .iter()
        .map(|s| {
            let mut v = serde_json::to_value(s).unwrap_or_default();
            if let Some((ago, left)) = host.servers().failure(&s.name) {
                v["failedSecondsAgo"] = json!(ago);
                v["retryInSeconds"] = json!(left);
            }
            v
        })
        .collect();
    super::print_json(
        &json!({"servers": list, "brokenGuests": host.broken_guests(), "search": host.embedding_status(),
        "waitingForApproval": host.config().trust.waiting}),
    )
}

/// How search ranks, in one line; words alone, and why, when the model
/// waits for the first search and is neither here nor fetchable.
async fn search_line(host: &mcpw::host::Host) -> String {
    let waiting = host
        .embedding_status()
        .is_some_and(|s| s.waiting_for_search && s.error.is_none());
    let out_of_reach = match waiting {
        true => mcpw::doctor::gateway::model_out_of_reach(&host.config(), host.env()).await,
        false => None,
    };
    match out_of_reach {
        Some(why) => format!("Search: by words only for now: {why}"),
        None => host.search_description(),
    }
}

/// `mcpw status` as text.
fn print_status(
    host: &mcpw::host::Host,
    servers: &[mcpw::catalog::ServerStatus],
    search: &str,
) -> Result<()> {
    let connected = servers
        .iter()
        .filter(|s| s.state == ConnectionState::Connected)
        .count();
    let tools: u32 = servers.iter().map(|s| s.tool_count).sum();
    outln!(
        "MCP: {connected}/{} servers, {tools} tools\n",
        servers.len()
    );
    for s in servers {
        outln!("{}", status_line(s, host));
    }
    if servers.is_empty() {
        // An empty gateway is mostly a config in an unexpected place (an
        // MCP client that does not pass $MCPW_CONFIG on, say).
        outln!("No servers configured. Looked in:");
        for source in &host.config().sources {
            let found = if source.found { "" } else { " (not found)" };
            outln!("  {}{found}", source.path.display());
        }
    }
    outln!("\n{search}");
    if let Some(notice) = host.config().trust.notice() {
        outln!("\n⚠ {notice}");
    }
    for g in host.broken_guests() {
        outln!(
            "⚠ the {} guest {} cannot be used ({}); the default guest fills that role",
            g.role.config_key(),
            g.path.display(),
            first_line(&g.error)
        );
    }
    Ok(())
}

pub(crate) async fn status(args: StatusArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let host = super::start(sources).await?;
    if args.connect {
        let names: Vec<String> = host
            .status()
            .into_iter()
            .filter(|s| s.state != ConnectionState::Disabled)
            .map(|s| s.name)
            .collect();
        host.servers().connect_many(names, progress).await;
        host.servers().listen_settled().await;
    }
    // Without --connect, status starts nothing: it reports what is cached and
    // what failed recently.
    // Counts of exposed tools (after excludeTools / includeTools): those of the snapshot.
    if let Err(e) = host.snapshot().await {
        tracing::warn!("tool counts are of listed tools: {e}");
    }
    let servers = host.status();
    // With a model, the index is built so the tool vectors' state is known
    // (cached, or being computed: a run started here goes on in `serve`).
    if host.embedding_status().is_some()
        && let Err(e) = host.prepare_search().await
    {
        tracing::warn!("cannot build the search index: {e}");
    }
    if args.json {
        print_status_json(&host, &servers)?;
    } else {
        let search = search_line(&host).await;
        print_status(&host, &servers, &search)?;
    }
    host.shutdown().await;
    // A config with errors (reported above) is a failed status.
    if host.config().has_errors() {
        eprintln!(
            "mcpw: the configuration has errors (see above; `mcpw config validate` lists them)"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn tools(args: ToolsArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let host = super::start(sources).await?;
    if let Some(exposure) = &args.exposure {
        return exposed_tools(host, exposure, args.json).await;
    }
    if let Some(server) = &args.server {
        if host.servers().server(server).is_none() {
            let trust = &host.config().trust;
            if trust.waiting.iter().any(|w| &w.name == server) {
                bail!(
                    "server \"{server}\" is a project's and waits for your approval: `{} {server}`",
                    trust.approve_with
                );
            }
            bail!("server \"{server}\" is not configured");
        }
        if !host.servers().has_tools(server) {
            let connect = || async {
                let r = host.servers().connect(server, false).await;
                r.map(|_| ()).map_err(mcpw::host::HostError::from)
            };
            match super::auth_cmd::with_login(&host, &sources.env, connect).await {
                Ok(()) => progress(server, &Ok(())),
                Err(mcpw::host::HostError::Lifecycle(e)) => progress(server, &Err(e)),
                Err(e) => eprintln!("mcpw: {e}"),
            }
        }
    } else {
        host.bootstrap(progress).await;
    }
    let entries = host.entries().await?;
    let shown: Vec<_> = entries
        .iter()
        .filter(|e| args.server.as_ref().is_none_or(|s| &e.tool.server == s))
        .collect();
    if args.json {
        let list: Vec<Value> = shown
            .iter()
            .map(|e| {
                json!({"name": e.name, "server": e.tool.server, "tool": e.tool.name,
                       "description": e.tool.description, "kind": e.tool.kind})
            })
            .collect();
        super::print_json(&list)?;
    } else {
        for e in &shown {
            let desc = present::truncate_at_word(&e.tool.description, 70);
            if desc.is_empty() {
                outln!("{}", e.name);
            } else {
                outln!("{}  - {desc}", e.name);
            }
        }
        let not_known = uncached(&host, args.server.as_deref());
        if !not_known.is_empty() {
            eprintln!(
                "tools unknown for: {} (see `mcpw status`)",
                not_known.join(", ")
            );
        }
        waiting_notice(&host);
    }
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Tells (on stderr) of the project's servers that wait for approval.
fn waiting_notice(host: &Host) {
    if let Some(notice) = host.config().trust.notice() {
        eprintln!("{notice}");
    }
}

/// Enabled servers (all, or `only`) whose tools are not known.
pub(crate) fn uncached(host: &Host, only: Option<&str>) -> Vec<String> {
    host.status()
        .into_iter()
        .filter(|s| only.is_none_or(|x| s.name == x))
        .filter(|s| s.state != ConnectionState::Disabled && !host.servers().has_tools(&s.name))
        .map(|s| s.name)
        .collect()
}

/// `mcpw tools --exposure`: what `serve` would list, from the cache.
async fn exposed_tools(host: Host, exposure: &str, json: bool) -> Result<ExitCode> {
    let exposure = Exposure::chosen(Some(exposure), None).map_err(|e| anyhow!(e))?;
    let host = std::sync::Arc::new(host);
    let session = Session::new(Gateway::from_cache(host.clone(), exposure));
    let tools = session
        .tool_list()
        .await
        .map_err(|e| anyhow!("{}", e.message))?;
    let uncached = uncached(&host, None);
    if json {
        super::print_json(&json!({"tools": tools, "uncached": uncached,
            "waitingForApproval": host.config().trust.waiting}))?;
    } else {
        for t in &tools {
            outln!("{}", t.name);
        }
        waiting_notice(&host);
        if !uncached.is_empty() {
            eprintln!(
                "not cached (listed once connected): {}",
                uncached.join(", ")
            );
        }
    }
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn describe(args: DescribeArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let host = super::start(sources).await?;
    let entry = host.resolve(&args.tool).await?;
    let t = &entry.tool;
    if args.json {
        super::print_json(
            &json!({"name": entry.name, "server": t.server, "tool": t.name, "title": t.title,
            "description": t.description, "inputSchema": t.input_schema, "annotations": t.annotations,
            "kind": t.kind, "resourceUri": t.resource_uri}),
        )?;
    } else {
        let text = present::describe(&entry);
        outln!("{text}");
    }
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

fn parse_args(raw: Option<String>) -> Result<Option<serde_json::Map<String, Value>>> {
    let text = match raw.as_deref() {
        None => return Ok(None),
        Some("-") => {
            std::io::read_to_string(std::io::stdin()).context("read arguments from stdin")?
        }
        Some(t) => t.to_string(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => bail!("arguments must be a JSON object, not {other}"),
        Err(e) => bail!("arguments are not valid JSON: {e}"),
    }
}

pub(crate) async fn call(args: CallArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let arguments = parse_args(args.args)?;
    let host = super::start(sources).await?;
    host.servers()
        .sessions()
        .set_local_elicitor(std::sync::Arc::new(super::elicit::CallElicitor {
            answers_from_stdin: args.answers_from_stdin,
        }));
    let approver = super::elicit::CallApprover {
        answers_from_stdin: args.answers_from_stdin,
    };
    let caller = mcpw::host::pipeline::Caller::local(std::sync::Arc::new(approver));
    let outcome = super::auth_cmd::with_login(&host, &sources.env, || {
        host.call_as(&caller, &args.tool, arguments.clone(), Default::default())
    })
    .await;
    host.shutdown().await;
    let outcome = outcome?;
    if args.json {
        super::print_json(&outcome)?;
    } else {
        for c in &outcome.content {
            match c {
                Content::Text { text } => outln!("{text}"),
                Content::Image { data, mime_type } => {
                    outln!("[image: {mime_type}, {} bytes base64]", data.len())
                }
            }
        }
        if let Some(s) = &outcome.structured_content
            && outcome.content.is_empty()
        {
            outln!("{s}");
        }
    }
    Ok(if outcome.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub(crate) async fn connect(args: ConnectArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let host = super::start(sources).await?;
    let result =
        super::auth_cmd::with_login(&host, &sources.env, || host.connect(&args.server)).await;
    let code = match result {
        Ok(status) => {
            let entries = host.entries().await?;
            let tools: Vec<_> = entries
                .iter()
                .filter(|e| e.tool.server == args.server)
                .collect();
            if args.json {
                let names: Vec<&str> = tools.iter().map(|e| e.name.as_str()).collect();
                super::print_json(
                    &json!({"server": args.server, "status": status, "tools": names, "count": names.len()}),
                )?;
            } else {
                outln!("{} ({} tools):\n", args.server, tools.len());
                for e in tools {
                    outln!(
                        "{}",
                        present::bullet(&e.shown_name(), &e.tool.description, 50)
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcpw: failed to connect to \"{}\": {e}", args.server);
            ExitCode::FAILURE
        }
    };
    host.shutdown().await;
    Ok(code)
}

pub(crate) fn cache(cmd: CacheCommand, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = super::load_config(sources);
    let shared = mcpw::team_state::SharedState::for_config(&cfg, &sources.env)?;
    let cache = MetadataCache::new(sources.env.cache_dir().join("metadata.json"))
        .with_shared(shared.clone());
    match cmd {
        CacheCommand::Show { json } => {
            let now = mcpw::clock::now_ms();
            let entries = cache.read();
            let rows: Vec<Value> = entries
                .iter()
                .map(|(name, e)| {
                    let current = cfg.server(name).map(|s| cache::config_hash(&s.raw));
                    let state = match current {
                        None => "not configured",
                        Some(h) if e.is_valid(&h, now) => "valid",
                        Some(h) if h != e.config_hash => "stale (config changed)",
                        Some(_) => "expired",
                    };
                    json!({"server": name, "tools": e.tools.len(), "resources": e.resources.len(),
                           "ageSeconds": now.saturating_sub(e.cached_at) / 1000, "state": state})
                })
                .collect();
            let shared = shared.as_ref().map(|s| s.location());
            if json {
                super::print_json(
                    &json!({"path": cache.path(), "shared": shared, "servers": rows}),
                )?;
            } else {
                outln!("{}", cache.path().display());
                if let Some(location) = shared {
                    outln!("and shared state {location}");
                }
                if rows.is_empty() {
                    outln!("(empty)");
                }
                for r in rows {
                    outln!(
                        "  {}: {} tools, {} resources, {}s old, {}",
                        r["server"].as_str().unwrap_or(""),
                        r["tools"],
                        r["resources"],
                        r["ageSeconds"],
                        r["state"].as_str().unwrap_or("")
                    );
                }
            }
        }
        CacheCommand::Clear { server, json } => {
            let n = match server {
                Some(s) => {
                    let held = cache.read().contains_key(&s);
                    cache.update([(s, None)].into())?;
                    held as usize
                }
                None => cache.clear()?,
            };
            if json {
                super::print_json(&json!({"cleared": n}))?;
            } else {
                outln!("cleared {n} cache entr{}", if n == 1 { "y" } else { "ies" });
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub(crate) struct StatsArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `mcpw stats`: calls per tool, as recorded with `settings.captureStats`.
pub(crate) fn stats(args: StatsArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = super::load_config(sources);
    let setting = cfg.settings.capture_stats.as_ref();
    let shared = mcpw::team_state::SharedState::for_config(&cfg, &sources.env)?;
    let config = mcpw::stats::StatsConfig::from_setting(setting, &sources.env.state_dir())
        .unwrap_or_else(|| mcpw::stats::StatsConfig {
            path: sources.env.state_dir().join("stats.json"),
            flush_delay: Default::default(),
            shared: None,
        })
        .with_shared(shared);
    let path = config.location();
    let all = config.load().context("cannot read the statistics")?;
    if args.json {
        let rows: Vec<Value> = all
            .iter()
            .map(|(name, s)| {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                v["name"] = json!(name);
                v["meanMs"] = json!(s.mean_ms());
                v
            })
            .collect();
        super::print_json(&json!({"path": path, "tools": rows}))?;
        return Ok(ExitCode::SUCCESS);
    }
    if all.is_empty() {
        let hint = if setting.is_none() {
            " (enable with \"settings\": {\"captureStats\": true})"
        } else {
            ""
        };
        outln!("no calls recorded in {path}{hint}");
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<48} {:>7} {:>7} {:>10} {:>10} {:>12}",
        "tool",
        "calls",
        "errors",
        "mean ms",
        "max ms",
        "bytes"
    );
    for (name, s) in &all {
        outln!(
            "{name:<48} {:>7} {:>7} {:>10.1} {:>10.1} {:>12}",
            s.calls,
            s.errors,
            s.mean_ms(),
            s.max_ms,
            s.bytes
        );
    }
    Ok(ExitCode::SUCCESS)
}
