//! Other MCP clients' configs, read from where those clients keep them and
//! normalized to mcpw's server format.

use super::Diagnostic;
use crate::paths::Environment;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// A client whose config can be imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportKind {
    /// Cursor: `~/.cursor/mcp.json`.
    Cursor,
    /// Claude Code: `~/.claude.json` (user servers and this project's servers).
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json` in its application config directory.
    ClaudeDesktop,
    /// Codex: `$CODEX_HOME/config.toml` (default `~/.codex`), `[mcp_servers.*]`.
    Codex,
    /// Windsurf: `~/.codeium/windsurf/mcp_config.json`.
    Windsurf,
    /// VS Code: the project's `.vscode/mcp.json` and the user's `mcp.json` (`servers` key).
    Vscode,
    /// pi: the project's `.pi/mcp.json`, then `mcp.json` in pi's agent dir
    /// (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`), as pi-mcp-adapter reads them.
    Pi,
}

impl ImportKind {
    /// Every importable client.
    pub const ALL: [ImportKind; 7] = [
        ImportKind::Cursor,
        ImportKind::ClaudeCode,
        ImportKind::ClaudeDesktop,
        ImportKind::Codex,
        ImportKind::Windsurf,
        ImportKind::Vscode,
        ImportKind::Pi,
    ];

    /// The name used in `imports`.
    pub fn name(self) -> &'static str {
        match self {
            ImportKind::Cursor => "cursor",
            ImportKind::ClaudeCode => "claude-code",
            ImportKind::ClaudeDesktop => "claude-desktop",
            ImportKind::Codex => "codex",
            ImportKind::Windsurf => "windsurf",
            ImportKind::Vscode => "vscode",
            ImportKind::Pi => "pi",
        }
    }

    /// Parses an `imports` entry.
    pub fn parse(name: &str) -> Option<ImportKind> {
        ImportKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The client's file inside the project, if it reads one: what a cloned
    /// repository brings, so its servers wait for the user's approval.
    pub fn project_file(self, project: &Path) -> Option<PathBuf> {
        match self {
            ImportKind::Vscode => Some(project.join(".vscode/mcp.json")),
            ImportKind::Pi => Some(project.join(".pi/mcp.json")),
            _ => None,
        }
    }

    /// Where this client keeps its config, most specific first.
    pub fn locations(self, env: &Environment, project: &Path) -> Vec<PathBuf> {
        let home = env.home();
        match self {
            ImportKind::Cursor => vec![home.join(".cursor/mcp.json")],
            ImportKind::ClaudeCode => vec![home.join(".claude.json")],
            ImportKind::ClaudeDesktop => {
                vec![app_config_dir(env).join("Claude/claude_desktop_config.json")]
            }
            ImportKind::Codex => {
                let dir = env
                    .get("CODEX_HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| home.join(".codex"));
                vec![dir.join("config.toml")]
            }
            ImportKind::Windsurf => vec![home.join(".codeium/windsurf/mcp_config.json")],
            ImportKind::Vscode => vec![
                project.join(".vscode/mcp.json"),
                app_config_dir(env).join("Code/User/mcp.json"),
            ],
            // The project's file first: for a name in both, the first one wins.
            ImportKind::Pi => vec![
                project.join(".pi/mcp.json"),
                env.get("PI_CODING_AGENT_DIR")
                    .filter(|d| !d.is_empty())
                    .map_or_else(|| home.join(".pi/agent"), PathBuf::from)
                    .join("mcp.json"),
            ],
        }
    }
}

/// The per-user application config directory of desktop apps on this platform.
fn app_config_dir(env: &Environment) -> PathBuf {
    if cfg!(target_os = "macos") {
        env.home().join("Library/Application Support")
    } else if cfg!(windows) {
        env.get("APPDATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| env.home().join("AppData/Roaming"))
    } else {
        env.config_home()
    }
}

/// One imported file and the servers found in it, normalized.
#[derive(Debug)]
pub struct ImportedFile {
    /// The file.
    pub path: PathBuf,
    /// Its servers, in file order.
    pub servers: Vec<(String, Value)>,
}

/// Reads every existing config file of `kind`. Unreadable files are reported.
pub fn read(
    kind: ImportKind,
    env: &Environment,
    project: &Path,
    diags: &mut Vec<Diagnostic>,
) -> Vec<ImportedFile> {
    let mut files = Vec::new();
    for path in kind.locations(env, project) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let servers = match kind {
            ImportKind::Codex => codex(&text, &path, diags),
            _ => match super::parse_json(&text, &path) {
                Ok(root) => json_servers(kind, &root, env, project),
                Err(d) => {
                    diags.push(d);
                    continue;
                }
            },
        };
        files.push(ImportedFile { path, servers });
    }
    files
}

fn entries(v: Option<&Value>) -> Vec<(String, Value)> {
    v.and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn json_servers(
    kind: ImportKind,
    root: &Value,
    env: &Environment,
    project: &Path,
) -> Vec<(String, Value)> {
    let mut servers = match kind {
        ImportKind::Vscode => entries(root.get("servers")),
        _ => entries(root.get("mcpServers")),
    };
    match kind {
        ImportKind::Pi => {
            for extra in entries(root.get("mcp-servers")) {
                if !servers.iter().any(|(n, _)| *n == extra.0) {
                    servers.push(extra);
                }
            }
        }
        ImportKind::ClaudeCode => {
            // Claude Code keeps a project's local-scope servers under the
            // project's key (its git root, else its folder).
            let key = claude_project_key(project);
            for extra in entries(
                root.get("projects")
                    .and_then(|p| p.get(&key))
                    .and_then(|p| p.get("mcpServers")),
            ) {
                servers.retain(|(n, _)| *n != extra.0);
                servers.push(extra);
            }
        }
        ImportKind::Windsurf => {
            for (_, v) in &mut servers {
                if let Some(obj) = v.as_object_mut()
                    && let Some(url) = obj.remove("serverUrl")
                {
                    obj.entry("url").or_insert(url);
                }
            }
        }
        ImportKind::Vscode => {
            for (_, v) in &mut servers {
                vscode_variables(v, env, project);
            }
        }
        _ => {}
    }
    servers
}

/// Rewrites VS Code's `${workspaceFolder}`, `${userHome}` and `${env:X}` into
/// values and mcpw's `${X}` syntax.
fn vscode_variables(v: &mut Value, env: &Environment, project: &Path) {
    match v {
        Value::String(s) => {
            *s = s
                .replace("${workspaceFolder}", &project.display().to_string())
                .replace("${userHome}", &env.home().display().to_string())
                .replace("${env:", "${");
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| vscode_variables(i, env, project)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|i| vscode_variables(i, env, project)),
        _ => {}
    }
}

/// Codex's TOML `[mcp_servers.NAME]` tables, mapped to mcpw fields.
fn codex(text: &str, path: &Path, diags: &mut Vec<Diagnostic>) -> Vec<(String, Value)> {
    let root: toml::Table = match toml::from_str(text) {
        Ok(t) => t,
        Err(e) => {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            diags.push(Diagnostic::parse(
                path,
                line,
                column,
                format!("invalid TOML: {}", e.message()),
            ));
            return Vec::new();
        }
    };
    let Some(toml::Value::Table(servers)) = root.get("mcp_servers") else {
        return Vec::new();
    };
    servers
        .iter()
        .map(|(name, def)| (name.clone(), codex_server(def)))
        .collect()
}

/// One Codex server table as an mcpw definition; fields mcpw has no use for
/// are left out.
fn codex_server(def: &toml::Value) -> Value {
    let json = serde_json::to_value(def).unwrap_or(Value::Null);
    let mut out = Map::new();
    if let Value::Object(fields) = json {
        for (key, value) in fields {
            codex_field(&mut out, key, value);
        }
    }
    Value::Object(out)
}

/// Adds one Codex field to `out` under its mcpw name, converting seconds to
/// milliseconds.
fn codex_field(out: &mut Map<String, Value>, key: String, value: Value) {
    let millis = |value: &Value| value.as_f64().map(|s| Value::from((s * 1000.0) as u64));
    match key.as_str() {
        "command" | "args" | "env" | "cwd" | "url" | "enabled" => {
            out.insert(key, value);
        }
        "bearer_token_env_var" => {
            out.insert("bearerTokenEnv".into(), value);
        }
        "http_headers" => merge_object(out, "headers", value),
        "env_http_headers" => merge_object(out, "headers", header_references(&value)),
        "startup_timeout_sec" => {
            if let Some(ms) = millis(&value) {
                out.insert("startupTimeoutMs".into(), ms);
            }
        }
        "startup_timeout_ms" => {
            out.insert("startupTimeoutMs".into(), value);
        }
        "disabled_tools" => {
            out.insert("excludeTools".into(), value);
        }
        "enabled_tools" => {
            out.insert("includeTools".into(), value);
        }
        "tool_timeout_sec" => {
            if let Some(ms) = millis(&value) {
                out.insert("callTimeoutMs".into(), ms);
            }
        }
        _ => {}
    }
}

/// Codex's `env_http_headers` (each header with the name of the environment
/// variable holding its value) as headers whose values are `${VAR}` references.
fn header_references(value: &Value) -> Value {
    let refs = value
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(h, var)| {
                    (
                        h.clone(),
                        Value::String(format!("${{{}}}", var.as_str().unwrap_or(""))),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Value::Object(refs)
}

fn merge_object(out: &mut Map<String, Value>, key: &str, value: Value) {
    let target = out.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if let (Value::Object(t), Value::Object(v)) = (target, value) {
        t.extend(v);
    }
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}

/// The key of `project` under `projects` in Claude Code's `~/.claude.json`:
/// the root of the git repository it is in (a `.git` in it or above), else
/// the folder itself, absolute as given (symbolic links not resolved).
pub fn claude_project_key(project: &std::path::Path) -> String {
    let absolute = std::path::absolute(project).unwrap_or_else(|_| project.to_path_buf());
    let root = absolute.ancestors().find(|d| d.join(".git").exists());
    root.unwrap_or(&absolute).display().to_string()
}
