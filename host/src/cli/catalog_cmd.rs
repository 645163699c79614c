//! `mcpw names` and `mcpw search` over a catalog file: the guests at work before
//! any server is connected.

use anyhow::{Context, Result, bail};
use clap::Args;
use mcpw::catalog::{self, ConnectionState, Entry, ServerStatus, Tool};
use mcpw::config::{ConfigSources, Lifecycle};
use mcpw::plugin::{
    IndexOptions, NamingOptions, PrefixMode, QueryMode, Role, SearchOptions, StaticServices,
};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Names the host keeps for its own tools.
const RESERVED: &[&str] = &["mcp", "ToolSearch", "mcp_servers"];

#[derive(Args)]
pub(crate) struct NamesArgs {
    /// A catalog file: {"servers":[{"name","tools":[{"name","description","inputSchema"}]}]}.
    #[arg(long, value_name = "FILE")]
    catalog: PathBuf,
    /// Prefix mode: server, short or none (default: settings.toolPrefix).
    #[arg(long, value_name = "MODE")]
    prefix: Option<String>,
    /// Use this naming guest instead of the configured one.
    #[arg(long, value_name = "FILE.wasm")]
    plugin: Option<PathBuf>,
    /// Print JSON: [{"server","tool","name"}].
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct SearchArgs {
    /// A catalog file (see `names`).
    #[arg(long, value_name = "FILE")]
    catalog: PathBuf,
    /// What to look for.
    query: String,
    /// Most results.
    #[arg(long, default_value_t = 5)]
    limit: u32,
    /// Treat the query as a case-insensitive regular expression.
    #[arg(long)]
    regex: bool,
    /// Only this server's tools.
    #[arg(long, value_name = "NAME")]
    server: Option<String>,
    /// A scoring profile the ranking guest offers (default: `settings.searchProfile`, else the guest's own default).
    #[arg(long)]
    profile: Option<String>,
    /// Use this ranking guest instead of the configured one.
    #[arg(long, value_name = "FILE.wasm")]
    plugin: Option<PathBuf>,
    /// The embedding model: a folder, a model id, or `none` for words alone (default: `settings.search.model`).
    #[arg(long, value_name = "FOLDER|ID")]
    model: Option<String>,
    /// Show each hit's parts: its word score and its cosine to the query
    /// (from the guest's `words` and `meaning` profiles, when it offers them).
    #[arg(long)]
    explain: bool,
    /// Print JSON: [{"server","tool","name","score"}], best first (with
    /// `--explain`, also "words" and "meaning").
    #[arg(long)]
    json: bool,
}

pub(super) fn services(tools: &[Tool]) -> StaticServices {
    let mut servers: Vec<ServerStatus> = Vec::new();
    for t in tools {
        match servers.iter_mut().find(|s| s.name == t.server) {
            Some(s) => s.tool_count += 1,
            None => servers.push(ServerStatus {
                name: t.server.clone(),
                state: ConnectionState::Cached,
                tool_count: 1,
                lifecycle: Lifecycle::Lazy,
                last_error: None,
                protocol_version: None,
                listen: None,
            }),
        }
    }
    StaticServices::new(servers, tools.to_vec())
}

pub(super) fn naming_options(
    prefix: Option<&str>,
    configured: PrefixMode,
) -> Result<NamingOptions> {
    let prefix = match prefix {
        None => configured,
        Some(p) => PrefixMode::parse(p)
            .with_context(|| format!("unknown prefix mode {p:?}: use server, short or none"))?,
    };
    Ok(NamingOptions {
        prefix,
        reserved: RESERVED.iter().map(|s| s.to_string()).collect(),
    })
}

pub(crate) fn names(args: NamesArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = super::load_config(sources);
    let tools = catalog::load_catalog(&args.catalog)?;
    let overrides: Vec<_> = args
        .plugin
        .iter()
        .map(|p| (Role::Naming, p.clone()))
        .collect();
    let policy = super::load_policy(&cfg, sources, services(&tools), &overrides)?;
    let entries = policy.entries(
        &tools,
        &naming_options(args.prefix.as_deref(), cfg.settings.tool_prefix)?,
    )?;
    if args.json {
        let out: Vec<_> = entries
            .iter()
            .map(|e| json!({"server": e.tool.server, "tool": e.tool.name, "name": e.name}))
            .collect();
        super::print_json(&out)?;
    } else {
        for e in &entries {
            outln!("{}  ({})", e.name, e.tool.id());
        }
    }
    report_hidden(&tools, &entries);
    Ok(ExitCode::SUCCESS)
}

/// Says on stderr which tools got no name: a server listing one name twice
/// (the later one is hidden), or a name mcpw keeps for itself.
fn report_hidden(tools: &[Tool], entries: &[Entry]) {
    let named: std::collections::HashMap<(&str, &str), usize> = entries
        .iter()
        .map(|e| ((e.tool.server.as_str(), e.tool.name.as_str()), 1))
        .collect();
    let mut listed: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    for t in tools {
        *listed
            .entry((t.server.as_str(), t.name.as_str()))
            .or_default() += 1;
    }
    for ((server, tool), n) in &listed {
        match named.get(&(*server, *tool)) {
            Some(_) if *n > 1 => eprintln!(
                "mcpw: {server}/{tool} is listed {n} times by its server: one is named, the rest are hidden"
            ),
            Some(_) => {}
            None => {
                eprintln!("mcpw: {server}/{tool} is hidden: its name is one mcpw keeps for itself")
            }
        }
    }
}

pub(crate) fn search(args: SearchArgs, sources: &ConfigSources) -> Result<ExitCode> {
    if args.query.trim().is_empty() {
        bail!("the search query is empty");
    }
    let cfg = super::load_config(sources);
    let tools = catalog::load_catalog(&args.catalog)?;
    let overrides: Vec<_> = args
        .plugin
        .iter()
        .map(|p| (Role::Ranking, p.clone()))
        .collect();
    let embeddings = super::embedding::open(
        &cfg,
        sources,
        args.model.as_deref(),
        super::embedding::Unnamed::AsServe,
    )?;
    let services = match &embeddings {
        Some(e) => e.services(services(&tools))?,
        None => services(&tools),
    };
    let policy = super::load_policy(&cfg, sources, services, &overrides)?;
    let entries: Arc<[Entry]> = policy
        .entries(&tools, &naming_options(None, cfg.settings.tool_prefix)?)?
        .into();
    let keywords: Vec<(String, Vec<String>)> = cfg
        .servers
        .iter()
        .filter(|s| !s.config.search_keywords.is_empty())
        .map(|s| (s.name.clone(), s.config.search_keywords.clone()))
        .collect();
    let profile = args.profile.clone().or(cfg.settings.search_profile.clone());
    let build = |profile: Option<String>| {
        let options = IndexOptions {
            server_keywords: keywords.clone(),
            profile,
        };
        match &embeddings {
            Some(e) => e.ready(|| Ok(policy.index(entries.clone(), options.clone())?)),
            None => Ok(policy.index(entries.clone(), options)?),
        }
    };
    let index = build(profile)?;
    let options = SearchOptions {
        limit: args.limit,
        mode: if args.regex {
            QueryMode::Regex
        } else {
            QueryMode::Keyword
        },
        server: args.server.clone(),
    };
    if let Some(s) = &args.server
        && !entries.iter().any(|e| &e.tool.server == s)
    {
        anyhow::bail!("--server {s:?}: the catalog has no server of that name");
    }
    let hits = index.search(&args.query, &options)?;
    // Each hit's part by the guest's one-signal profiles (none it lacks).
    let part = |profile: &str| -> Option<std::collections::HashMap<usize, f32>> {
        let index = build(Some(profile.to_string())).ok()?;
        index.scores(&args.query, &options).ok()
    };
    let (words, meaning) = if args.explain {
        (
            part("words"),
            embeddings.as_ref().and_then(|_| part("meaning")),
        )
    } else {
        (None, None)
    };
    print_hits(&args, &entries, &hits, &Parts { words, meaning })?;
    Ok(ExitCode::SUCCESS)
}

/// Each hit's part by the one-signal profiles, for `--explain`.
struct Parts {
    words: Option<std::collections::HashMap<usize, f32>>,
    meaning: Option<std::collections::HashMap<usize, f32>>,
}

impl Parts {
    fn of(part: &Option<std::collections::HashMap<usize, f32>>, i: usize) -> Option<f32> {
        part.as_ref().map(|p| p.get(&i).copied().unwrap_or(0.0))
    }
}

/// The hits of `mcpw search`, as JSON or as text.
fn print_hits(
    args: &SearchArgs,
    entries: &[Entry],
    hits: &[mcpw::plugin::roles::Hit],
    parts: &Parts,
) -> Result<()> {
    let (words, meaning) = (&parts.words, &parts.meaning);
    if args.json {
        let out: Vec<_> = hits
            .iter()
            .map(|h| {
                let e = &entries[h.index];
                let mut hit = json!({"server": e.tool.server, "tool": e.tool.name, "name": e.name, "score": h.score});
                if let Some(w) = Parts::of(words, h.index) {
                    hit["words"] = json!(w);
                }
                if let Some(m) = Parts::of(meaning, h.index) {
                    hit["meaning"] = json!(m);
                }
                hit
            })
            .collect();
        return super::print_json(&out);
    }
    if hits.is_empty() {
        outln!("No tools match {:?}.", args.query);
    }
    for (rank, h) in hits.iter().enumerate() {
        let e = &entries[h.index];
        let parts = match (Parts::of(words, h.index), Parts::of(meaning, h.index)) {
            (Some(w), Some(m)) => format!(": words {w:.2}, meaning {m:.3}"),
            (Some(w), None) => format!(": words {w:.2}"),
            _ => String::new(),
        };
        outln!("{:>2}. {}  (score {}{parts})", rank + 1, e.name, h.score);
        let desc = mcpw::present::truncate_at_word(&e.tool.description, 100);
        if !desc.is_empty() {
            outln!("    {desc}");
        }
    }
    Ok(())
}
