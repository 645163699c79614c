//! An example guard guest for mcpw: it redacts credentials from every
//! result (known token formats, private keys, and long random strings next
//! to words like "key", "secret" or "token"), refuses calls whose arguments
//! carry a credential of a known shape (an agent sending a key out), and
//! refuses calls of shell-like tools whose arguments match a deny list of
//! destructive commands.
//!
//! The modules are plain Rust, tested natively; `glue` exports them as the
//! guard role with the guest kit when built for wasm.

pub mod redact;
pub mod shell;

use serde_json::Value;

/// Why a call of `tool` with `arguments` is refused, if it is.
pub fn refusal(tool: &str, arguments: &Value) -> Option<String> {
    if let Some(kind) = redact::credential_in(arguments) {
        return Some(format!(
            "its arguments carry a credential ({kind}): a call may not send a secret out"
        ));
    }
    if shell::is_shell_like(tool) {
        return shell::refusal(arguments);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_is_refused_for_a_credential_in_any_tool_or_a_destructive_command() {
        let leak = json!({"message": "deploy with AKIAIOSFODNN7EXAMPLE"});
        let why = refusal("everything__echo", &leak).expect("refused");
        assert!(why.contains("aws-access-key"), "{why}");
        assert_eq!(refusal("everything__echo", &json!({"message": "hi"})), None);
        let rm = json!({"command": "rm -rf /"});
        assert!(refusal("run_command", &rm).is_some());
        assert_eq!(refusal("notes__write", &rm), None, "not a shell-like tool");
    }
}

#[cfg(target_arch = "wasm32")]
mod glue;
