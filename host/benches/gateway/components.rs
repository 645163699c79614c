//! Row 14: a server as a WebAssembly component against the same server as a
//! native stdio process: `tests/components/rmcp-stdio` (rmcp), built both
//! ways. Through `mcpw serve --exposure direct`: the first call of a fresh
//! `mcpw serve` (which starts the server: a process, or an instance) with
//! the compiled component cached and without; then sequential `echo` calls
//! (TS SDK client, p50), in alternating rounds; memory: mcpw's RSS with the
//! instance running, against mcpw's plus the native process', and the
//! instance's own peak as its store's limiter saw it.

use crate::shared::{
    ROUNDS, SdkPath, connect, home_with, mcpw_command, mcpw_env_json, median, mib, request,
    sdk_rounds,
};
use mcpw_test_support::stats::{ms, proc_kb};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const FIRST_CALL_RUNS: usize = 5;

/// The server built both ways: (native executable, component).
pub(crate) fn build(root: &Path) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/components/rmcp-stdio");
    let target = root.join("components-target");
    let native = mcpw_guest_build::build_crate_bin_native(&dir, "rmcp_stdio", &target);
    let wasm = mcpw_guest_build::build_crate_bin(&dir, "rmcp_stdio", &target);
    (native, wasm)
}

/// Spawn `mcpw serve` → the first `probe__echo` answer (the server started on
/// the way); then mcpw's RSS and its children's, in kB.
async fn first_call(home: &Path) -> (Duration, u64, u64) {
    let cmd = mcpw_command(home, &["serve", "--exposure", "direct"]).into();
    let t = Instant::now();
    let (client, pid, _) = connect(cmd, "mcpw serve").await;
    let call = request("probe__echo", json!({"message": "ping"}));
    let result = client.call_tool(call).await.expect("the first call");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let elapsed = t.elapsed();
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    let child_kb = children
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .map(|c| proc_kb(c, "VmRSS"))
        .sum();
    let rss = proc_kb(pid, "VmRSS");
    let _ = client.cancel().await;
    (elapsed, rss, child_kb)
}

/// The instance's memory at its peak after an `echo` (what the store's
/// limiter saw it grow to), as `mcpw plugin server` reports it, in MiB.
fn instance_peak(wasm: &Path, home: &Path) -> f64 {
    let out = mcpw_command(home, &["plugin", "server"])
        .arg(wasm)
        .args([
            "--call",
            "echo",
            "--args",
            r#"{"message": "ping"}"#,
            "--json",
        ])
        .output()
        .expect("mcpw plugin server");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    report["memoryPeakMiB"].as_f64().unwrap_or(f64::NAN)
}

pub(crate) async fn row14_components(root: &Path) -> String {
    println!(
        "## 14. A server as a WebAssembly component and as a native process (rmcp, built both ways)"
    );
    let (native, wasm) = build(root);
    let home_native = home_with(&root.join("native"), json!({"probe": {"command": native}}));
    let home_component = home_with(
        &root.join("component"),
        json!({"probe": {"component": wasm}}),
    );
    let cache = home_component.join(".cache/mcpw/components");
    let mut firsts: [Vec<f64>; 3] = Default::default();
    let mut memory: [Vec<f64>; 2] = Default::default();
    for _ in 0..FIRST_CALL_RUNS {
        let (d, rss, child) = first_call(&home_native).await;
        firsts[0].push(ms(d));
        memory[0].push(mib(rss + child));
        let _ = std::fs::remove_dir_all(&cache);
        firsts[1].push(ms(first_call(&home_component).await.0));
        let (d, rss, _) = first_call(&home_component).await;
        firsts[2].push(ms(d));
        memory[1].push(mib(rss));
    }
    let [native_first, cold, warm] = firsts.map(|f| median(&f));
    let [native_mem, component_mem] = memory.map(|m| median(&m));
    println!(
        "first call of a fresh mcpw serve: native {native_first:.1} ms, component {warm:.1} ms compiled / {cold:.1} ms compiling"
    );
    let instance = instance_peak(&wasm, &home_component);
    println!(
        "memory: mcpw + native process {native_mem:.1} MiB, mcpw with the instance {component_mem:.1} MiB (the instance's own peak {instance:.1} MiB)"
    );
    let echo = json!({"message": "ping"});
    let path = |name, home: &Path| SdkPath {
        name,
        connect: json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", "direct"],
                        "env": mcpw_env_json(home)}),
        tool: "probe__echo",
        args: echo.clone(),
        warm_args: echo.clone(),
    };
    let paths = [
        path("native", &home_native),
        path("component", &home_component),
    ];
    let n = 300;
    let stats = sdk_rounds(&paths, n, ROUNDS, root);
    let p50 = |i: usize| median(&stats[i].iter().map(|s| s.p50).collect::<Vec<_>>());
    let (native_p50, component_p50) = (p50(0), p50(1));
    println!(
        "echo p50 through mcpw ({n} calls × {ROUNDS} rounds): native {native_p50:.3} ms, component {component_p50:.3} ms\n"
    );
    format!(
        "| 14 | The same rmcp server as a component and as a native process, through `mcpw serve`: first call of a fresh serve (server started on the way); `echo` p50; memory | \
         component: first call {warm:.0} ms compiled ({cold:.0} ms compiling), p50 {component_p50:.3} ms, mcpw with the instance {component_mem:.1} MiB (the instance's peak {instance:.1} MiB) | \
         native: first call {native_first:.0} ms, p50 {native_p50:.3} ms, mcpw + process {native_mem:.1} MiB | \
         first call {:+.0} ms, p50 {:+.3} ms, memory {:+.1} MiB |",
        warm - native_first,
        component_p50 - native_p50,
        component_mem - native_mem
    )
}
