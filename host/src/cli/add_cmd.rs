//! `mcpw find`, `mcpw add` and `mcpw remove`: servers found in the MCP
//! Registry (searched offline, by words and by meaning, over a cached copy)
//! or named as a package or URL; added as an exact plan the user approves,
//! after one trial connection; removed leaving the file as it was.

mod ask;

use anyhow::{Context, Result, bail};
use clap::Args;
use mcpw::audit::Decision;
use mcpw::catalog::Tool;
use mcpw::config::{Config, ConfigSources};
use mcpw::install::apply::{self, Target};
use mcpw::install::flow::{Approved, Flow, FlowError};
use mcpw::install::{self, Plan, edit};
use mcpw::registry::{Cached, Listed};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Where to look in the registry.
#[derive(Args, Clone)]
struct RegistryArgs {
    /// The registry's base URL (default: `settings.registry`, else the official one).
    #[arg(long, value_name = "URL")]
    registry: Option<String>,
    /// Also deprecated and deleted entries.
    #[arg(long)]
    all: bool,
    /// The embedding model for search by meaning (default: `settings.search.model`).
    #[arg(long, value_name = "FOLDER|ID")]
    model: Option<String>,
}

#[derive(Args)]
pub(crate) struct FindArgs {
    /// What the server should do.
    query: String,
    /// Most results.
    #[arg(long, default_value_t = 5)]
    limit: u32,
    #[command(flatten)]
    registry: RegistryArgs,
    /// Print JSON: [{"name","version","status","description","score"}].
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct AddArgs {
    /// A registry name (`io.github.user/weather`) or what to search it for;
    /// `npm:PACKAGE@VERSION`, `pypi:PACKAGE==VERSION`, an https:// URL, or
    /// `oci:IMAGE@sha256:DIGEST` (shown, not run).
    source: String,
    /// The server's name in the config (default: from the source).
    #[arg(long)]
    name: Option<String>,
    /// Into the project's `.mcp.json` instead of your config.
    #[arg(long)]
    project: bool,
    /// A value the entry needs, as FIELD=VALUE (`env.REGION=eu`, `url.host=…`); repeatable.
    /// Secrets are asked for (without echo), or read from standard input.
    #[arg(long = "set", value_name = "FIELD=VALUE")]
    set: Vec<String>,
    /// Approve the plan without being asked (needed without a terminal).
    #[arg(long)]
    yes: bool,
    /// How long the trial connection may take, in milliseconds.
    #[arg(long, default_value_t = 120_000)]
    timeout_ms: u64,
    #[command(flatten)]
    registry: RegistryArgs,
    /// Print the plan and the tools as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct RemoveArgs {
    /// A server `mcpw add` added.
    name: String,
}

/// The install flow of `cfg`, with the registry `args` name.
fn flow<'a>(args: &RegistryArgs, cfg: &'a Config, sources: &'a ConfigSources) -> Flow<'a> {
    Flow {
        config: cfg,
        env: &sources.env,
        registry: args.registry.clone(),
        all: args.all,
        from: mcpw::config::Provenance::Registry,
    }
}

/// The registry's entries ranked for `query` by the ranking guest (and the
/// embedding model, when one is configured), best first.
fn rank<'a>(
    listed: &[&'a Listed],
    query: &str,
    limit: u32,
    args: &RegistryArgs,
    (cfg, sources): (&Config, &ConfigSources),
) -> Result<Vec<(&'a Listed, f32)>> {
    let tools = install::find::as_tools(listed);
    let embeddings = super::embedding::open(
        cfg,
        sources,
        args.model.as_deref(),
        super::embedding::Unnamed::AsServe,
    )?;
    let services = super::catalog_cmd::services(&tools);
    let services = match &embeddings {
        Some(e) => e.services(services)?,
        None => services,
    };
    let policy = super::load_policy(cfg, sources, services, &[])?;
    let hits = match &embeddings {
        Some(e) => e.ready(|| Ok(install::find::rank(&policy, listed, query, limit)?))?,
        None => install::find::rank(&policy, listed, query, limit)?,
    };
    Ok(hits
        .into_iter()
        .map(|(i, score)| (listed[i], score))
        .collect())
}

pub(crate) fn find(args: FindArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = super::load_config(sources);
    // A runtime of its own: ranking afterwards runs guests that block.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the async runtime")?;
    let (cached, stale) = runtime.block_on(flow(&args.registry, &cfg, sources).registry());
    if let Some(why) = stale {
        eprintln!("mcpw: {why}");
    }
    let listed = cached.latest(args.registry.all);
    let hits = rank(
        &listed,
        &args.query,
        args.limit,
        &args.registry,
        (&cfg, sources),
    )?;
    if args.json {
        let out: Vec<Value> = hits
            .iter()
            .map(|(l, score)| {
                json!({"name": l.name(), "version": l.version(), "status": l.status(),
                       "description": l.server["description"], "score": score})
            })
            .collect();
        super::print_json(&out)?;
    } else if hits.is_empty() {
        outln!("nothing in the registry matches {:?}", args.query);
    } else {
        for (l, _) in &hits {
            let status = match l.status() {
                "active" => String::new(),
                other => format!(" ({other})"),
            };
            outln!("{} {}{status}", l.name(), l.version());
            outln!("    {}", l.text());
        }
        outln!("\nadd one with: mcpw add NAME");
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn add(args: AddArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = super::load_config(sources);
    super::with_runtime(added(args, &cfg, sources))
}

/// The plan for `args.source`, approved, given its values, tried, and written.
async fn added(args: AddArgs, cfg: &Config, sources: &ConfigSources) -> Result<ExitCode> {
    let flow = flow(&args.registry, cfg, sources);
    let best = |cached: Cached, query: String| {
        let (registry, cfg, sources) = (args.registry.clone(), cfg.clone(), sources.clone());
        async move {
            let ranked = tokio::task::spawn_blocking(move || {
                let listed = cached.latest(registry.all);
                let hits = rank(&listed, &query, 1, &registry, (&cfg, &sources)).ok()?;
                hits.first().map(|(l, _)| (*l).clone())
            });
            ranked.await.ok().flatten()
        }
    };
    let said = |line: String| eprintln!("mcpw: {line}");
    let planned = flow
        .plan(&args.source, args.name.as_deref(), best, said)
        .await;
    let mut plan = match planned {
        Err(e @ FlowError::Inactive { .. }) => bail!("{e} (add it anyway with --all)"),
        other => other?,
    };
    if let Some(s) = cfg.server(&plan.name) {
        bail!(
            "a server named \"{}\" is configured already ({}): choose another with --name",
            plan.name,
            s.origin.path.display()
        );
    }
    for line in plan.describe() {
        eprintln!("  {line}");
    }
    if plan.not_run.is_some() {
        eprintln!("mcpw: nothing was written");
        return Ok(ExitCode::SUCCESS);
    }
    approve(&args)?;
    let vault = mcpw::auth::vault(cfg, &sources.env);
    let vault_keys = fill(&mut plan, &args, &vault).await?;
    let target = match args.project {
        true => Target::Project(sources.project_dir.clone().context("no project folder")?),
        false => Target::User,
    };
    let by = Approved {
        client: "",
        decision: if args.yes {
            Decision::Allowed
        } else {
            Decision::Asked
        },
        audit: &|line| apply::audit(cfg, line),
    };
    let deadline = Duration::from_millis(args.timeout_ms);
    let (plan, done) = flow
        .carry_out(plan, &target, vault_keys, deadline, by)
        .await?;
    said_added(&args, &plan, &done.file, &done.tools)
}

/// The user's approval of the plan: `--yes`, or asked at a terminal.
fn approve(args: &AddArgs) -> Result<()> {
    if args.yes {
        return Ok(());
    }
    if !ask::interactive() {
        bail!("nothing was added: approve the plan with --yes when there is no terminal to ask at");
    }
    if !ask::confirm("Add it?")? {
        bail!("nothing was added");
    }
    Ok(())
}

/// Gives the plan its values: secrets into the vault (their keys returned),
/// the rest into the entry.
async fn fill(
    plan: &mut Plan,
    args: &AddArgs,
    vault: &mcpw::auth::store::Vault,
) -> Result<Vec<String>> {
    let given: Vec<(String, String)> = args
        .set
        .iter()
        .map(|s| match s.split_once('=') {
            Some((f, v)) => Ok((f.to_string(), v.to_string())),
            None => bail!("--set {s:?}: expected FIELD=VALUE"),
        })
        .collect::<Result<_>>()?;
    let mut keys = Vec::new();
    for input in plan.inputs.clone() {
        let value = ask::value(&input, &given)?;
        if input.secret {
            let key = mcpw::secrets::vault_key(&input.vault_name(&plan.name));
            vault
                .save(&key, &Value::String(value))
                .await
                .with_context(|| format!("keep {} in the vault", input.field))?;
            keys.push(key);
        } else {
            plan.fill(&input, &value);
        }
    }
    Ok(keys)
}

/// Says what was added.
fn said_added(
    args: &AddArgs,
    plan: &Plan,
    file: &std::path::Path,
    tools: &[Arc<Tool>],
) -> Result<ExitCode> {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    if args.json {
        super::print_json(
            &json!({"added": plan.name, "file": file, "plan": plan, "tools": names}),
        )?;
    } else {
        outln!(
            "added \"{}\" to {}: {} tools ({})",
            plan.name,
            file.display(),
            names.len(),
            names.join(", ")
        );
        outln!(
            "a running `mcpw serve` picks it up by itself; remove it with `mcpw remove {}`",
            plan.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn remove(args: RemoveArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let receipt = edit::remove(&args.name, &sources.env.state_home())?;
    let cfg = super::load_config(sources);
    apply::unpin(&cfg, &sources.env, &args.name).map_err(anyhow::Error::msg)?;
    let vault = mcpw::auth::vault(&cfg, &sources.env);
    for key in &receipt.vault_keys {
        vault
            .clear(key)
            .await
            .with_context(|| format!("forget {key} in the vault"))?;
    }
    let line = apply::record("remove", &args.name, "", Decision::Allowed, None);
    apply::audit(&cfg, &line);
    let file: PathBuf = receipt.file;
    outln!("removed \"{}\" from {}", args.name, file.display());
    Ok(ExitCode::SUCCESS)
}
