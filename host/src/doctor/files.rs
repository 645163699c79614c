//! The clients' files, read without starting anything: which servers each
//! client loads, which definition wins, and what it silently ignores.

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
pub fn check(env: &Environment, project: &Path) -> Vec<Finding> {
    let places = clients::places(env, project);
    let files = clients::read_files(&places);
    let mut out = unreadable(&places, &files);
    let in_git = in_git_repository(project);
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
            if let Some(f) = not_loaded(&def, in_git) {
                out.push(f);
                continue;
            }
            definitions::check(&def, env, project, &mut out);
            out.push(wins(&def, place, &mut winners));
        }
    }
    let mcp_json = mcp_json_servers(&files, project);
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
fn not_loaded(def: &Definition<'_>, in_git: bool) -> Option<Finding> {
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
    if def.place.needs_git && !in_git {
        // The rule checked: the file is in no git repository (no `.git` in
        // its folder or above). mcpw itself reads it from the current folder.
        return Some(base(
            Severity::Warning,
            "outside-git",
            format!(
                "the project file is not inside a git repository (no .git in {} or above); {} finds a project's servers at the root of the repository it runs in, so it may not load this one (mcpw does: it reads the current folder's)",
                def.place
                    .path
                    .parent()
                    .map(Path::display)
                    .map(|d| d.to_string())
                    .unwrap_or_default(),
                def.place.client
            ),
            "run `git init` in the project (or open the project from its repository), or define the server at user scope (`claude mcp add --scope user`)",
        ));
    }
    None
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

/// The names of the project's `.mcp.json` servers, when it is readable.
fn mcp_json_servers(files: &Files, project: &Path) -> Option<Vec<String>> {
    let root = files.get(&project.join(".mcp.json"))?.as_ref().ok()?;
    let servers = root.get("mcpServers").and_then(Value::as_object);
    Some(
        servers
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default(),
    )
}

/// Is `dir` inside a git repository (a `.git` folder or file in it or above)?
fn in_git_repository(dir: &Path) -> bool {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors().any(|d| d.join(".git").exists())
}
