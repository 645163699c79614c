//! Where each of the seven clients keeps MCP servers, and whether it loads
//! servers from there: a table, each row saying what the client does.

use crate::config::ImportKind;
use crate::paths::Environment;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Whose servers a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The user's, in every project.
    User,
    /// The user's, in this project only.
    Local,
    /// The project's, shared with whoever clones it.
    Project,
}

impl Scope {
    /// The scope's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Local => "local",
            Scope::Project => "project",
        }
    }
}

/// One place a client's servers may be written.
#[derive(Clone, Debug)]
pub struct Place {
    /// The client, as `imports` names it.
    pub client: &'static str,
    /// The file.
    pub path: PathBuf,
    /// The keys leading to the object of servers.
    pub at: Vec<String>,
    /// Whose servers they are.
    pub scope: Scope,
    /// `None` when the client loads servers from here; else why it does not,
    /// and where they belong.
    pub ignored: Option<(&'static str, &'static str)>,
}

impl Place {
    fn read(client: &'static str, path: PathBuf, at: &[&str], scope: Scope) -> Place {
        Place {
            client,
            path,
            at: at.iter().map(|k| k.to_string()).collect(),
            scope,
            ignored: None,
        }
    }

    fn ignored(mut self, why: &'static str, remedy: &'static str) -> Place {
        self.ignored = Some((why, remedy));
        self
    }

    /// The keys, as a person reads them (`projects.<dir>.mcpServers`).
    pub fn key(&self) -> String {
        self.at.join(".")
    }
}

const CLAUDE_NOT_HERE: &str = "Claude Code does not read `mcpServers` from its settings files";
const CLAUDE_MOVE: &str = "move it to ~/.claude.json (user scope, or `projects.<dir>.mcpServers` for one project) or to the project's .mcp.json, or add it with `claude mcp add`";
const VSCODE_KEY: &str = "VS Code reads servers from `servers` in this file, not from `mcpServers`";
const VSCODE_MOVE: &str = "rename the key `mcpServers` to `servers`";

/// Every place, each client's in the order it prefers them: for a name
/// defined in more than one, the first place the client reads wins.
pub fn places(env: &Environment, project: &Path) -> Vec<Place> {
    let loc = |kind: ImportKind, i: usize| kind.locations(env, project).swap_remove(i);
    let mut all = vec![Place::read(
        "cursor",
        loc(ImportKind::Cursor, 0),
        &["mcpServers"],
        Scope::User,
    )];
    all.extend(claude_code(env, project));
    all.push(Place::read(
        "claude-desktop",
        loc(ImportKind::ClaudeDesktop, 0),
        &["mcpServers"],
        Scope::User,
    ));
    // Codex: TOML tables `[mcp_servers.NAME]`.
    let codex = loc(ImportKind::Codex, 0);
    all.push(Place::read("codex", codex, &["mcp_servers"], Scope::User));
    let windsurf = loc(ImportKind::Windsurf, 0);
    all.push(Place::read(
        "windsurf",
        windsurf,
        &["mcpServers"],
        Scope::User,
    ));
    // VS Code: `servers`, in the workspace's file, then the user's; the key
    // other clients use is not read.
    for (i, scope) in [(0, Scope::Project), (1, Scope::User)] {
        let file = loc(ImportKind::Vscode, i);
        all.push(Place::read("vscode", file.clone(), &["servers"], scope));
        all.push(
            Place::read("vscode", file, &["mcpServers"], scope).ignored(VSCODE_KEY, VSCODE_MOVE),
        );
    }
    // pi (pi-mcp-adapter): the project's file first, then the agent dir's;
    // `mcpServers`, then `mcp-servers`.
    for (i, scope) in [(0, Scope::Project), (1, Scope::User)] {
        for key in ["mcpServers", "mcp-servers"] {
            all.push(Place::read("pi", loc(ImportKind::Pi, i), &[key], scope));
        }
    }
    all
}

/// Claude Code's places (as Claude Code 2.1 reads them): local scope beats
/// project scope beats user scope.
fn claude_code(env: &Environment, project: &Path) -> Vec<Place> {
    let claude_json = ImportKind::ClaudeCode
        .locations(env, project)
        .swap_remove(0);
    let project_key = crate::config::imports::claude_project_key(project);
    let local = ["projects", project_key.as_str(), "mcpServers"];
    let mut all = vec![Place::read(
        "claude-code",
        claude_json.clone(),
        &local,
        Scope::Local,
    )];
    // The project scope: the `.mcp.json` of the folder it runs in and of
    // each folder above it (not the file system's root), the closer winning;
    // a git repository plays no part.
    let dir = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    let above = dir.ancestors().skip(1).filter(|d| d.parent().is_some());
    for file in std::iter::once(project.to_path_buf()).chain(above.map(Path::to_path_buf)) {
        all.push(Place::read(
            "claude-code",
            file.join(".mcp.json"),
            &["mcpServers"],
            Scope::Project,
        ));
    }
    all.push(Place::read(
        "claude-code",
        claude_json,
        &["mcpServers"],
        Scope::User,
    ));
    // Its settings files hold permissions and the `.mcp.json` approval
    // lists, never servers: a server there is silently ignored.
    for (file, scope) in [
        (env.home().join(".claude/settings.json"), Scope::User),
        (project.join(".claude/settings.json"), Scope::Project),
        (project.join(".claude/settings.local.json"), Scope::Local),
    ] {
        all.push(
            Place::read("claude-code", file, &["mcpServers"], scope)
                .ignored(CLAUDE_NOT_HERE, CLAUDE_MOVE),
        );
    }
    all
}

/// The files of the places, each read and parsed once: a parsed file, or
/// why it could not be. Missing files are left out.
pub fn read_files(places: &[Place]) -> BTreeMap<PathBuf, Result<Value, String>> {
    let mut files = BTreeMap::new();
    for place in places {
        if files.contains_key(&place.path) {
            continue;
        }
        let text = match std::fs::read_to_string(&place.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                files.insert(place.path.clone(), Err(format!("cannot read: {e}")));
                continue;
            }
        };
        files.insert(place.path.clone(), parse(&place.path, &text));
    }
    files
}

fn parse(path: &Path, text: &str) -> Result<Value, String> {
    if path.extension().is_some_and(|e| e == "toml") {
        let table: toml::Table = toml::from_str(text).map_err(|e| format!("invalid TOML: {e}"))?;
        return serde_json::to_value(table).map_err(|e| e.to_string());
    }
    crate::config::parse_json(text, path).map_err(|d| match (d.line, d.column) {
        (Some(l), Some(c)) => format!("line {l}, column {c}: {}", d.message),
        _ => d.message,
    })
}

/// The servers at `place` in its parsed file, in file order; `Err` names
/// what the keys lead to when it is not an object.
pub fn servers_at(root: &Value, place: &Place) -> Result<Vec<(String, Value)>, String> {
    let mut v = root;
    for key in &place.at {
        match v.get(key) {
            Some(next) => v = next,
            None => return Ok(Vec::new()),
        }
    }
    match v {
        Value::Object(map) => Ok(map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        Value::Null => Ok(Vec::new()),
        other => Err(crate::config::validate::kind(other).to_string()),
    }
}
