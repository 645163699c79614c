//! `permissions` of a component server: what a WebAssembly component may
//! reach, each denied unless granted. Only the user grants them: in their own
//! config, or by approving a project's definition (`mcpw trust` shows them).

use serde::Serialize;
use serde_json::Value;

/// The memory an instance gets unless `memoryMiB` says otherwise.
pub const DEFAULT_MEMORY_MIB: u32 = 128;
/// The most a request may run unless `timeoutMs` says otherwise.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// The most memory a grant may name (4 GiB: a 32-bit memory's limit).
const MAX_MEMORY_MIB: u32 = 4096;

/// How a folder is granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Files are read, listed and stat'ed; nothing is written.
    Read,
    /// Files are read and written, made and removed.
    ReadWrite,
}

/// What a component server may reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Permissions {
    /// Folders (absolute, as on this machine), seen by the component at the same path.
    pub files: Vec<(String, Access)>,
    /// Outgoing hosts, or `host:port`.
    pub network: Vec<String>,
    /// Environment variables and their values.
    pub env: Vec<(String, String)>,
    /// The instance's memory, in MiB.
    pub memory_mib: u32,
    /// How long one request may run, in milliseconds.
    pub timeout_ms: u64,
}

impl Default for Permissions {
    fn default() -> Self {
        Permissions {
            files: Vec::new(),
            network: Vec::new(),
            env: Vec::new(),
            memory_mib: DEFAULT_MEMORY_MIB,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }
    }
}

/// A problem in `permissions`: the field (`permissions.files./x`) and why.
pub type Problem = (String, String);

/// Reads `permissions` (absent: nothing granted). `expand` interpolates a
/// value (`${VAR}`, and for env values, secret commands) for the field it
/// names; problems go to `problems`.
pub fn parse(
    value: Option<&Value>,
    expand: &mut dyn FnMut(&str, &str, bool) -> String,
    problems: &mut Vec<Problem>,
) -> Permissions {
    let mut granted = Permissions::default();
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return granted;
    };
    let Some(obj) = value.as_object() else {
        problems.push(("permissions".into(), "expected an object".into()));
        return granted;
    };
    for (key, value) in obj {
        let field = format!("permissions.{key}");
        match key.as_str() {
            "files" => granted.files = files(&field, value, expand, problems),
            "network" => granted.network = network(&field, value, expand, problems),
            "env" => granted.env = env(&field, value, expand, problems),
            "memoryMiB" => match whole(value, 1, MAX_MEMORY_MIB as u64) {
                Some(n) => granted.memory_mib = n as u32,
                None => {
                    problems.push((field, format!("a number of MiB from 1 to {MAX_MEMORY_MIB}")))
                }
            },
            "timeoutMs" => match whole(value, 1, u64::MAX) {
                Some(n) => granted.timeout_ms = n,
                None => problems.push((field, "a number of milliseconds, at least 1".into())),
            },
            _ => problems.push((
                field,
                "unknown permission: use files, network, env, memoryMiB or timeoutMs".into(),
            )),
        }
    }
    granted
}

fn whole(value: &Value, min: u64, max: u64) -> Option<u64> {
    value.as_u64().filter(|n| (min..=max).contains(n))
}

fn files(
    field: &str,
    value: &Value,
    expand: &mut dyn FnMut(&str, &str, bool) -> String,
    problems: &mut Vec<Problem>,
) -> Vec<(String, Access)> {
    let Some(obj) = value.as_object() else {
        problems.push((
            field.into(),
            "expected an object of folders and \"read\" or \"read-write\"".into(),
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (folder, access) in obj {
        let at = format!("{field}.{folder}");
        let folder = expand(&at, folder, false);
        let access = match access.as_str() {
            Some("read") => Access::Read,
            Some("read-write") => Access::ReadWrite,
            _ => {
                problems.push((at, "expected \"read\" or \"read-write\"".into()));
                continue;
            }
        };
        if !std::path::Path::new(&folder).is_absolute() {
            problems.push((at, format!("{folder} is not an absolute path: the component sees a folder at the path it has here")));
            continue;
        }
        out.push((folder, access));
    }
    out
}

fn network(
    field: &str,
    value: &Value,
    expand: &mut dyn FnMut(&str, &str, bool) -> String,
    problems: &mut Vec<Problem>,
) -> Vec<String> {
    let Some(items) = value.as_array() else {
        problems.push((
            field.into(),
            "expected an array of hosts or host:port".into(),
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("{field}[{i}]");
        match item.as_str() {
            Some(entry) => {
                let entry = expand(&at, entry, false);
                match host_entry(&entry) {
                    true => out.push(entry),
                    false => problems.push((at, format!("{entry:?} is not a host or host:port"))),
                }
            }
            None => problems.push((at, "expected a string".into())),
        }
    }
    out
}

/// Whether `entry` is a host name, an IP address, or either with a port.
fn host_entry(entry: &str) -> bool {
    let host = match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => {
            if port.parse::<u16>().is_err() {
                return false;
            }
            host
        }
        _ => entry,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'))
}

fn env(
    field: &str,
    value: &Value,
    expand: &mut dyn FnMut(&str, &str, bool) -> String,
    problems: &mut Vec<Problem>,
) -> Vec<(String, String)> {
    let Some(obj) = value.as_object() else {
        problems.push((
            field.into(),
            "expected an object of variables and values".into(),
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, value) in obj {
        let at = format!("{field}.{key}");
        match value.as_str() {
            Some(text) => out.push((key.clone(), expand(&at, text, true))),
            None => problems.push((at, "expected a string".into())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> (Permissions, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut expand = |_: &str, text: &str, _: bool| text.replace("${HOME}", "/home/me");
        let granted = parse(Some(&value), &mut expand, &mut problems);
        (granted, problems)
    }

    #[test]
    fn nothing_is_granted_unless_named() {
        let (granted, problems) = read(json!({}));
        assert_eq!(granted, Permissions::default());
        assert!(problems.is_empty());
        assert!(granted.files.is_empty() && granted.network.is_empty() && granted.env.is_empty());
    }

    #[test]
    fn each_grant_is_read_and_each_mistake_named() {
        let (granted, problems) = read(json!({
            "files": {"${HOME}/notes": "read", "/tmp/out": "read-write", "rel": "read", "/x": "all"},
            "network": ["api.example.com", "127.0.0.1:8080", "[::1]:9", "bad host", "h:99999"],
            "env": {"TOKEN": "t", "N": 1},
            "memoryMiB": 64, "timeoutMs": 2000, "sockets": true,
        }));
        assert_eq!(
            granted.files,
            [
                ("/home/me/notes".to_string(), Access::Read),
                ("/tmp/out".to_string(), Access::ReadWrite)
            ]
        );
        assert_eq!(
            granted.network,
            ["api.example.com", "127.0.0.1:8080", "[::1]:9"]
        );
        assert_eq!(granted.env, [("TOKEN".to_string(), "t".to_string())]);
        assert_eq!((granted.memory_mib, granted.timeout_ms), (64, 2000));
        let mut fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                "permissions.env.N",
                "permissions.files./x",
                "permissions.files.rel",
                "permissions.network[3]",
                "permissions.network[4]",
                "permissions.sockets"
            ]
        );
    }

    #[test]
    fn memory_and_time_have_bounds() {
        let (_, problems) = read(json!({"memoryMiB": 0, "timeoutMs": -1}));
        assert_eq!(problems.len(), 2);
        let (_, problems) = read(json!({"memoryMiB": 5000}));
        assert_eq!(problems.len(), 1);
    }
}
