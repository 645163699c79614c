//! The clients' files, read without starting anything: which servers each
//! client loads, which definition wins, and what it silently ignores.

use super::approval::{Approval, Approvals};
use super::clients::{self, Place};
use super::definitions::{self, Definition};
use super::finding::{Finding, Section, Severity};
use super::lists;
use crate::paths::Environment;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

type Files = BTreeMap<PathBuf, Result<Value, String>>;

/// Every finding of the seven clients' files, for the project at `project`.
pub(crate) fn check(env: &Environment, project: &Path) -> Vec<Finding> {
    let places = clients::places(env, project);
    let files = clients::read_files(&places);
    let mut out = unreadable(&places, &files);
    let approvals = Approvals::read(&files, &env.home(), project);
    // The definition each client uses, by (client, name): the first read.
    let mut winners: BTreeMap<(&str, String), &Place> = BTreeMap::new();
    for place in &places {
        let Some(Ok(root)) = files.get(&place.path) else {
            continue;
        };
        let servers = match clients::servers_at(root, place) {
            Ok(s) => s,
            Err(kind) => {
                out.push(
                    Finding::new(
                        Section::Files,
                        Severity::Blocking,
                        "not-an-object",
                        format!(
                            "`{}` is {kind}, not an object of servers: no server of it loads",
                            place.key()
                        ),
                        format!("write `{}` as {{\"NAME\": {{...}}}}", place.key()),
                    )
                    .client(place.client)
                    .file(&place.path),
                );
                continue;
            }
        };
        for (name, raw) in &servers {
            let def = Definition { place, name, raw };
            if let Some(f) = not_loaded(&def) {
                out.push(f);
                continue;
            }
            definitions::check(&def, env, project, &mut out);
            match waits(&def, &approvals) {
                // It takes no part in which definition wins.
                Some(f) => out.push(f),
                None => out.push(wins(&def, place, &mut winners)),
            }
        }
    }
    let mcp_json = mcp_json_servers(&files, &places);
    lists::check(
        &files,
        &lists::places(&env.home(), project),
        mcp_json.as_deref(),
        &mut out,
    );
    out
}

/// A file the client cannot parse loads none of its servers.
fn unreadable(places: &[Place], files: &Files) -> Vec<Finding> {
    let mut out = Vec::new();
    for (path, parsed) in files {
        let Err(why) = parsed else { continue };
        let clients: Vec<&str> = places
            .iter()
            .filter(|p| &p.path == path)
            .map(|p| p.client)
            .collect();
        out.push(
            Finding::new(
                Section::Files,
                Severity::Blocking,
                "parse-error",
                format!("cannot be parsed ({why}): the client loads none of its servers"),
                "fix the syntax where the message says",
            )
            .client(clients.first().copied().unwrap_or_default())
            .file(path),
        );
    }
    out
}

/// Why the client does not load this definition at all, if it does not.
fn not_loaded(def: &Definition<'_>) -> Option<Finding> {
    let base = |severity, check, message: String, remedy: &str| {
        Finding::new(Section::Files, severity, check, message, remedy)
            .server(def.name)
            .client(def.place.client)
            .file(&def.place.path)
    };
    if let Some((why, remedy)) = def.place.ignored {
        return Some(base(
            Severity::Blocking,
            "not-read",
            format!(
                "defined where {} does not read servers (`{}`): {why}, so it is silently ignored",
                def.place.client,
                def.place.key()
            ),
            remedy,
        ));
    }
    None
}

/// A project's `.mcp.json` server that Claude Code does not load until the
/// user approves it, or that a list disables; `None` when it loads.
fn waits(def: &Definition<'_>, approvals: &Approvals) -> Option<Finding> {
    if def.place.client != "claude-code" || def.place.scope != clients::Scope::Project {
        return None;
    }
    let name = def.name;
    let (severity, check, message, remedy) = match approvals.of(name) {
        Approval::Approved => return None,
        Approval::Pending => (
            Severity::Warning,
            "pending-approval",
            "waits for your approval: an interactive Claude Code session does not load it (a user-scope server of the same name is used instead), while `claude -p` does".to_string(),
            format!(
                "run `claude` in the project and approve it, or add \"{name}\" to `enabledMcpjsonServers` in .claude/settings.local.json"
            ),
        ),
        Approval::Rejected(file) => (
            Severity::Info,
            "disabled",
            format!(
                "disabled: `disabledMcpjsonServers` in {} names it, so Claude Code does not load it",
                file.display()
            ),
            String::new(),
        ),
    };
    Some(
        Finding::new(Section::Files, severity, check, message, remedy)
            .server(name)
            .client(def.place.client)
            .file(&def.place.path),
    )
}

/// Where the definition stands: the one its client uses, or shadowed by one
/// the client prefers.
fn wins<'p>(
    def: &Definition<'_>,
    place: &'p Place,
    winners: &mut BTreeMap<(&'p str, String), &'p Place>,
) -> Finding {
    let key = (place.client, def.name.to_string());
    let (message, remedy) = match winners.get(&key) {
        Some(winner) => (
            format!(
                "shadowed: {} uses the definition in {} (`{}`, {} scope) instead of this {} scope one",
                def.place.client,
                winner.path.display(),
                winner.key(),
                winner.scope.name(),
                def.place.scope.name()
            ),
            "remove one of the two definitions, so that the one you edit is the one used"
                .to_string(),
        ),
        None => {
            winners.insert(key, place);
            (
                format!(
                    "defined in `{}` ({} scope); {} uses this definition",
                    def.place.key(),
                    def.place.scope.name(),
                    def.place.client
                ),
                String::new(),
            )
        }
    };
    let severity = if remedy.is_empty() {
        Severity::Info
    } else {
        Severity::Warning
    };
    Finding::new(Section::Files, severity, "definition", message, remedy)
        .server(def.name)
        .client(def.place.client)
        .file(&def.place.path)
}

/// The names of the servers of every `.mcp.json` Claude Code reads for the
/// project; `None` when none is readable.
fn mcp_json_servers(files: &Files, places: &[Place]) -> Option<Vec<String>> {
    let mut names: Option<Vec<String>> = None;
    let mcp_json = places
        .iter()
        .filter(|p| p.client == "claude-code" && p.scope == clients::Scope::Project)
        .filter(|p| p.ignored.is_none());
    for place in mcp_json {
        let Some(Ok(root)) = files.get(&place.path) else {
            continue;
        };
        let servers = root.get("mcpServers").and_then(Value::as_object);
        let found = names.get_or_insert_with(Vec::new);
        found.extend(servers.into_iter().flat_map(|m| m.keys().cloned()));
    }
    names
}
