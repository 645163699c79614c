//! A project's own guests (`settings.plugins` in a project file): each
//! waits, as a project's server does, until the user approves it: its role,
//! the sha256 of its `.wasm` and the grants the project asks for it. A
//! swapped file, or wider grants, wait again. Approved under the name
//! `guest:<role>` (`mcpw trust guest:ranking`). The sandbox's limits stay
//! the user's.

use super::trust::{Gate, Verdict};
use super::{Diagnostic, Role, Severity};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The part of a project file's `plugins` (`raw`, paths made absolute) that
/// is approved, to be merged over the user's; waiting guests are recorded
/// by `gate`, and `limits` is refused with a warning.
pub(super) fn admit(
    raw: &Value,
    file: &Path,
    gate: &mut Gate,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Value> {
    let plugins = raw.as_object()?;
    for (key, why) in [
        ("limits", "a guest's sandbox limits are the user's to set"),
        ("calls", "which tools a guest may call is the user's to say"),
    ] {
        if plugins.contains_key(key) {
            diagnostics.push(Diagnostic::field(
                Severity::Warning,
                file,
                format!("settings.plugins.{key}"),
                format!("ignored: {why}"),
            ));
        }
    }
    let mut kept = Map::new();
    let mut grants = Map::new();
    for role in Role::ALL {
        let key = role.config_key();
        let Some(path) = plugins.get(key).and_then(Value::as_str) else {
            continue;
        };
        let asked = plugins
            .get("grants")
            .and_then(|g| g.get(key))
            .cloned()
            .unwrap_or(Value::Array(Vec::new()));
        let definition = definition(role, Path::new(path), &asked);
        let shown = shown(role, path, &definition);
        let name = format!("guest:{key}");
        if let Verdict::Load = gate.check_shown(&name, &definition, file, shown) {
            kept.insert(key.to_string(), Value::String(path.to_string()));
            grants.insert(key.to_string(), asked);
        }
    }
    if kept.is_empty() {
        return None;
    }
    kept.insert("grants".into(), Value::Object(grants));
    Some(Value::Object(kept))
}

/// What an approval of a guest covers: its role, the sha256 of its file
/// (of the error, when it cannot be read: it waits) and its grants.
fn definition(role: Role, path: &Path, grants: &Value) -> Value {
    let sha256 = match std::fs::read(path) {
        Ok(bytes) => Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
        Err(e) => format!("unreadable: {e}"),
    };
    json!({"guest": path.display().to_string(), "role": role.config_key(), "sha256": sha256, "grants": grants})
}

/// How a waiting guest is shown: its file, then its role, grants and hash.
fn shown(role: Role, path: &str, definition: &Value) -> (String, Vec<String>) {
    let grants: Vec<&str> = definition["grants"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let grants = match grants.is_empty() {
        true => "none".to_string(),
        false => grants.join(", "),
    };
    let covers = vec![
        format!("role: {role}"),
        format!("grants: {grants}"),
        format!("sha256: {}", definition["sha256"].as_str().unwrap_or("?")),
    ];
    (format!("WebAssembly guest {path}"), covers)
}
