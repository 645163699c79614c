//! Project trust: a server that a project brings (its `.mcp.json` or
//! `.mcpw/mcp.json`, a client's project file such as `.vscode/mcp.json`, or an
//! import that only a project file asks for) is left out of the config, so
//! never started nor listed, until the user approves that exact definition.
//!
//! An approval is the hash of what decides what runs and where it connects
//! (command, args, env, cwd, url, headers, auth), so a changed definition
//! waits again. It holds for the repository, shared by its git worktrees, and
//! lives in mcpw's state folder, which no project file can name.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The approvals' file, in mcpw's state folder.
pub const FILE_NAME: &str = "trust.json";

/// `settings.projectServers`, read from the user file alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProjectServers {
    /// A project's servers wait for approval.
    #[default]
    Ask,
    /// A project's servers load as they are.
    Trust,
    /// A project's servers never load.
    Ignore,
}

impl ProjectServers {
    /// The setting's value, if it is one.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ask" => Some(Self::Ask),
            "trust" => Some(Self::Trust),
            "ignore" => Some(Self::Ignore),
            _ => None,
        }
    }
}

/// A project server left out until it is approved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    /// Its name.
    pub name: String,
    /// The file that defines it.
    pub file: PathBuf,
    /// What it would run or reach: its command line, or its URL.
    pub runs: String,
    /// The rest of what its approval covers, a line each, secrets masked:
    /// its environment, folder, headers, credentials and `approve`.
    pub covers: Vec<String>,
    /// The hash an approval names.
    pub hash: String,
    /// Whether another definition of it was approved before (it changed).
    pub changed: bool,
}

/// What project trust did to one config.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTrust {
    /// The setting in force.
    pub mode: ProjectServers,
    /// The repository approvals are kept for (its git folder, shared by its
    /// worktrees, or the project folder); none without a project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<PathBuf>,
    /// Where approvals are kept.
    pub file: PathBuf,
    /// Servers waiting for approval.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<Waiting>,
    /// Servers left out by `projectServers: "ignore"`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<String>,
    /// The command that approves them, with the options that make this
    /// config (`mcpw --config F --import K trust`).
    pub approve_with: String,
}

impl ProjectTrust {
    /// What waits and how to approve it, for a person; none when nothing waits.
    pub fn notice(&self) -> Option<String> {
        if self.waiting.is_empty() {
            return None;
        }
        let mut text = format!(
            "{} project server(s) wait for your approval, not started and their tools not listed:",
            self.waiting.len()
        );
        for w in &self.waiting {
            let changed = if w.changed {
                ", changed since approved"
            } else {
                ""
            };
            text.push_str(&format!(
                "
  {} ({}{changed}): {}",
                w.name,
                w.file.display(),
                w.runs
            ));
            for line in &w.covers {
                text.push_str(&format!("\n    {line}"));
            }
        }
        text.push_str(&format!(
            "
Read them, then approve with `{} --all` (or `{} NAME`).",
            self.approve_with, self.approve_with
        ));
        Some(text)
    }
}

/// Whether an approval covers the field `name` (see [`Field::approved`]);
/// a field mcpw does not know is covered.
///
/// [`Field::approved`]: super::fields::Field::approved
fn approved(name: &str) -> bool {
    super::fields::SERVER_FIELDS
        .iter()
        .find(|f| f.name == name)
        .is_none_or(|f| f.approved)
}

/// The hash an approval of `raw` (a definition as written) names. Fields it
/// does not know count: a field mcpw may read some day must not slip by.
pub fn definition_hash(raw: &Value) -> String {
    let covered: serde_json::Map<String, Value> = raw
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| approved(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let digest = Sha256::digest(canonical(&Value::Object(covered)).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// JSON with every object's keys in order: the same definition hashes the
/// same however its file orders it.
pub fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&m[k])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// What a definition runs or reaches, for a person deciding to approve it:
/// characters that would hide or rewrite what a terminal shows written out
/// ([`crate::visible`]).
pub fn what_it_runs(raw: &Value) -> String {
    crate::visible::shown(&command_line(raw))
}

fn command_line(raw: &Value) -> String {
    if let Some(url) = raw.get("url").and_then(Value::as_str) {
        return url.to_string();
    }
    if let Some(file) = raw.get("component").and_then(Value::as_str) {
        return format!("the WebAssembly component {file}, in mcpw's sandbox");
    }
    let command = raw.get("command").and_then(Value::as_str).unwrap_or("?");
    let args = raw.get("args").and_then(Value::as_array);
    let mut line = vec![command.to_string()];
    line.extend(args.into_iter().flatten().map(|a| match a.as_str() {
        Some(s) if !s.is_empty() && !s.contains(char::is_whitespace) => s.to_string(),
        // Quoted, but what hides is left for `what_it_runs` to write out
        // and warn of.
        Some(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
        None => a.to_string(),
    }));
    line.join(" ")
}

/// What an approval of `raw` covers besides [`what_it_runs`], a line per
/// field, secrets masked (references such as `${TOKEN}` and `!command`
/// shown as written: they say where a secret comes from, and a command
/// runs): `env: KEY=****`, `cwd: …`, `headers: Authorization=****`,
/// `auth: oauth`, `approve: "none"`, and any field mcpw does not know.
pub fn what_it_covers(raw: &Value) -> Vec<String> {
    let masked = super::show::masked_raw(raw);
    let Some(fields) = masked.as_object() else {
        return Vec::new();
    };
    let shown_elsewhere = ["command", "args", "url", "serverUrl", "component"];
    fields
        .iter()
        .filter(|(k, _)| approved(k) && !shown_elsewhere.contains(&k.as_str()))
        .map(|(k, v)| match v {
            Value::Object(map) if k == "env" || k == "headers" => {
                let pairs: Vec<String> = map
                    .iter()
                    .map(|(name, v)| format!("{name}={}", v.as_str().unwrap_or("****")))
                    .collect();
                format!("{k}: {}", pairs.join(", "))
            }
            Value::Object(granted) if k == "permissions" => permissions_line(granted),
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .map(|line| crate::visible::shown(&line))
        .collect()
}

/// A component's permissions as the user approves them: each grant, and
/// what is left at its default.
fn permissions_line(granted: &serde_json::Map<String, Value>) -> String {
    use super::permissions::{DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT_MS};
    let pairs = |key: &str| -> Vec<String> {
        let map = granted
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten();
        map.map(|(k, v)| format!("{k} {}", v.as_str().map_or(v.to_string(), str::to_string)))
            .collect()
    };
    let files = pairs("files");
    let network: Vec<String> = (granted
        .get("network")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .map(|h| h.as_str().map_or(h.to_string(), str::to_string))
    .collect();
    let env: Vec<String> = pairs("env")
        .iter()
        .map(|p| p.replacen(' ', "=", 1))
        .collect();
    let or_none = |v: Vec<String>| match v.is_empty() {
        true => "none".to_string(),
        false => v.join(", "),
    };
    let number =
        |key: &str, default: u64| granted.get(key).and_then(Value::as_u64).unwrap_or(default);
    format!(
        "permissions: files {}; network {}; env {}; memory {} MiB; {} ms a request",
        or_none(files),
        or_none(network),
        or_none(env),
        number("memoryMiB", DEFAULT_MEMORY_MIB as u64),
        number("timeoutMs", DEFAULT_TIMEOUT_MS),
    )
}

/// The repository `project` belongs to, as approvals name it: the git
/// folder its worktrees share (`git rev-parse --git-common-dir`), else the
/// project folder itself.
pub fn repository(project: &Path) -> PathBuf {
    let project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    for dir in project.ancestors() {
        let git = dir.join(".git");
        if git.is_dir() {
            return git;
        }
        if git.is_file() {
            // A worktree: `.git` names its folder inside the main `.git`,
            // whose `commondir` leads back to the main one.
            if let Some(common) = worktree_common_dir(&git) {
                return common;
            }
            return dir.to_path_buf();
        }
    }
    project
}

fn worktree_common_dir(git_file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_file).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let base = git_file.parent()?;
    let gitdir = base.join(gitdir);
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => gitdir.join(c.trim()),
        Err(_) => gitdir,
    };
    std::fs::canonicalize(common).ok()
}

/// Every approval, by repository and server name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approvals {
    /// Approvals by repository (its path) and server.
    #[serde(default)]
    pub repositories: BTreeMap<String, BTreeMap<String, Approval>>,
}

/// One approved definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The hash of the definition approved.
    pub hash: String,
    /// What it runs, as it was shown when approved.
    pub runs: String,
    /// When, in milliseconds since the Unix epoch.
    pub at: u64,
}

impl Approvals {
    /// The approvals at `path`; none when it is missing or unreadable (a
    /// broken file approves nothing).
    pub fn read(path: &Path) -> Approvals {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// The approval of `name` in `repository`, if any.
    pub fn of(&self, repository: &Path, name: &str) -> Option<&Approval> {
        self.repositories
            .get(&repository.display().to_string())?
            .get(name)
    }

    /// Approves `waiting` in `repository`.
    pub fn approve(&mut self, repository: &Path, waiting: &Waiting, at: u64) {
        self.repositories
            .entry(repository.display().to_string())
            .or_default()
            .insert(
                waiting.name.clone(),
                Approval {
                    hash: waiting.hash.clone(),
                    runs: waiting.runs.clone(),
                    at,
                },
            );
    }

    /// Takes back the approvals of `names` (all, when empty) in
    /// `repository`; returns the names taken back.
    pub fn revoke(&mut self, repository: &Path, names: &[String]) -> Vec<String> {
        let key = repository.display().to_string();
        let Some(servers) = self.repositories.get_mut(&key) else {
            return Vec::new();
        };
        let gone: Vec<String> = servers
            .keys()
            .filter(|n| names.is_empty() || names.contains(n))
            .cloned()
            .collect();
        for n in &gone {
            servers.remove(n);
        }
        if servers.is_empty() {
            self.repositories.remove(&key);
        }
        gone
    }
}

/// Changes the approvals at `file` with `f`, under the file's lock, on a
/// fresh read: approvals made by other processes meanwhile are kept.
pub fn update<R>(file: &Path, f: impl FnOnce(&mut Approvals) -> R) -> std::io::Result<R> {
    crate::state_file::update(
        file,
        crate::state_file::Access::Default,
        crate::file_lock::DEFAULT_WAIT,
        Approvals::read,
        f,
    )
}

/// Decides, server by server, whether a project's definitions load.
pub(super) struct Gate {
    pub(super) trust: ProjectTrust,
    approvals: Approvals,
}

/// What the gate says of one definition.
pub(super) enum Verdict {
    Load,
    Leave,
}

impl Gate {
    pub(super) fn new(
        mode: ProjectServers,
        project: Option<&Path>,
        file: PathBuf,
        approve_with: String,
    ) -> Gate {
        let approvals = match mode {
            ProjectServers::Ask => Approvals::read(&file),
            _ => Approvals::default(),
        };
        Gate {
            trust: ProjectTrust {
                mode,
                repository: project.map(repository),
                file,
                waiting: Vec::new(),
                ignored: Vec::new(),
                approve_with,
            },
            approvals,
        }
    }

    /// Whether the project definition `raw` of `name`, from `file`, loads;
    /// one that does not is recorded as waiting or ignored.
    pub(super) fn check(&mut self, name: &str, raw: &Value, file: &Path) -> Verdict {
        let shown = (what_it_runs(raw), what_it_covers(raw));
        self.check_shown(name, raw, file, shown)
    }

    /// [`Gate::check`] of a definition shown as `shown` (what it runs, and
    /// the rest of what its approval covers).
    pub(super) fn check_shown(
        &mut self,
        name: &str,
        raw: &Value,
        file: &Path,
        shown: (String, Vec<String>),
    ) -> Verdict {
        // A later project file's definition replaces an earlier one's.
        self.trust.waiting.retain(|w| w.name != name);
        match self.trust.mode {
            ProjectServers::Trust => return Verdict::Load,
            ProjectServers::Ignore => {
                if !self.trust.ignored.iter().any(|n| n == name) {
                    self.trust.ignored.push(name.to_string());
                }
                return Verdict::Leave;
            }
            ProjectServers::Ask => {}
        }
        let hash = definition_hash(raw);
        let repository = self.trust.repository.as_deref().unwrap_or(Path::new(""));
        let approved = self.approvals.of(repository, name);
        if approved.is_some_and(|a| a.hash == hash) {
            return Verdict::Load;
        }
        self.trust.waiting.push(Waiting {
            name: name.to_string(),
            file: file.to_path_buf(),
            runs: shown.0,
            covers: shown.1,
            hash,
            changed: approved.is_some(),
        });
        Verdict::Leave
    }
}

#[cfg(test)]
mod tests;
