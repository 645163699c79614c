//! Clients of both protocol eras through mcpw: the official Python SDK's
//! `Client` (PyPI `mcp` 2.3.0), which checks every result against the revision
//! it negotiated, in `auto` mode (`server/discover`, then 2026-07-28) and in
//! `legacy` mode (`initialize`, 2025-11-25), over stdio and Streamable HTTP,
//! with a handshake-era upstream (server-everything) and one of the stateless
//! revision (mcp-server-time, on the Python SDK) behind mcpw.

use crate::common::{ConfigDirs, workspace};
use crate::servers::{Serving, servers};
use mcpw_test_support::isolated_mcpw;
use serde_json::{Value, json};

fn setup() -> ConfigDirs {
    let s = servers();
    let dirs = ConfigDirs::new();
    let config = json!({"mcpServers": {
        "everything": {"command": "node", "args": [s.everything(), "stdio"]},
        "time": {"command": s.python_bin("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
    }});
    dirs.user(&config.to_string());
    dirs
}

/// Runs `py_client.py` (the SDK's `Client`) against `target` in `mode`,
/// calling `tool` with `args`; its report, one object.
fn python_client(dirs: &ConfigDirs, mode: &str, target: &str, tool: &str, args: Value) -> Value {
    let script = workspace().join("tests/servers/py_client.py");
    // With mcpw's own environment: over stdio the SDK starts mcpw with it.
    let out = isolated_mcpw(servers().python_bin("python"), dirs.home())
        .arg(script)
        .args([mode, target, tool, &args.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the Python SDK client failed ({mode}, {target}):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

/// What every mode and transport must give: both upstreams' tools listed and
/// called, a resource read and a prompt got, each result accepted by the SDK.
fn check(report: &Value, mode: &str, revision: &str, time: &Value) {
    let context = format!("{mode}: {report:#}");
    assert_eq!(report["protocolVersion"], revision, "{context}");
    let tools = report["tools"].as_array().expect(&context);
    for name in ["everything__echo", "time__get_current_time"] {
        assert!(tools.contains(&json!(name)), "{name} missing; {context}");
    }
    assert_eq!(report["call"]["isError"], false, "{context}");
    assert!(
        report["call"]["text"]
            .as_str()
            .unwrap()
            .contains("Echo: hello eras"),
        "{context}"
    );
    assert!(
        report["resource"]["contents"].as_u64() >= Some(1),
        "{context}"
    );
    assert!(
        report["prompt"]["messages"].as_u64() >= Some(1),
        "{context}"
    );
    assert_eq!(time["protocolVersion"], revision, "{time:#}");
    // The stateless upstream's tool, called by a client of either era.
    assert_eq!(time["call"]["isError"], false, "{time:#}");
    assert!(
        time["call"]["text"].as_str().unwrap().contains("UTC"),
        "{time:#}"
    );
}

#[test]
fn the_python_sdk_client_of_either_era_over_stdio() {
    let dirs = setup();
    let mcpw = json!([env!("CARGO_BIN_EXE_mcpw"), "serve", "--exposure", "direct"]).to_string();
    for (mode, revision) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let echo = json!({"message": "hello eras"});
        let report = python_client(&dirs, mode, &mcpw, "everything__echo", echo);
        let time = json!({"timezone": "UTC"});
        let timed = python_client(&dirs, mode, &mcpw, "time__get_current_time", time);
        check(&report, mode, revision, &timed);
    }
}

#[test]
fn the_python_sdk_client_of_either_era_over_streamable_http() {
    let dirs = setup();
    let serving = Serving::start(&dirs.home(), &["--exposure", "direct"]);
    for (mode, revision) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let echo = json!({"message": "hello eras"});
        let report = python_client(&dirs, mode, &serving.url(), "everything__echo", echo);
        let time = json!({"timezone": "UTC"});
        let timed = python_client(&dirs, mode, &serving.url(), "time__get_current_time", time);
        check(&report, mode, revision, &timed);
    }
}
