//! Checks of one server definition in a client's file, as written: hidden
//! characters, unset variables, a command that is not there.

use super::clients::Place;
use super::finding::{Finding, Section, Severity};
use crate::config::interpolate::interpolate;
use crate::paths::Environment;
use serde_json::Value;
use std::path::Path;

/// Characters that print as nothing: a name or command holding one differs
/// from what the reader sees.
const INVISIBLE: [char; 6] = [
    '\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}', '\u{00ad}',
];

/// VS Code's own variables, which it replaces itself.
const VSCODE_VARIABLES: [&str; 4] = [
    "${workspaceFolder}",
    "${workspaceFolderBasename}",
    "${userHome}",
    "${pathSeparator}",
];

/// One definition, where it is.
pub(crate) struct Definition<'a> {
    /// Where.
    pub place: &'a Place,
    /// The server's name, as written.
    pub name: &'a str,
    /// Its definition, as written.
    pub raw: &'a Value,
}

impl Definition<'_> {
    fn finding(
        &self,
        severity: Severity,
        check: &'static str,
        message: String,
        remedy: String,
    ) -> Finding {
        Finding::new(Section::Files, severity, check, message, remedy)
            .server(self.name)
            .client(self.place.client)
            .file(&self.place.path)
    }
}

/// Every check of one definition the client reads.
pub(crate) fn check(
    def: &Definition<'_>,
    env: &Environment,
    project: &Path,
    out: &mut Vec<Finding>,
) {
    let trimmed = def
        .name
        .trim_matches(|c: char| c.is_whitespace() || INVISIBLE.contains(&c));
    if let Some(seen) = hidden(def.name) {
        out.push(def.finding(
            Severity::Blocking,
            "hidden-characters",
            format!("the server's name {seen} has hidden whitespace or invisible characters: it is not the name you read, and mcpw refuses it"),
            format!("rename it to \"{trimmed}\""),
        ));
    }
    let command = def.raw.get("command").and_then(Value::as_str);
    let mut command_ok = command.is_some();
    if let Some(command) = command
        && let Some(seen) = hidden(command)
    {
        command_ok = false;
        out.push(def.finding(
            Severity::Blocking,
            "hidden-characters",
            format!("its command {seen} has hidden whitespace or invisible characters: no program has that name, so the server does not start"),
            format!("write the command as \"{}\"", command.trim_matches(|c: char| c.is_whitespace() || INVISIBLE.contains(&c))),
        ));
    }
    let unset = unset_variables(def, env, out);
    if command_ok
        && let Some(command) = command
        && !unset.iter().any(|(field, _)| field == "command")
    {
        command_missing(def, &interpolate(command, env).value, env, project, out);
    }
}

/// The string as a person should see it: quoted, each hidden character
/// spelt out; `None` when it has none.
fn hidden(s: &str) -> Option<String> {
    let edge = |c: Option<char>| c.is_some_and(char::is_whitespace);
    let has = edge(s.chars().next())
        || edge(s.chars().next_back())
        || s.chars()
            .any(|c| INVISIBLE.contains(&c) || (c.is_whitespace() && c != ' '));
    has.then(|| {
        let last = s.chars().count().saturating_sub(1);
        let shown: String = s
            .chars()
            .enumerate()
            .map(|(i, c)| {
                let at_edge = i == 0 || i == last;
                if INVISIBLE.contains(&c) || (c.is_whitespace() && (c != ' ' || at_edge)) {
                    format!("\\u{{{:04x}}}", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect();
        format!("\"{shown}\"")
    })
}

/// Reports each `${VAR}` (or `${env:VAR}`, `$env:VAR`) of the definition
/// whose variable is not set; returns them as (field, variable).
fn unset_variables(
    def: &Definition<'_>,
    env: &Environment,
    out: &mut Vec<Finding>,
) -> Vec<(String, String)> {
    let mut strings = Vec::new();
    walk(def.raw, String::new(), &mut strings);
    let mut unset = Vec::new();
    for (field, text) in strings {
        let mut text = text.replace("${env:", "${");
        if def.place.client == "vscode" {
            for v in VSCODE_VARIABLES {
                text = text.replace(v, "");
            }
        }
        for var in interpolate(&text, env).missing {
            out.push(def.finding(
                Severity::Blocking,
                "unresolved-var",
                format!("`{field}` uses ${{{var}}}, and {var} is not set here: mcpw does not start a server with an unset variable, and a client that does passes the text on as written"),
                format!("set {var} in the environment the client starts from (a desktop app does not see your shell's variables), or write ${{{var}:-default}} or the value itself"),
            ));
            unset.push((field.clone(), var));
        }
    }
    unset
}

/// Every string of `v` with its field path (`args[1]`, `env.TOKEN`).
fn walk(v: &Value, path: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((path, s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(item, p, out);
            }
        }
        _ => {}
    }
}

/// Reports a command that is neither an existing file nor a program on PATH.
fn command_missing(
    def: &Definition<'_>,
    command: &str,
    env: &Environment,
    project: &Path,
    out: &mut Vec<Finding>,
) {
    if command.is_empty() || found(command, env, project) {
        return;
    }
    let path = env.get("PATH").unwrap_or_default();
    out.push(def.finding(
        Severity::Blocking,
        "command-not-found",
        format!("its command \"{command}\" is not a file and not on PATH ({path}), so the server cannot start"),
        format!("install {command}, or write its absolute path (a client started from the desktop may have a shorter PATH than your shell)"),
    ));
}

/// Is `command` an existing file (a path), or a program in one of PATH's folders?
fn found(command: &str, env: &Environment, project: &Path) -> bool {
    let as_path = Path::new(command);
    if command.contains('/') || command.contains('\\') {
        let file = if as_path.is_absolute() {
            as_path.to_path_buf()
        } else {
            project.join(as_path)
        };
        return file.is_file();
    }
    let path = env.get("PATH").unwrap_or_default();
    std::env::split_paths(path).any(|dir| {
        let file = dir.join(command);
        file.is_file()
            || (cfg!(windows)
                && ["exe", "cmd", "bat"]
                    .iter()
                    .any(|e| file.with_extension(e).is_file()))
    })
}
