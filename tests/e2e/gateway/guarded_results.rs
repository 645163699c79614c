//! Every result passes the guards after, whatever it is and however it
//! comes: the example guard redacts a key planted in a resource, read as a
//! resource tool through each way in (the proxy's `mcp`, a direct tool, a
//! script, `mcpw call`) and by `resources/read`, and in a prompt of
//! server-everything; and the audit line keeps the arguments the guards let
//! through, never a secret a guard took out.

use super::guards::{hostile, redactor};
use super::serve::client_plan;
use crate::common::ConfigDirs;
use crate::servers::{mcpw_in, servers};
use serde_json::{Value, json};
use std::path::PathBuf;

const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
const PASSWORD: &str = "x9Fq2LmZ7pRt4KsW8vNc";

struct Setup {
    dirs: ConfigDirs,
    trail: PathBuf,
}

/// notes.mjs as `notes` (its resource a file with a planted key, exposed as
/// the tool `notes__get_deploy`), server-everything, and misbehave.mjs as
/// `s`, under `settings` and an audit trail that keeps arguments.
fn setup(mut settings: Value) -> Setup {
    let dirs = ConfigDirs::new();
    let notes = dirs.root.path().join("notes.txt");
    std::fs::write(&notes, format!("deploy notes\naws: {AWS}\nend\n")).unwrap();
    let trail = dirs.root.path().join("audit.jsonl");
    settings["audit"] = json!({"path": trail.display().to_string(), "arguments": true});
    let s = servers();
    let config = json!({
        "mcpServers": {
            "notes": {"command": "node", "args": [s.notes()], "exposeResources": true,
                      "env": {"NOTES_FILE": notes.display().to_string()}},
            "everything": {"command": "node", "args": [s.everything(), "stdio"]},
            "s": {"command": "node", "args": [s.misbehave(), "ok"]}
        },
        "settings": settings
    });
    dirs.user(&config.to_string());
    Setup { dirs, trail }
}

fn connect(s: &Setup, exposure: &str) -> Value {
    let env = crate::common::client_env(&s.dirs.home());
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", exposure], "env": env})
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"op": "callTool", "name": name, "arguments": arguments})
}

/// What is wrong with `told` (a way's result, as JSON text), unless it has
/// the planted key redacted.
fn unredacted(way: &str, told: &str) -> Option<String> {
    let fine = !told.contains(AWS)
        && told.contains("[REDACTED:aws-access-key]")
        && told.contains("deploy notes");
    (!fine).then(|| format!("{way}: {told}"))
}

#[test]
fn a_resource_tools_reading_is_redacted_on_every_way_in() {
    let s = setup(json!({"guards": [redactor()]}));
    let ways = [
        ("direct", call("notes__get_deploy", json!({}))),
        (
            "proxy",
            call("mcp", json!({"tool": "notes__get_deploy", "args": {}})),
        ),
        (
            "code",
            call(
                "code",
                json!({"code": "return await tools.notes__get_deploy({})"}),
            ),
        ),
    ];
    let mut leaks = Vec::new();
    for (exposure, step) in ways {
        let r = client_plan(json!({"connect": connect(&s, exposure), "steps": [step]})).unwrap();
        assert_ne!(r[0]["isError"], true, "{exposure}: {}", r[0]);
        leaks.extend(unredacted(exposure, &r[0].to_string()));
    }
    let out = mcpw_in(&s.dirs.home())
        .args(["call", "notes__get_deploy"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    leaks.extend(unredacted("mcpw call", &stdout));
    assert!(leaks.is_empty(), "not redacted:\n{}", leaks.join("\n"));
}

/// A reading and a prompt are redacted after, and keep their shapes; a
/// prompt's arguments meet the guards before: one that would send a key to
/// the server is refused, as a call with it would be.
#[test]
fn a_read_and_a_prompt_are_redacted_and_keep_their_shapes() {
    let s = setup(json!({"guards": [redactor()]}));
    let prompt = json!({"op": "getPrompt", "name": "notes__deploy"});
    let sending = json!({"op": "getPrompt", "name": "everything__args-prompt",
                         "arguments": {"city": format!("key {AWS}"), "state": "CA"}});
    let mut leaks = Vec::new();
    for exposure in ["direct", "proxy"] {
        let r = client_plan(json!({"connect": connect(&s, exposure), "steps": [
            {"op": "readResource", "uri": "notes://deploy"},
            prompt.clone(),
            sending.clone(),
        ]}))
        .unwrap();
        let read = &r[0]["contents"][0];
        assert_eq!(read["uri"], "notes://deploy", "{exposure}: {}", r[0]);
        let read_text = read["text"].as_str().unwrap_or_default();
        leaks.extend(unredacted(&format!("{exposure} read"), read_text));
        let message = &r[1]["messages"][0];
        assert_eq!(message["role"], "user", "{exposure}: {}", r[1]);
        let text = message["content"]["text"].as_str().unwrap_or_default();
        leaks.extend(unredacted(&format!("{exposure} prompt"), text));
        let refused = r[2].to_string();
        assert!(
            refused.contains("carry a credential") && !refused.contains(AWS),
            "{exposure}: {refused}"
        );
    }
    assert!(leaks.is_empty(), "not redacted:\n{}", leaks.join("\n"));
}

/// The audit lines that tell of `s`'s echo, as written.
fn echo_lines(trail: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(trail).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["tool"] == "echo")
        .collect()
}

#[test]
fn the_audit_line_keeps_what_the_guards_let_through() {
    // The hostile guard rewrites a call whose message is "rewrite" (to
    // {"message": "rewritten"}), taking the password out; the example guard
    // refuses one that sends a key.
    let s = setup(json!({"guards": [redactor(), hostile()]}));
    let stripped = json!({"message": "rewrite", "note": format!("DB_PASSWORD={PASSWORD}")});
    let r = client_plan(json!({"connect": connect(&s, "direct"), "steps": [
        call("s__echo", stripped),
        call("s__echo", json!({"message": format!("deploy with {AWS}")})),
    ]}))
    .unwrap();
    assert_eq!(r[0]["content"][0]["text"], "Echo: rewritten", "{}", r[0]);
    assert_eq!(r[1]["isError"], true, "{}", r[1]);
    let all = std::fs::read_to_string(&s.trail).unwrap();
    let kept: Vec<&str> = [PASSWORD, AWS]
        .into_iter()
        .filter(|secret| all.contains(secret))
        .collect();
    assert!(kept.is_empty(), "{kept:?} in the audit trail: {all}");
    let lines = echo_lines(&s.trail);
    assert_eq!(lines.len(), 2, "{all}");
    assert_eq!(
        lines[0]["arguments"],
        json!({"message": "rewritten"}),
        "{all}"
    );
    assert_eq!(lines[0]["decision"], "allowed");
    assert_eq!(lines[1]["decision"], "denied");
    assert!(lines[1].get("arguments").is_none(), "{all}");
}
