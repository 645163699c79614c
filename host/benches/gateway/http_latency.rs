//! Row 9: the latency mcpw adds over Streamable HTTP. The same TypeScript SDK
//! client makes sequential `echo` calls to server-everything's own Streamable
//! HTTP endpoint and to `mcpw serve --http` in front of that endpoint, in
//! alternating rounds. A response that waits for a delayed ACK (Nagle on an
//! accepted socket) shows here as ~40 ms added.

use crate::shared::{
    Proc, ROUNDS, SdkPath, SdkStats, free_port, home_with, mcpw_command, median, sdk_rounds,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Calls per path and round.
const CALLS: usize = 300;
/// What mcpw may add at p50 over the server's own endpoint.
const GOAL_MS: f64 = 1.0;

/// Both endpoints, running and listening, and the HOME mcpw runs in.
struct Targets {
    home: PathBuf,
    se: Proc,
    se_url: String,
    mcpw: Proc,
    mcpw_url: String,
}

pub(crate) fn row9_http_latency(everything: &str, root: &Path) -> String {
    println!(
        "## 9. Sequential `echo` over Streamable HTTP, TS SDK client, {CALLS} calls × {ROUNDS} alternating rounds"
    );
    let t = start(everything, root);
    let echo = json!({"message": "ping"});
    let paths = [
        SdkPath {
            name: "server-everything streamableHttp",
            connect: json!({"url": t.se_url}),
            tool: "echo",
            args: echo.clone(),
            warm_args: echo.clone(),
        },
        SdkPath {
            name: "mcpw serve --http (direct) → it",
            connect: json!({"url": t.mcpw_url}),
            tool: "e__echo",
            args: echo.clone(),
            warm_args: echo,
        },
    ];
    // Each run of client.mjs makes one warm-up call before the timed ones.
    let stats = sdk_rounds(&paths, CALLS, ROUNDS, &t.home);
    drop(t.mcpw);
    drop(t.se);
    report(&paths, &stats)
}

/// server-everything's own Streamable HTTP endpoint, then `mcpw serve --http`
/// in front of it (its HOME configures the endpoint as server `e`).
fn start(everything: &str, root: &Path) -> Targets {
    let home = root.join("http-latency");
    let se_port = free_port();
    let se_url = format!("http://127.0.0.1:{se_port}/mcp");
    let home = home_with(&home, json!({"e": {"url": &se_url}}));
    let mut cmd = Command::new("node");
    cmd.args([everything, "streamableHttp"])
        .env("PORT", se_port.to_string())
        .current_dir(&home);
    let mut se = Proc::spawn(
        cmd,
        "server-everything streamableHttp",
        Some(home.join("everything-http.stderr")),
    );
    se.wait_for_port(se_port);
    let mcpw_port = free_port();
    let addr = format!("127.0.0.1:{mcpw_port}");
    let mut mcpw = Proc::spawn(
        mcpw_command(&home, &["serve", "--http", &addr, "--exposure", "direct"]),
        "mcpw serve --http",
        Some(home.join("mcpw-http.stderr")),
    );
    mcpw.wait_for_port(mcpw_port);
    Targets {
        home,
        se,
        se_url,
        mcpw,
        mcpw_url: format!("http://{addr}/mcp"),
    }
}

/// Prints both endpoints and what mcpw adds against the goal; returns the row
/// of the summary table.
fn report(paths: &[SdkPath], stats: &[Vec<SdkStats>]) -> String {
    let of =
        |i: usize, f: fn(&SdkStats) -> f64| median(&stats[i].iter().map(f).collect::<Vec<_>>());
    // Added per round (same round, same machine state), then the median.
    let added = median(
        &(0..ROUNDS)
            .map(|r| stats[1][r].p50 - stats[0][r].p50)
            .collect::<Vec<_>>(),
    );
    for (i, p) in paths.iter().enumerate() {
        let rounds: Vec<String> = stats[i].iter().map(|s| format!("{:.3}", s.p50)).collect();
        println!(
            "{:<34} p50 {:>7.3} ms  p99 {:>7.3} ms   p50 per round: {}",
            p.name,
            of(i, |s| s.p50),
            of(i, |s| s.p99),
            rounds.join(" ")
        );
    }
    let verdict = if added <= GOAL_MS {
        format!("within the {GOAL_MS} ms goal")
    } else {
        format!("OVER the {GOAL_MS} ms goal")
    };
    println!("mcpw added p50 {added:+.3} ms: {verdict}\n");
    format!(
        "| 9 | Added latency over Streamable HTTP, sequential `echo`, TS SDK client ({CALLS} calls × {ROUNDS} rounds) \
         | `mcpw serve --http --exposure direct` in front of the endpoint: p50 {:.3} / p99 {:.3} ms \
         | server-everything's own endpoint: p50 {:.3} / p99 {:.3} ms | {added:+.3} ms p50 ({verdict}) |",
        of(1, |s| s.p50),
        of(1, |s| s.p99),
        of(0, |s| s.p50),
        of(0, |s| s.p99),
    )
}
