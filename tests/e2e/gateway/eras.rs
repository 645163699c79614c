//! Both protocol eras through mcpw, as a matrix: the official Python SDK's
//! `Client` (PyPI `mcp` 2.3.0, which checks every result against the revision
//! it negotiated) in `auto` mode (`server/discover`, then 2026-07-28) and in
//! `legacy` mode (`initialize`, 2025-11-25), over stdio and Streamable HTTP,
//! in front of upstreams of both eras:
//! - handshake era: server-everything (stdio) and the project's conformance
//!   upstream (HTTP), whose tools ask with `sampling/createMessage` and
//!   `elicitation/create` and which sends resource updates;
//! - 2026-07-28: mcp-server-time (the Python SDK, stdio), the conformance
//!   suite's reference server (HTTP), whose tools ask with `inputRequired`
//!   (sampling, elicitation, roots), and `tests/servers/py_logging_server.py`
//!   (the Python SDK, stdio), which logs only for a request that names a level.
//!
//! Each run lists and calls tools, answers what the servers ask, reads a
//! resource, gets a prompt, gets the log messages it asks for and watches a
//! resource until it is updated.

use crate::common::{ConfigDirs, workspace};
use crate::servers::{Background, MCPW, Serving, servers};
use serde_json::{Value, json};

struct Upstreams {
    conformance: Background,
    reference: Background,
    dirs: ConfigDirs,
}

fn setup() -> Upstreams {
    let s = servers();
    let conformance = Background::node(&[&s.conformance_upstream()], &[]);
    let reference = s.reference_server();
    let reference: Vec<&str> = reference.iter().map(String::as_str).collect();
    let reference = Background::node(&reference, &[]);
    let dirs = ConfigDirs::new();
    let logging_server = workspace().join("tests/servers/py_logging_server.py");
    let config = json!({"mcpServers": {
        "everything": {"command": "node", "args": [s.everything(), "stdio"]},
        "time": {"command": s.python_bin("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "cu": {"url": conformance.url("/mcp")},
        "ref": {"url": reference.url("/mcp")},
        "pylogs": {"command": s.python_bin("python"), "args": [logging_server]},
    }});
    dirs.user(&config.to_string());
    Upstreams {
        conformance,
        reference,
        dirs,
    }
}

/// What each run does, in order (see `tests/servers/py_client.py`).
fn plan() -> Value {
    json!({
        "calls": [
            ["everything__echo", {"message": "hello eras"}],
            // Listed only for a client that takes sampling.
            ["everything__trigger-sampling-request", {"prompt": "from everything"}],
            ["time__get_current_time", {"timezone": "UTC"}],
            ["cu__test_sampling", {"prompt": "from cu"}],
            ["cu__test_elicitation", {"message": "who?"}],
            ["ref__test_input_required_result_sampling", {}],
            ["ref__test_input_required_result_elicitation", {}],
            ["ref__test_input_required_result_list_roots", {}],
        ],
        "read": true,
        "prompt": true,
        // A prompt that asks with `inputRequired` (2026-07-28).
        "prompts": [["ref__test_input_required_result_prompt", {}]],
        // The reference server sends no updates of its watched resource
        // (its description says otherwise): `tests/e2e/host/listen.rs` has
        // a server of 2026-07-28 that does.
        // What servers log while a tool runs, a prompt is got or a resource
        // read. pylogs (the Python SDK, 2026-07-28) logs only when the
        // request itself names a level.
        "logs": {"level": "info", "calls": [
            ["cu__test_tool_with_logging", {}],
            ["ref__test_tool_with_logging", {}],
            ["pylogs__logged_tool", {}],
        ],
        "prompts": [["cu__test_prompt_with_logging", {}], ["pylogs__logged_prompt", {}]],
        "reads": [["cu", "test://logged-resource"], ["pylogs", "logs://logged/a"]]},
        "watch": [
            {"uri": "mcpw:cu/test://watched-resource",
             "trigger": ["cu__update_watched_resource", {}]},
        ],
    })
}

/// What each call's text must hold, in the plan's order.
const ANSWERS: [&str; 8] = [
    "Echo: hello eras",
    "sampled: Resource trigger-sampling-request context: from everything",
    "UTC",
    "LLM response: sampled: from cu",
    "action=accept",
    "Sampling result: sampled: What is the capital of France?",
    "Hello, elicited!",
    "Found 1 root(s)",
];

/// Runs `py_client.py` (the SDK's `Client`) against `target` in `mode`;
/// its report, one object.
fn python_client(dirs: &ConfigDirs, mode: &str, target: &str) -> Value {
    python_client_with(dirs, mode, target, &plan())
}

/// [`python_client`] with another plan.
pub(crate) fn python_client_with(
    dirs: &ConfigDirs,
    mode: &str,
    target: &str,
    plan: &Value,
) -> Value {
    // With mcpw's own environment: over stdio the SDK starts mcpw with it.
    let plan = plan.to_string();
    let out = crate::servers::python_script(&dirs.home(), "py_client.py", &[mode, target, &plan]);
    assert!(
        out.status.success(),
        "the Python SDK client failed ({mode}, {target}):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

/// What every mode and transport must give: every call answered as its
/// server answers a client of either era, each result accepted by the SDK,
/// the questions asked of the client, a resource read, a prompt got and an
/// update received.
fn check(report: &Value, mode: &str, revision: &str) {
    let context = format!("{mode}: {report:#}");
    assert_eq!(report["protocolVersion"], revision, "{context}");
    let calls = report["calls"].as_array().expect(&context);
    assert_eq!(calls.len(), ANSWERS.len(), "{context}");
    for (call, answer) in calls.iter().zip(ANSWERS) {
        assert_eq!(call["isError"], false, "{answer}; {context}");
        let text = call["text"].as_str().unwrap_or_default();
        assert!(text.contains(answer), "{answer}; {context}");
    }
    let asked = &report["asked"];
    assert_eq!(asked["sampling"], 3, "{context}");
    // What a prompt needs is asked too, in the client's era.
    assert_eq!(
        report["prompts"][0], "Prompt with context: elicited",
        "{context}"
    );
    assert_eq!(asked["elicitation"], 3, "{context}");
    // server-everything asks for the roots too, as a session of its era
    // opens, when that session's client takes them.
    assert!(asked["roots"].as_u64() >= Some(1), "{context}");
    let read = report["resource"]["contents"].as_u64();
    assert!(read >= Some(1), "{context}");
    let prompt = report["prompt"]["messages"].as_u64();
    assert!(prompt >= Some(1), "{context}");
    // Each server's messages, at the level asked, however it is asked.
    assert_eq!(
        report["logged"],
        json!(["cu", "ref", "pylogs", "cu", "pylogs", "cu", "pylogs"]),
        "{context}"
    );
    let updated: Vec<&Value> = report["watch"]
        .as_array()
        .expect(&context)
        .iter()
        .map(|w| &w["updated"])
        .collect();
    assert_eq!(updated, ["mcpw:cu/test://watched-resource"], "{context}");
}

const MODES: [(&str, &str); 2] = [("auto", "2026-07-28"), ("legacy", "2025-11-25")];

#[test]
fn the_python_sdk_client_of_either_era_over_stdio() {
    let up = setup();
    let mcpw = json!([env!("CARGO_BIN_EXE_mcpw"), "serve", "--exposure", "direct"]).to_string();
    for (mode, revision) in MODES {
        check(&python_client(&up.dirs, mode, &mcpw), mode, revision);
    }
}

#[test]
fn the_python_sdk_client_of_either_era_over_streamable_http() {
    let up = setup();
    let serving = Serving::start(MCPW, &up.dirs.home(), &["--exposure", "direct"]);
    for (mode, revision) in MODES {
        check(
            &python_client(&up.dirs, mode, &serving.url()),
            mode,
            revision,
        );
    }
}

/// Code mode, in front of a server whose every call needs the user's
/// approval: a script's inner calls wait for what the servers ask and for
/// mcpw's own approval question, asked of a client of either era in its
/// own way (`inputRequired` rounds for 2026-07-28, requests otherwise).
#[test]
fn a_script_waits_for_its_calls_questions_and_approvals_in_either_era() {
    let up = setup();
    let config = json!({"mcpServers": {
        "cu": {"url": up.conformance.url("/mcp"), "approve": "all"},
        "ref": {"url": up.reference.url("/mcp")},
    }});
    up.dirs.user(&config.to_string());
    let serving = Serving::start(MCPW, &up.dirs.home(), &["--exposure", "code"]);
    let script = "const a = await tools.cu__test_simple_text({}); \
                  const b = await tools.cu__test_sampling({prompt: 'in a script'}); \
                  const c = await tools.ref__test_input_required_result_elicitation({}); \
                  return [a, b, c];";
    let plan = json!({"calls": [["code", {"code": script}]]});
    for (mode, revision) in MODES {
        let report = python_client_with(&up.dirs, mode, &serving.url(), &plan);
        let context = format!("{mode}: {report:#}");
        assert_eq!(report["protocolVersion"], revision, "{context}");
        let call = &report["calls"][0];
        assert_eq!(call["isError"], false, "{context}");
        let text = call["text"].as_str().unwrap_or_default();
        for answer in [
            "test",
            "LLM response: sampled: in a script",
            "Hello, elicited!",
        ] {
            assert!(text.contains(answer), "{answer}; {context}");
        }
        // Two approvals (each allowed once) and the server's own question.
        assert_eq!(report["asked"]["elicitation"], 3, "{context}");
        assert_eq!(report["asked"]["sampling"], 1, "{context}");
    }
}
