//! `mcpw plugin check`.

use anyhow::{Context, Result};
use clap::Subcommand;
use mcpw::config::ConfigSources;
use mcpw::plugin::inspect::GuestReport;
use mcpw::plugin::{Capability, Grants, GuestModule, LoadOptions, Role, StaticServices};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Subcommand)]
pub(crate) enum PluginCommand {
    /// Check an MCP server component: start it in the sandbox under PERMISSIONS, list what it
    /// offers, and report what it reached for and was refused.
    Server {
        /// The component (`wasi:cli/command` or `wasi:http/proxy`).
        file: PathBuf,
        /// Its permissions, as in a server definition (JSON; default: nothing granted).
        #[arg(long, value_name = "JSON")]
        permissions: Option<String>,
        /// Call this tool once it is listed (its server's own name), to see what it reaches for.
        #[arg(long, value_name = "TOOL")]
        call: Option<String>,
        /// The call's arguments (a JSON object).
        #[arg(long, value_name = "JSON", requires = "call")]
        args: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the conformance suite under the production sandbox; exit 1 on any failure.
    Test {
        /// The guest component.
        file: PathBuf,
        /// Only this role: naming, directTools or ranking.
        #[arg(long)]
        role: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search quality and speed of a ranking guest (default: the embedded one).
    Bench {
        /// The guest component; omit for the default guest.
        file: Option<PathBuf>,
        /// A catalog file (`{"servers":[{"name","tools":[...]}]}`).
        #[arg(long, value_name = "FILE")]
        catalog: PathBuf,
        /// Labelled queries (`[{"query","relevant":["server/tool"]}]`) or
        /// tasks (`[{"query","needs":[["server/tool"],...]}]`).
        #[arg(long, value_name = "FILE")]
        queries: PathBuf,
        /// A scoring profile the guest offers.
        #[arg(long)]
        profile: Option<String>,
        /// Repeat the catalog N times (servers renamed) to measure speed at scale.
        #[arg(long, default_value_t = 1)]
        scale: usize,
        /// The embedding model: a folder, or a model id (default:
        /// `settings.search.model`). With one, each signal is reported too.
        #[arg(long, value_name = "FOLDER|ID")]
        model: Option<String>,
        /// Also list each query or task whose R@5 is under 1, worst first,
        /// with what its top 5 missed.
        #[arg(long)]
        misses: bool,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Roles a guest implements, imports it requests, and which are granted.
    Check {
        /// The guest component.
        file: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(cmd: PluginCommand, sources: &ConfigSources) -> Result<ExitCode> {
    match cmd {
        PluginCommand::Check { file, json } => check(file, json, sources),
        PluginCommand::Server {
            file,
            permissions,
            call,
            args,
            json,
        } => {
            let check = super::component_cmd::Check {
                file,
                permissions,
                call: call.map(|tool| (tool, args)),
                json,
            };
            super::with_runtime(check.run())
        }
        PluginCommand::Test { file, role, json } => test(file, role, json, sources),
        PluginCommand::Bench {
            file,
            catalog,
            queries,
            profile,
            scale,
            model,
            misses,
            json,
        } => bench(
            file,
            catalog,
            queries,
            profile,
            (scale, model.as_deref()),
            Output { misses, json },
            sources,
        ),
    }
}

pub(super) fn load_options(sources: &ConfigSources, limits: mcpw::plugin::Limits) -> LoadOptions {
    LoadOptions {
        limits,
        grants: Grants::none(),
        services: Arc::new(StaticServices::default()),
        cache: super::compile_cache(sources),
    }
}

fn test(
    file: PathBuf,
    role: Option<String>,
    json: bool,
    sources: &ConfigSources,
) -> Result<ExitCode> {
    let only =
        match role.as_deref() {
            None => None,
            Some(r) => Some(Role::parse(r).with_context(|| {
                format!("unknown role {r:?}: use naming, directTools or ranking")
            })?),
        };
    let cfg = super::load_config(sources);
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let checks = mcpw::plugin::conformance::run(
        &file.display().to_string(),
        &bytes,
        load_options(sources, cfg.settings.plugins.limits),
        only,
    )?;
    let failed = checks.iter().filter(|c| !c.passed()).count();
    if json {
        super::print_json(
            &serde_json::json!({"guest": file.display().to_string(), "passed": failed == 0, "checks": checks}),
        )?;
    } else {
        for c in &checks {
            outln!("{c}");
        }
        outln!(
            "{} checks: {} passed, {failed} failed",
            checks.len(),
            checks.len() - failed
        );
    }
    Ok(if failed == 0 && !checks.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What a benchmark prints: with the misses or not, as JSON or text.
#[derive(Clone, Copy)]
struct Output {
    misses: bool,
    json: bool,
}

#[allow(clippy::too_many_arguments)]
fn bench(
    file: Option<PathBuf>,
    catalog: PathBuf,
    queries: PathBuf,
    profile: Option<String>,
    (scale, model): (usize, Option<&str>),
    output: Output,
    sources: &ConfigSources,
) -> Result<ExitCode> {
    let cfg = super::load_config(sources);
    let embeddings =
        super::embedding::open(&cfg, sources, model, super::embedding::Unnamed::Configured)?;
    let tools = mcpw::bench::scale(&mcpw::catalog::load_catalog(&catalog)?, scale);
    let queries_path = queries;
    let queries = mcpw::bench::load_labelled(&queries_path)?;
    // Names come from the default naming guest, so every ranking guest sees the same entries.
    let policy = mcpw::plugin::Policy::load(
        &mcpw::plugin::PolicyConfig {
            cache: super::compile_cache(sources),
            ..Default::default()
        },
        Arc::new(StaticServices::default()),
    )?;
    let entries: Arc<[mcpw::catalog::Entry]> = policy
        .entries(&tools, &mcpw::plugin::NamingOptions::default())?
        .into();
    let (name, ranker) = bench_ranker(file.as_deref(), sources, &cfg, embeddings.as_ref())?;
    for warning in mcpw::bench::check_labelled(&queries, &entries)
        .map_err(|e| anyhow::anyhow!("{}: {e}", queries_path.display()))?
    {
        tracing::warn!("{}: {warning}", queries_path.display());
    }
    let run = |profile: Option<String>| -> Result<mcpw::bench::BenchReport> {
        let options = mcpw::plugin::IndexOptions {
            profile,
            ..Default::default()
        };
        let run = || {
            Ok(mcpw::bench::run(
                &ranker,
                entries.clone(),
                &queries,
                options.clone(),
            )?)
        };
        match &embeddings {
            // The vectors first (once, then cached), so the index is built with them.
            Some(e) => {
                e.ready(|| Ok(ranker.index(entries.clone(), options.clone())?))?;
                run()
            }
            None => run(),
        }
    };
    let report = run(profile.clone())?;
    // With a model and no profile asked for: each signal alone as well,
    // where the guest offers the profiles.
    let signals: Vec<(&str, mcpw::bench::BenchReport)> = match (&embeddings, &profile) {
        (Some(_), None) => ["words", "meaning"]
            .into_iter()
            .filter_map(|p| run(Some(p.to_string())).ok().map(|r| (p, r)))
            .collect(),
        _ => Vec::new(),
    };
    let model = embeddings.as_ref().map(|e| e.model()).transpose()?;
    let model = model.as_ref().map(|m| m.id.as_str());
    let misses = output
        .misses
        .then(|| mcpw::bench::misses(&queries, &report.ranked));
    let shown = Bench {
        name: &name,
        tools: entries.len(),
        queries: queries.len(),
        kind: queries.kind(),
        model,
    };
    print_bench(&shown, &report, &signals, misses.as_deref(), output.json)?;
    Ok(ExitCode::SUCCESS)
}

/// The ranking guest a benchmark runs: the one in `file`, or the default
/// one; with the model's embeddings when there is a model.
fn bench_ranker(
    file: Option<&std::path::Path>,
    sources: &ConfigSources,
    cfg: &mcpw::config::Config,
    embeddings: Option<&super::embedding::CliEmbeddings>,
) -> Result<(String, Arc<mcpw::plugin::Ranker>)> {
    let (name, bytes) = match file {
        Some(f) => (
            f.display().to_string(),
            std::fs::read(f).with_context(|| format!("cannot read {}", f.display()))?,
        ),
        None => ("default".to_string(), mcpw::plugin::DEFAULT_GUEST.to_vec()),
    };
    let mut options = load_options(sources, cfg.settings.plugins.limits);
    if let Some(e) = embeddings {
        options.services = Arc::new(e.services(StaticServices::default())?);
        options.grants = Grants::default_for(Role::Ranking);
    }
    let module = GuestModule::load(&name, &bytes, options)?;
    Ok((name, mcpw::plugin::Ranker::new(module)?))
}

/// What a benchmark ran: the guest, the catalog's size, the queries or
/// tasks and the model.
struct Bench<'a> {
    name: &'a str,
    tools: usize,
    queries: usize,
    kind: &'a str,
    model: Option<&'a str>,
}

/// A benchmark's report, each signal's alone and the misses when asked
/// for, as JSON or text.
fn print_bench(
    bench: &Bench<'_>,
    report: &mcpw::bench::BenchReport,
    signals: &[(&str, mcpw::bench::BenchReport)],
    misses: Option<&[mcpw::bench::Miss]>,
    json: bool,
) -> Result<()> {
    if json {
        let mut out = serde_json::to_value(report)?;
        if let Some(model) = bench.model {
            out["model"] = serde_json::json!(model);
        }
        if !signals.is_empty() {
            out["signals"] = serde_json::Value::Object(
                signals
                    .iter()
                    .map(|(p, r)| Ok((p.to_string(), serde_json::to_value(r)?)))
                    .collect::<Result<_>>()?,
            );
        }
        if let Some(misses) = misses {
            out["misses"] = serde_json::to_value(misses)?;
        }
        return super::print_json(&out);
    }
    outln!(
        "guest {}: {} tools, {} {}",
        bench.name,
        bench.tools,
        bench.queries,
        bench.kind
    );
    if let Some(model) = bench.model {
        outln!("  model {model}");
    }
    print_report("", report)?;
    for (p, r) in signals {
        print_report(&format!("{p} alone: "), r)?;
    }
    for m in misses.unwrap_or_default() {
        outln!("R@5 {:.2}  {}", m.r_at_5, m.query);
        for need in &m.missed {
            outln!("    missed: {}", need.join(" | "));
        }
        outln!("    top 5:  {}", m.top_5.join(", "));
    }
    Ok(())
}

fn print_report(label: &str, report: &mcpw::bench::BenchReport) -> Result<()> {
    match report.mrr_at_10 {
        Some(mrr) => outln!(
            "  {label}R@1 {:.3}   R@5 {:.3}   MRR@10 {mrr:.3}   nDCG@10 {:.3}",
            report.r_at_1,
            report.r_at_5,
            report.ndcg_at_10
        ),
        None => outln!(
            "  {label}R@1 {:.3}   R@5 {:.3}   nDCG@10 {:.3}",
            report.r_at_1,
            report.r_at_5,
            report.ndcg_at_10
        ),
    }
    if let Some(by) = report.r_at_5_by_needs {
        let group = |g: mcpw::bench::NeedsGroup| match g.r_at_5 {
            Some(r) => format!("{r:.3} ({} tasks)", g.tasks),
            None => "- (no task)".to_string(),
        };
        outln!(
            "  {label}R@5 by needs: 1 need {}   2+ needs {}",
            group(by.one_need),
            group(by.two_or_more_needs)
        );
    }
    outln!(
        "  {label}index {:.1} ms   query p50 {:.0} µs   p99 {:.0} µs",
        report.index_ms,
        report.query_p50_us,
        report.query_p99_us
    );
    Ok(())
}

fn check(file: PathBuf, json: bool, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = super::load_config(sources);
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let options = load_options(sources, cfg.settings.plugins.limits);
    let module = GuestModule::load(&file.display().to_string(), &bytes, options)?;
    let report = GuestReport::of(&module);
    let imports = import_statuses(&report, &cfg.settings.plugins.grants);
    if json {
        super::print_json(&serde_json::json!({
            "guest": file.display().to_string(),
            "roles": report.roles.iter().map(|r| r.config_key()).collect::<Vec<_>>(),
            "imports": imports.iter().map(|(n, s)| serde_json::json!({"name": n, "status": s})).collect::<Vec<_>>(),
            "exports": report.exports,
        }))?;
    } else {
        print_check(&file, bytes.len(), &report, &imports)?;
    }
    Ok(if report.roles.is_empty() {
        eprintln!("mcpw: {} implements no mcpw role", file.display());
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// For each import of the guest, whether its roles may use it, so that a
/// missing grant shows before the guest is configured.
fn import_statuses(report: &GuestReport, grants: &BTreeMap<Role, Grants>) -> Vec<(String, String)> {
    let grants = |role: Role| {
        grants
            .get(&role)
            .copied()
            .unwrap_or_else(|| mcpw::config::Grants::default_for(role))
    };
    report
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
                None if name.starts_with("mcpw:plugin/toolbox@") => {
                    "the script role's own: the session's tools".into()
                }
                None if name.starts_with("wasi:") => {
                    "sandboxed: no files, env, args, stdio or network".into()
                }
                None => "unknown to this host".into(),
            };
            (name.clone(), status)
        })
        .collect()
}

/// The text form of `plugin check`: every role, implemented or not, then
/// every import with its status.
fn print_check(
    file: &Path,
    size: usize,
    report: &GuestReport,
    imports: &[(String, String)],
) -> Result<()> {
    outln!("guest: {} ({} KiB)", file.display(), size.div_ceil(1024));
    outln!("roles:");
    for role in Role::ALL {
        let mark = if report.roles.contains(&role) {
            "yes"
        } else {
            "no "
        };
        // The guest's own name of the export (`@0.1.0` for a guest of that
        // version), else the one the host looks for.
        let host_name = role.export_name();
        let family = format!("mcpw:plugin/{role}@");
        let name = report
            .exports
            .iter()
            .find(|e| e.starts_with(&family))
            .unwrap_or(&host_name);
        outln!("  {mark}  {role:<13} ({name})");
    }
    outln!("imports:");
    for (name, status) in imports {
        outln!("  {name:<40} {status}");
    }
    Ok(())
}

/// `Ok(capability)` for a grantable mcpw import, `Err(())` for `log`, `None` otherwise.
fn capability_of(import: &str) -> Option<Result<Capability, ()>> {
    let iface = import.strip_prefix("mcpw:plugin/")?.split('@').next()?;
    if iface == "log" || iface == "types" {
        return Some(Err(()));
    }
    Capability::parse(iface).map(Ok)
}
