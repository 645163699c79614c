//! The official MCP conformance suite (`@modelcontextprotocol/conformance`): its
//! server scenarios against our upstream server directly, then through
//! `mcpw serve --http` in front of it; and its client scenarios with mcpw as
//! the client, its auth scenarios included (mcpw logs in).

use crate::common::ConfigDirs;
use crate::servers::{Background, MCPW, Serving, servers};
use serde_json::json;
use std::process::Command;

/// Runs every active server scenario against `url`; with a baseline, the run
/// fails on a failure not listed there and on a listed one that passes.
fn server_suite(url: &str, expected_failures: Option<&str>) -> (bool, String) {
    let s = servers();
    let mut cmd = Command::new("timeout");
    // No scenario has a timeout of its own; a hung one must not hang the tests.
    cmd.arg("300")
        .arg(s.node22())
        .arg(s.conformance())
        .args(["server", "--url", url]);
    if let Some(file) = expected_failures {
        cmd.arg("--expected-failures")
            .arg(crate::common::workspace().join(file));
    }
    let out = cmd.output().expect("run the conformance suite");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The `=== SUMMARY ===` lines: one per scenario, then the total.
fn summary(output: &str) -> Vec<&str> {
    output
        .lines()
        .skip_while(|l| !l.contains("=== SUMMARY ==="))
        .filter(|l| l.starts_with('✓') || l.starts_with('✗'))
        .collect()
}

#[test]
fn our_upstream_passes_every_server_scenario_directly() {
    let upstream = Background::node(&[&servers().conformance_upstream()], &[]);
    let (ok, output) = server_suite(&upstream.url("/mcp"), None);
    let lines = summary(&output);
    assert!(ok, "{output}");
    assert_eq!(lines.len(), 30, "30 active server scenarios:\n{output}");
    assert!(lines.iter().all(|l| l.starts_with('✓')), "{output}");
}

#[test]
fn server_scenarios_through_mcpw_match_the_baseline() {
    let upstream = Background::node(&[&servers().conformance_upstream()], &[]);
    through_mcpw_against(
        &upstream.url("/mcp"),
        "tests/conformance/expected-failures.yml",
    );
}

/// mcpw serving `upstream` (with the tools' own names) against `baseline`:
/// every scenario runs, and only those listed there fail.
fn through_mcpw_against(upstream: &str, baseline: &str) {
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"up": {"url": upstream, "startupTimeoutMs": 5000}},
                "settings": {"toolPrefix": "none"}})
        .to_string(),
    );
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let (ok, output) = server_suite(&serving.url(), Some(baseline));
    assert_eq!(summary(&output).len(), 30, "{output}");
    assert!(ok, "through mcpw, against {baseline}:\n{output}");
}

/// The conformance suite's reference server (`tests/servers/reference`).
fn reference_server() -> Background {
    let args = servers().reference_server();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Background::node(&args, &[])
}

#[test]
fn the_reference_server_passes_every_server_scenario_directly() {
    let reference = reference_server();
    let (ok, output) = server_suite(&reference.url("/mcp"), None);
    assert!(ok, "{output}");
    assert_eq!(summary(&output).len(), 30, "{output}");
}

const REFERENCE_BASELINE: &str = "tests/conformance/expected-failures-reference.yml";

/// The reference server speaks 2026-07-28 and streams its listen answer as
/// JSON, a message per line.
#[test]
fn server_scenarios_through_mcpw_in_front_of_the_reference_server() {
    let reference = reference_server();
    through_mcpw_against(&reference.url("/mcp"), REFERENCE_BASELINE);
}

/// The same server behind a proxy that never answers `subscriptions/listen`:
/// the connection does not depend on it.
#[test]
fn server_scenarios_through_mcpw_in_front_of_a_server_that_never_answers_listen() {
    let reference = reference_server();
    let upstream = reference.url("/mcp");
    let proxy = Background::node(
        &[&servers().listen_proxy()],
        &[("UPSTREAM", &upstream), ("LISTEN", "hold")],
    );
    through_mcpw_against(&proxy.url("/mcp"), REFERENCE_BASELINE);
}

/// Runs one client scenario with `tests/conformance/<script>` as the client;
/// returns whether it passed (exit codes aside: two auth scenarios let the
/// client fail) and the suite's report.
fn client_scenario(script: &str, scenario: &str) -> (bool, String) {
    let s = servers();
    let out = Command::new("timeout")
        .arg("120")
        .arg(s.node22())
        .arg(s.conformance())
        .args([
            "client",
            "--scenario",
            scenario,
            "--timeout",
            "60000",
            "--command",
        ])
        .arg(
            crate::common::workspace()
                .join("tests/conformance")
                .join(script),
        )
        .env("MCPW_BIN", env!("CARGO_BIN_EXE_mcpw"))
        .env("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB)
        .output()
        .expect("run the conformance suite");
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    (text.contains("OVERALL: PASSED"), text)
}

#[test]
fn client_scenarios_pass_with_mcpw_as_the_client() {
    for scenario in [
        "initialize",
        "tools_call",
        "sse-retry",
        "elicitation-sep1034-client-defaults",
    ] {
        let (passed, text) = client_scenario("client.sh", scenario);
        assert!(passed, "client scenario {scenario}:\n{text}");
    }
}

/// The client auth scenarios of 0.1.16: the 19 of the spec (2025-03-26 to
/// draft), then the 3 extensions.
const AUTH_SCENARIOS: [&str; 22] = [
    "metadata-default",
    "metadata-var1",
    "metadata-var2",
    "metadata-var3",
    "basic-cimd",
    "scope-from-www-authenticate",
    "scope-from-scopes-supported",
    "scope-omitted-when-undefined",
    "scope-step-up",
    "scope-retry-limit",
    "token-endpoint-auth-basic",
    "token-endpoint-auth-post",
    "token-endpoint-auth-none",
    "pre-registration",
    "2025-03-26-oauth-metadata-backcompat",
    "2025-03-26-oauth-endpoint-fallback",
    "resource-mismatch",
    "offline-access-scope",
    "offline-access-not-supported",
    "client-credentials-jwt",
    "client-credentials-basic",
    "cross-app-access-complete-flow",
];

/// The `client-auth` entries of the baseline.
fn expected_auth_failures() -> Vec<String> {
    let file = crate::common::workspace().join("tests/conformance/expected-failures.yml");
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .skip_while(|l| !l.starts_with("client-auth:"))
        .skip(1)
        .take_while(|l| l.starts_with(' ') || l.is_empty())
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(str::to_string)
        .collect()
}

#[test]
fn auth_scenarios_pass_with_mcpw_logging_in() {
    let expected = expected_auth_failures();
    // Two at a time: each is a few mcpw runs and a browser.
    let results: Vec<(String, bool, String)> = std::thread::scope(|scope| {
        let halves: Vec<_> = [0, 1]
            .map(|half| {
                scope.spawn(move || {
                    AUTH_SCENARIOS
                        .iter()
                        .skip(half)
                        .step_by(2)
                        .map(|name| {
                            let (passed, text) =
                                client_scenario("auth-client.sh", &format!("auth/{name}"));
                            (name.to_string(), passed, text)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .into_iter()
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut wrong = Vec::new();
    for (name, passed, text) in &results {
        let listed = expected.iter().any(|e| e == &format!("auth/{name}"));
        if *passed == listed {
            let why = if listed {
                "passes but is listed in the baseline"
            } else {
                "fails"
            };
            wrong.push(format!("auth/{name} {why}:\n{text}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    let passed = results.iter().filter(|r| r.1).count();
    assert_eq!(passed, AUTH_SCENARIOS.len() - expected.len());
}

/// A client at the wire that initializes and calls at once, without
/// `notifications/initialized` (which a server handles beside the call, so
/// it may come second) and without a standalone stream: the server's
/// elicitation still reaches it, on its call's own stream, and its answer
/// reaches the server. The call's id (7) is not the server's request id, so
/// the question must be put on the stream of the client's call, not of an
/// id taken from the server's request.
#[tokio::test(flavor = "multi_thread")]
async fn a_servers_question_reaches_a_call_made_before_initialized_on_its_own_stream() {
    use futures::StreamExt;
    let upstream = Background::node(&[&servers().conformance_upstream()], &[]);
    let dirs = ConfigDirs::new();
    let up = json!({"url": upstream.url("/mcp"), "startupTimeoutMs": 5000});
    dirs.user(&json!({"mcpServers": {"up": up}, "settings": {"toolPrefix": "none"}}).to_string());
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let http = reqwest::Client::new();
    let post = |body: serde_json::Value, session: Option<&str>| {
        let mut p = http
            .post(serving.url())
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(s) = session {
            p = p.header("mcp-session-id", s);
        }
        p.json(&body).send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "wire", "version": "1"}}});
    let opened = post(init, None).await.unwrap();
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = opened.text().await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "test_elicitation", "arguments": {"message": "who?"}}});
    let answer = post(call, Some(&session)).await.unwrap();
    let mut events = answer.bytes_stream();
    let mut seen = String::new();
    let result = loop {
        let next = tokio::time::timeout(std::time::Duration::from_secs(20), events.next());
        let chunk = next
            .await
            .unwrap_or_else(|_| panic!("nothing more came: {seen}"));
        let chunk = chunk.expect("the stream ended").unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
        let messages: Vec<serde_json::Value> = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect();
        if let Some(done) = messages.iter().find(|m| m["id"] == 7) {
            break done.clone();
        }
        let Some(asked) = messages
            .iter()
            .find(|m| m["method"] == "elicitation/create")
        else {
            continue;
        };
        if seen.contains("answered") {
            continue;
        }
        seen.push_str("\n(answered)\n");
        let content = json!({"username": "wire", "email": "wire@example.com"});
        let reply = json!({"jsonrpc": "2.0", "id": asked["id"],
                           "result": {"action": "accept", "content": content}});
        assert_eq!(post(reply, Some(&session)).await.unwrap().status(), 202);
    };
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("action=accept") && text.contains("wire@example.com"),
        "{result:#}"
    );
}
