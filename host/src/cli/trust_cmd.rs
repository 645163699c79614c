//! `mcpw trust`: the project's servers that wait for approval; approving
//! them, and taking approvals back.

use anyhow::{Context, Result, bail};
use mcpw::config::trust::{Approvals, ProjectServers, ProjectTrust};
use mcpw::config::{self, ConfigSources};
use mcpw::pins::{self, ServerPins};
use std::process::ExitCode;

#[derive(clap::Args)]
pub(crate) struct TrustArgs {
    /// Servers to approve (with --revoke: whose approval to take back). None:
    /// list what waits and what is approved.
    names: Vec<String>,
    /// Approve every server that waits.
    #[arg(long, conflicts_with = "revoke")]
    all: bool,
    /// Take approvals back: the named servers', or all of this repository's.
    #[arg(long)]
    revoke: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: TrustArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = config::load(sources);
    let trust = &cfg.trust;
    let pins = Pending::of(&cfg, sources)?;
    let repository = trust.repository.clone();
    let no_project =
        || anyhow::anyhow!("no project folder: project trust applies to a project's servers");
    if repository.is_none() && pins.servers.is_empty() {
        return Err(no_project());
    }
    if args.revoke {
        let repository = repository.ok_or_else(no_project)?;
        let names = args.names.clone();
        let gone = change(trust, |a| a.revoke(&repository, &names))?;
        return report(&args, &gone, "took back the approval of", trust);
    }
    if !args.all && args.names.is_empty() {
        return list(&args, trust, &Approvals::read(&trust.file), &pins);
    }
    let unknown: Vec<&String> = args
        .names
        .iter()
        .filter(|n| !trust.waiting.iter().any(|w| &w.name == *n) && !pins.has(n))
        .collect();
    if !unknown.is_empty() {
        let mut waiting: Vec<&str> = trust.waiting.iter().map(|w| w.name.as_str()).collect();
        waiting.extend(pins.servers());
        bail!(
            "not waiting for approval: {} (waiting: {})",
            join(unknown.iter().map(|n| n.as_str())),
            if waiting.is_empty() {
                "none".into()
            } else {
                join(waiting.into_iter())
            }
        );
    }
    let mut approved = pins.approve(&args.names, args.all)?;
    if let (ProjectServers::Ask, Some(repository)) = (trust.mode, &repository) {
        approved.extend(approve_definitions(&args, trust, repository)?);
    } else if approved.is_empty() {
        bail!(
            "settings.projectServers is \"{}\": no project server waits for approval",
            serde_json::to_value(trust.mode)?.as_str().unwrap_or("?")
        );
    }
    report(&args, &approved, "approved", trust)
}

/// Approves the waiting definitions `args` names (all with `--all`).
fn approve_definitions(
    args: &TrustArgs,
    trust: &ProjectTrust,
    repository: &std::path::Path,
) -> Result<Vec<String>> {
    let chosen: Vec<_> = trust
        .waiting
        .iter()
        .filter(|w| args.all || args.names.contains(&w.name))
        .cloned()
        .collect();
    let now = mcpw::clock::now_ms();
    change(trust, |a| {
        for w in &chosen {
            a.approve(repository, w, now);
        }
        chosen.iter().map(|w| w.name.clone()).collect::<Vec<_>>()
    })
}

/// The pinned servers of a config whose tools changed, or have new ones.
struct Pending {
    pins: pins::Pins,
    /// (server, key, its pins)
    servers: Vec<(String, String, ServerPins)>,
    /// The agent-facing name of each changed tool, by (server, item key).
    names: std::collections::HashMap<(String, String), String>,
}

impl Pending {
    /// Those of `cfg`, with the pins in the shared state `sources` name.
    fn of(cfg: &mcpw::config::Config, sources: &ConfigSources) -> Result<Pending> {
        let shared = mcpw::team_state::SharedState::for_config(cfg, &sources.env)?;
        let pins = pins::Pins::of(cfg).sharing(shared);
        let all = pins.read();
        let servers: Vec<_> = cfg
            .servers
            .iter()
            .filter_map(|s| {
                let key = pins::key_in(cfg, &s.name, &all)?;
                let p = all.servers.get(&key).filter(|p| !p.pending.is_empty())?;
                Some((s.name.clone(), key, p.clone()))
            })
            .collect();
        let names = agent_names(cfg, sources, &servers);
        Ok(Pending {
            pins,
            servers,
            names,
        })
    }

    fn has(&self, name: &str) -> bool {
        self.servers.iter().any(|(s, _, _)| s == name)
    }

    fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.iter().map(|(s, _, _)| s.as_str())
    }

    /// Approves the changed tools of `names` (every server's with `all`).
    fn approve(&self, names: &[String], all: bool) -> Result<Vec<String>> {
        // What `notice` showed, digest by digest: a definition that changed
        // since keeps waiting.
        let shown: Vec<pins::Shown> = self
            .servers
            .iter()
            .filter(|(s, _, _)| all || names.contains(s))
            .map(|(_, k, p)| pins::shown(k, p))
            .collect();
        if shown.is_empty() {
            return Ok(Vec::new());
        }
        let done = self.pins.approve(&shown).map_err(anyhow::Error::msg)?;
        Ok(done
            .into_iter()
            .map(|(server, tools)| {
                let tools: Vec<String> = tools.iter().map(|t| pins::shown_key(t)).collect();
                format!("{server}'s changed tools ({})", tools.join(", "))
            })
            .collect())
    }

    /// What changed, a server and its tools at a time, for a person.
    fn notice(&self) -> Option<String> {
        if self.servers.is_empty() {
            return None;
        }
        let mut text = String::from(
            "Tools of approved servers changed, and wait for your approval (the agent does not see them):",
        );
        for (server, _, p) in &self.servers {
            for (tool, now) in &p.pending {
                let own = format!("{server}/{}", pins::shown_key(tool));
                match self.names.get(&(server.clone(), tool.clone())) {
                    Some(name) => text.push_str(&format!("\n  {name} ({own}):")),
                    None => text.push_str(&format!("\n  {own}:")),
                }
                for line in pins::diff(p.tools.get(tool), now) {
                    text.push_str(&format!("\n    {line}"));
                }
            }
        }
        text.push_str("\nApprove with `mcpw trust NAME` (or `--all`).");
        Some(text)
    }
}

/// The names the agent would see the changed tools of `servers` under, as
/// the naming guest gives them; none when no tool waits or the guests
/// cannot be loaded (the server's own names are shown then).
fn agent_names(
    cfg: &mcpw::config::Config,
    sources: &ConfigSources,
    servers: &[(String, String, ServerPins)],
) -> std::collections::HashMap<(String, String), String> {
    let mut keys = Vec::new();
    let mut tools = Vec::new();
    for (server, _, p) in servers {
        // A skill has no agent-facing name: it is shown by its URI.
        for (key, pinned) in p.pending.iter().filter(|(k, _)| !k.starts_with("skill:")) {
            let name = pinned.definition["name"].as_str().unwrap_or_default();
            let mut tool = mcpw::catalog::Tool::new(server, name, "");
            if let Some(uri) = key.strip_prefix("resource:") {
                tool.kind = mcpw::catalog::ToolKind::Resource;
                tool.resource_uri = Some(uri.to_string());
            }
            keys.push((server.clone(), key.clone()));
            tools.push(tool);
        }
    }
    if tools.is_empty() {
        return Default::default();
    }
    let naming = mcpw::plugin::NamingOptions {
        prefix: cfg.settings.tool_prefix,
        reserved: Vec::new(),
    };
    let services = super::catalog_cmd::services(&tools);
    let entries = super::load_policy(cfg, sources, services, &[])
        .ok()
        .and_then(|policy| policy.entries(&tools, &naming).ok())
        .unwrap_or_default();
    let by_tool = |e: &mcpw::catalog::Entry| (e.tool.server.clone(), pins::item_key(&e.tool));
    entries
        .iter()
        .filter(|e| keys.contains(&by_tool(e)))
        .map(|e| (by_tool(e), mcpw::visible::escaped(&e.name)))
        .collect()
}

/// Changes the approvals' file under its lock.
fn change<R>(trust: &ProjectTrust, f: impl FnOnce(&mut Approvals) -> R) -> Result<R> {
    mcpw::config::trust::update(&trust.file, f)
        .with_context(|| format!("cannot write {}", trust.file.display()))
}

fn report(
    args: &TrustArgs,
    names: &[String],
    done: &str,
    trust: &ProjectTrust,
) -> Result<ExitCode> {
    if args.json {
        super::print_json(&serde_json::json!({"repository": trust.repository, done: names}))?;
    } else if names.is_empty() {
        outln!("Nothing to do.");
    } else {
        outln!(
            "{} {}.",
            capitalised(done),
            join(names.iter().map(String::as_str))
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn list(
    args: &TrustArgs,
    trust: &ProjectTrust,
    approvals: &Approvals,
    pins: &Pending,
) -> Result<ExitCode> {
    let repository = trust.repository.as_deref().unwrap_or("".as_ref());
    let approved = approvals
        .repositories
        .get(&repository.display().to_string())
        .cloned()
        .unwrap_or_default();
    if args.json {
        super::print_json(&serde_json::json!({
            "mode": trust.mode,
            "repository": repository,
            "waiting": trust.waiting,
            "approved": approved,
            "ignored": trust.ignored,
            "changedTools": pins.servers.iter().map(|(s, _, p)| (s.clone(), p.pending.keys().cloned().collect::<Vec<_>>())).collect::<std::collections::BTreeMap<_, _>>(),
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("Project servers of {}:", repository.display());
    match trust.notice() {
        Some(notice) => outln!("{notice}"),
        None => outln!("none waits for approval."),
    }
    for (name, a) in &approved {
        outln!("approved: {name}: {}", a.runs);
    }
    if let Some(notice) = pins.notice() {
        outln!("{notice}");
    }
    if !trust.ignored.is_empty() {
        outln!(
            "ignored (settings.projectServers is \"ignore\"): {}",
            join(trust.ignored.iter().map(String::as_str))
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn join<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
