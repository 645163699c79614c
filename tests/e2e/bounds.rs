//! mcpw's memory whatever the other side does: a component server that
//! writes without a newline. Against a limit that could be broken.

use crate::common::ConfigDirs;
use crate::servers::mcpw_in;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use std::process::Stdio;

/// A process's memory in MiB, as `/proc/PID/status` gives it under `field`
/// (`VmRSS` now, `VmHWM` its peak so far).
fn memory_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"));
    kb / 1024.0
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string())
        .with_arguments(arguments.as_object().unwrap().clone())
}

/// A component writing 600 MiB to its stdout with no newline, its answer at
/// the end of that line: mcpw reads it as it reads a native server's output,
/// holding no more than the 128 MiB message limit of it, so the flood adds
/// less than 176 MiB to mcpw's peak (in a release build, mcpw with the
/// instance starts near 45 MiB: benchmark row 16 measures the 200 MiB goal);
/// the call fails with the limit named, and the next call on the same
/// instance is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_flooding_stdout_fails_its_call_and_mcpw_keeps_its_memory() {
    let dirs = ConfigDirs::new();
    let wasm = crate::components::rmcp_stdio().display().to_string();
    // Time enough for the flood however slow the build: the limit tested is memory.
    let probe = json!({"component": wasm, "permissions": {"timeoutMs": 600_000}});
    dirs.user(&json!({"mcpServers": {"probe": probe}}).to_string());
    let mut cmd = mcpw_in(&dirs.home());
    cmd.args(["serve", "--exposure", "direct"]);
    let (transport, _) =
        rmcp::transport::TokioChildProcess::builder(tokio::process::Command::from(cmd))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    let pid = transport.id().expect("mcpw's pid");
    let client = ().serve(transport).await.unwrap();
    let echo = |m: &str| call("probe__echo", json!({"message": m}));
    let before = client.call_tool(echo("before")).await.unwrap();
    assert_eq!(crate::gateway::serve::text(&json!(before)), "Echo: before");
    let before = memory_mib(pid, "VmRSS");

    let flooded = client
        .call_tool(call("probe__flood", json!({"mib": 600})))
        .await;
    let said = match &flooded {
        Ok(result) => {
            assert_eq!(result.is_error, Some(true), "{result:?}");
            serde_json::to_string(result).unwrap()
        }
        Err(e) => e.to_string(),
    };
    assert!(said.contains("larger than 128 MiB"), "{said}");
    let after = client.call_tool(echo("after the flood")).await.unwrap();
    assert_eq!(
        crate::gateway::serve::text(&json!(after)),
        "Echo: after the flood",
        "the instance and its connection stay"
    );
    let peak = memory_mib(pid, "VmHWM");
    eprintln!("mcpw: {before:.0} MiB before the flood, {peak:.0} MiB at its peak");
    assert!(
        peak - before < 128.0 + 48.0,
        "mcpw peaked at {peak:.0} MiB, from {before:.0} MiB before the flood"
    );
    let _ = client.cancel().await;
}
