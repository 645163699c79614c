//! `settings`: each key checked, bad ones reported and dropped, plugin paths
//! made absolute.

use super::kind;
use crate::config::{Capability, Diagnostic, Role, Severity};
use serde_json::{Map, Value};
use std::path::Path;

/// Reports a bad setting; the caller drops it.
fn setting_error(diags: &mut Vec<Diagnostic>, file: &Path, field: &str, message: String) {
    diags.push(Diagnostic::field(
        Severity::Error,
        file,
        format!("settings.{field}"),
        message,
    ));
}

/// Checks one file's `settings`; returns them with bad keys dropped and plugin
/// paths made absolute (relative to the file's directory).
pub fn settings(value: &Value, file: &Path, diags: &mut Vec<Diagnostic>) -> Map<String, Value> {
    let Some(obj) = value.as_object() else {
        diags.push(Diagnostic::field(
            Severity::Error,
            file,
            "settings".into(),
            format!("expected an object, found {}", kind(value)),
        ));
        return Map::new();
    };
    let mut out = Map::new();
    for (key, v) in obj {
        if key == "plugins" {
            if let Some(p) = plugins(v, file, diags) {
                out.insert(key.clone(), p);
            }
            continue;
        }
        if key == "search" {
            match crate::config::search::check(v, file) {
                Ok(search) => {
                    out.insert(key.clone(), search);
                }
                Err((field, message)) => setting_error(diags, file, &field, message),
            }
            continue;
        }
        if key == "guards" {
            if let Some(g) = guards(v, file, diags) {
                out.insert(key.clone(), g);
            }
            continue;
        }
        let Some(check) = crate::config::settings::named(key).and_then(|s| s.check) else {
            diags.push(Diagnostic::field(
                Severity::Warning,
                file,
                format!("settings.{key}"),
                "unknown setting, ignored".into(),
            ));
            continue;
        };
        match check(v) {
            Some(message) => setting_error(diags, file, key, message),
            None => {
                out.insert(key.clone(), v.clone());
            }
        }
    }
    out
}

/// Checks `settings.guards` (guard guests, in order); returns their paths
/// made absolute.
fn guards(value: &Value, file: &Path, diags: &mut Vec<Diagnostic>) -> Option<Value> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let Some(list) = value.as_array() else {
        let found = format!(
            "expected a list of guard guests (.wasm), found {}",
            kind(value)
        );
        setting_error(diags, file, "guards", found);
        return None;
    };
    let mut out = Vec::new();
    for (i, v) in list.iter().enumerate() {
        match v.as_str().filter(|p| !p.trim().is_empty()) {
            Some(p) => out.push(Value::String(dir.join(p).display().to_string())),
            None => setting_error(
                diags,
                file,
                &format!("guards[{i}]"),
                format!("expected a path, found {v}"),
            ),
        }
    }
    Some(Value::Array(out))
}

/// Checks `settings.plugins`; returns it with guest paths made absolute.
fn plugins(value: &Value, file: &Path, diags: &mut Vec<Diagnostic>) -> Option<Value> {
    let mut err = |field: &str, message: String| {
        setting_error(diags, file, &format!("plugins{field}"), message)
    };
    let Some(obj) = value.as_object() else {
        err("", format!("expected an object, found {}", kind(value)));
        return None;
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut out = Map::new();
    for (key, v) in obj {
        let kept = match key.as_str() {
            "grants" => grants(v, &mut err),
            "calls" => callable(v, &mut err),
            "limits" => limits(v, &mut err),
            "guard" => {
                err(
                    ".guard",
                    "guards are listed in settings.guards (several, in order)".into(),
                );
                None
            }
            role if Role::parse(role).is_some() => guest(role, v, dir, &mut err),
            other => {
                err(
                    &format!(".{other}"),
                    "unknown key: use naming, directTools, ranking, grants, calls or limits".into(),
                );
                None
            }
        };
        if let Some(kept) = kept {
            out.insert(key.clone(), kept);
        }
    }
    Some(Value::Object(out))
}

/// `plugins.grants`: the capabilities of each role. An unknown role is
/// dropped; so is a bad entry, while the valid ones stay granted.
fn grants(v: &Value, err: &mut impl FnMut(&str, String)) -> Option<Value> {
    per_role(v, "grants", "capabilities", err, |c| {
        c.as_str()
            .and_then(Capability::parse)
            .is_none()
            .then(|| format!("unknown capability {c}: use catalog, lifecycle or calls"))
    })
}

/// `plugins.calls`: the tools each role's guest may call (globs over the
/// agent-facing names); a bad entry is dropped, the others stay.
fn callable(v: &Value, err: &mut impl FnMut(&str, String)) -> Option<Value> {
    per_role(v, "calls", "tool name globs", err, |g| {
        (!g.is_string()).then(|| format!("expected a glob over tool names as text, found {g}"))
    })
}

/// `plugins.<key>`: an object of roles, each a list of `what` whose
/// entries `bad` checks (why one is not valid). An unknown role, a value
/// that is not a list and a bad entry are reported and dropped; the rest
/// stays.
fn per_role(
    v: &Value,
    key: &str,
    what: &str,
    err: &mut impl FnMut(&str, String),
    bad: impl Fn(&Value) -> Option<String>,
) -> Option<Value> {
    let Some(roles) = v.as_object() else {
        err(
            &format!(".{key}"),
            format!("expected an object of roles, found {}", kind(v)),
        );
        return None;
    };
    let mut good = Map::new();
    for (role, entries) in roles {
        let field = format!(".{key}.{role}");
        if Role::parse(role).is_none() {
            err(
                &field,
                "unknown role: use naming, directTools or ranking".into(),
            );
            continue;
        }
        let Some(list) = entries.as_array() else {
            err(
                &field,
                format!("expected a list of {what}, found {}", kind(entries)),
            );
            continue;
        };
        let mut valid = Vec::new();
        for (i, entry) in list.iter().enumerate() {
            match bad(entry) {
                Some(why) => err(&format!("{field}[{i}]"), why),
                None => valid.push(entry.clone()),
            }
        }
        good.insert(role.clone(), Value::Array(valid));
    }
    Some(Value::Object(good))
}

/// `plugins.limits`: each limit a whole number in its range; the others dropped.
fn limits(v: &Value, err: &mut impl FnMut(&str, String)) -> Option<Value> {
    let Some(limits) = v.as_object() else {
        err(".limits", format!("expected an object, found {}", kind(v)));
        return None;
    };
    let mut good = Map::new();
    for (name, n) in limits {
        let range = match name.as_str() {
            "memoryMiB" => 1..=4096,
            "deadlineMs" => 1..=600_000,
            _ => {
                err(
                    &format!(".limits.{name}"),
                    "unknown limit: use memoryMiB or deadlineMs".into(),
                );
                continue;
            }
        };
        match n.as_u64() {
            Some(x) if range.contains(&x) => {
                good.insert(name.clone(), n.clone());
            }
            _ => err(
                &format!(".limits.{name}"),
                format!(
                    "expected a whole number from {} to {}, found {n}",
                    range.start(),
                    range.end()
                ),
            ),
        }
    }
    Some(Value::Object(good))
}

/// A role's guest: the path of a component that exists, made absolute against
/// the config file's directory so that it means the same from anywhere.
fn guest(role: &str, v: &Value, dir: &Path, err: &mut impl FnMut(&str, String)) -> Option<Value> {
    match v.as_str() {
        Some(p) if !p.is_empty() => {
            let path = dir.join(p);
            if path.is_file() {
                Some(Value::String(path.display().to_string()))
            } else {
                err(
                    &format!(".{role}"),
                    format!("guest file {} not found", path.display()),
                );
                None
            }
        }
        _ => {
            err(
                &format!(".{role}"),
                format!("expected the path of a .wasm component, found {v}"),
            );
            None
        }
    }
}
