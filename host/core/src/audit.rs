//! The audit trail: one JSON line per call a client asked for, allowed or
//! not: when, which session and client token, which tool, the decision and
//! why, how long it took, how big its arguments and result were, and its
//! error. Arguments themselves are left out unless `audit.arguments` says
//! otherwise, and are then those the guards let through. Lines go to stderr or to a file that rotates by size; each
//! replica of a team writes a file of its own.

use serde::Serialize;
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `settings.audit`, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditConfig {
    /// Where lines go.
    pub to: AuditTarget,
    /// A file past this many bytes is rotated.
    pub max_bytes: u64,
    /// Rotated files kept (`audit.jsonl.1` is the newest).
    pub keep: u32,
    /// Whether lines carry the call's arguments.
    pub arguments: bool,
}

/// Where audit lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditTarget {
    /// Standard error.
    Stderr,
    /// A file (a replica's name is added to it in a team).
    File(PathBuf),
}

impl AuditConfig {
    /// Reads `settings.audit`: `true` (a file in `state_dir`), `"stderr"`,
    /// or `{path, maxMb, keep, arguments}`; `None` for off.
    pub fn from_setting(v: Option<&Value>, state_dir: &Path) -> Option<AuditConfig> {
        let default_file = || AuditTarget::File(state_dir.join("audit.jsonl"));
        let base = |to| AuditConfig {
            to,
            max_bytes: 10 << 20,
            keep: 5,
            arguments: false,
        };
        match v? {
            Value::Bool(true) => Some(base(default_file())),
            Value::String(s) if s == "stderr" => Some(base(AuditTarget::Stderr)),
            Value::Object(o) => {
                let to = match o.get("path").and_then(Value::as_str) {
                    Some("stderr" | "-") => AuditTarget::Stderr,
                    Some(p) => AuditTarget::File(PathBuf::from(p)),
                    None => default_file(),
                };
                let mut c = base(to);
                if let Some(mb) = o.get("maxMb").and_then(Value::as_u64) {
                    c.max_bytes = mb.max(1) << 20;
                }
                if let Some(k) = o.get("keep").and_then(Value::as_u64) {
                    c.keep = k.min(100) as u32;
                }
                c.arguments = o.get("arguments").and_then(Value::as_bool) == Some(true);
                Some(c)
            }
            _ => None,
        }
    }

    /// What is wrong with a `settings.audit` value, if anything.
    pub fn check(v: &Value) -> Option<String> {
        let usage = "expected true, \"stderr\" or {path, maxMb, keep, arguments}";
        match v {
            Value::Bool(_) => None,
            Value::String(s) if s == "stderr" => None,
            Value::Object(o) => o.iter().find_map(|(k, v)| {
                let ok = match k.as_str() {
                    "path" => v.as_str().is_some_and(|s| !s.is_empty()),
                    "maxMb" | "keep" => v.as_u64().is_some(),
                    "arguments" => v.is_boolean(),
                    _ => false,
                };
                (!ok).then(|| format!("{k}: {usage}, found {v}"))
            }),
            other => Some(format!("{usage}, found {other}")),
        }
    }

    /// The file's path for `replica` (a team's replica), else as configured.
    fn for_replica(mut self, replica: Option<&str>) -> AuditConfig {
        if let (AuditTarget::File(path), Some(replica)) = (&self.to, replica) {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ext = path
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_default();
            let named = path.with_file_name(format!("{stem}-{replica}{ext}"));
            self.to = AuditTarget::File(named);
        }
        self
    }
}

/// What was decided about a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// It ran; nobody was asked.
    Allowed,
    /// It ran once the user allowed it.
    Asked,
    /// It did not run.
    Denied,
}

/// One audit line.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// When the call was asked for (UTC, ISO 8601).
    pub time: String,
    /// The session, unique in this process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// The client token's name (empty: no token, as on stdio).
    pub client: String,
    /// The server.
    pub server: String,
    /// The server's own name of the tool (none for a read).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tool: String,
    /// The resource read (the server's own URI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The skill's file read (the server's own URI): a kind of read of its
    /// own, whose bytes pass whole or not at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    /// The prompt got (the server's own name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// How the call came: `call`, `proxy`, `script`, `guest`, `local` or `app`.
    pub via: &'static str,
    /// What was decided.
    pub decision: Decision,
    /// Why (a denial's reason, who was asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// From asking to the answer, in milliseconds.
    pub duration_ms: u64,
    /// The size, as JSON, of the arguments the guards let through (with no
    /// guard, as asked; `{}` for a call the guards did not let through).
    pub arguments_bytes: usize,
    /// The result's size, as JSON (0 for a call that did not run).
    pub result_bytes: usize,
    /// The call's error, or the tool's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The arguments the guards let through, with `audit.arguments`: a
    /// guard's rewrite, never what it took out; none for a call the guards
    /// did not let through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
}

/// Where lines are written.
pub struct AuditLog {
    config: AuditConfig,
    file: Mutex<Option<std::fs::File>>,
}

impl AuditLog {
    /// A log under `config`; `replica` names this replica in a team.
    pub fn new(config: AuditConfig, replica: Option<&str>) -> AuditLog {
        AuditLog {
            config: config.for_replica(replica),
            file: Mutex::new(None),
        }
    }

    /// Whether lines carry arguments.
    pub fn keeps_arguments(&self) -> bool {
        self.config.arguments
    }

    /// The file written, if lines go to one.
    pub fn path(&self) -> Option<&Path> {
        match &self.config.to {
            AuditTarget::File(p) => Some(p),
            AuditTarget::Stderr => None,
        }
    }

    /// Writes `record`'s line. A line that cannot be written is reported
    /// and lost; the call it tells of goes on.
    pub fn write(&self, record: &Record) {
        let mut line = match serde_json::to_vec(record) {
            Ok(l) => l,
            Err(e) => return tracing::warn!("an audit line could not be made: {e}"),
        };
        line.push(b'\n');
        let written = match &self.config.to {
            AuditTarget::Stderr => std::io::stderr().write_all(&line),
            AuditTarget::File(path) => self.append(path, &line),
        };
        if let Err(e) = written {
            tracing::warn!("cannot write the audit trail: {e}");
        }
    }

    fn append(&self, path: &Path, line: &[u8]) -> std::io::Result<()> {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let size = match file.as_ref() {
            Some(f) => f.metadata()?.len(),
            None => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        };
        if size > 0 && size + line.len() as u64 > self.config.max_bytes {
            *file = None;
            rotate(path, self.config.keep)?;
        }
        if file.is_none() {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut options = std::fs::OpenOptions::new();
            options.create(true).append(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                // Who called what is the owner's to read.
                options.mode(0o600);
            }
            *file = Some(options.open(path)?);
        }
        file.as_mut().map_or(Ok(()), |f| f.write_all(line))
    }
}

/// `path` becomes `path.1`, `path.1` becomes `path.2`, … up to `keep`.
fn rotate(path: &Path, keep: u32) -> std::io::Result<()> {
    let numbered = |n: u32| {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".{n}"));
        PathBuf::from(p)
    };
    if keep == 0 {
        return std::fs::remove_file(path);
    }
    let _ = std::fs::remove_file(numbered(keep));
    for n in (1..keep).rev() {
        let _ = std::fs::rename(numbered(n), numbered(n + 1));
    }
    std::fs::rename(path, numbered(1))
}

/// This process's name among a team's replicas: its host and process id.
pub fn replica_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "mcpw".into());
    format!("{host}-{}", std::process::id())
}

/// `ms` since the Unix epoch as UTC ISO 8601, to the millisecond.
pub fn iso_time(ms: u64) -> String {
    let (secs, millis) = (ms / 1000, ms % 1000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests;
