//! Row 1: the latency mcpw adds over stdio. The official TypeScript SDK client
//! makes sequential `echo` calls to server-everything directly, through a plain
//! byte relay, through the smallest rmcp forwarder (rmcp's own floor), through
//! `mcpw serve --exposure direct` and through the `mcp` proxy tool, in
//! alternating rounds.

use crate::forwarder;
use crate::shared::{ROUNDS, Relay, SdkPath, SdkStats, mcpw_env_json, median, sdk_rounds};
use serde_json::json;
use std::path::Path;

pub(crate) fn row1_stdio_latency(everything: &str, home: &Path, relay: &Relay, n: usize) -> String {
    println!(
        "## 1. Sequential `echo` over stdio, TS SDK client, {n} calls × {ROUNDS} alternating rounds"
    );
    let paths = paths(everything, home, relay);
    // Each run of client.mjs makes one warm-up call before the timed ones.
    let stats = sdk_rounds(&paths, n, ROUNDS, home);
    print_table(&paths, &stats);
    summary(n, &stats)
}

/// The five ways to reach server-everything, the direct one first (the others
/// are read against it).
fn paths(everything: &str, home: &Path, relay: &Relay) -> [SdkPath; 5] {
    let echo = json!({"message": "ping"});
    let proxied = json!({"tool": "e__echo", "args": echo});
    let serve = |exposure: &str| {
        json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", exposure],
               "env": mcpw_env_json(home)})
    };
    [
        SdkPath {
            name: "direct",
            connect: json!({"command": "node", "args": [everything, "stdio"]}),
            tool: "echo",
            args: echo.clone(),
            warm_args: echo.clone(),
        },
        SdkPath {
            name: "byte relay",
            connect: relay.connect(&["node", everything, "stdio"]),
            tool: "echo",
            args: echo.clone(),
            warm_args: echo.clone(),
        },
        SdkPath {
            name: "minimal rmcp forwarder",
            connect: json!({"command": std::env::current_exe().expect("the bench's own path"),
                            "args": ["node", everything, "stdio"], "env": {forwarder::ENV: "1"}}),
            tool: "echo",
            args: echo.clone(),
            warm_args: echo.clone(),
        },
        SdkPath {
            name: "mcpw serve --exposure direct",
            connect: serve("direct"),
            tool: "e__echo",
            args: echo.clone(),
            warm_args: echo.clone(),
        },
        SdkPath {
            name: "mcpw serve (proxy, `mcp` tool)",
            connect: serve("proxy"),
            tool: "mcp",
            args: proxied.clone(),
            warm_args: proxied,
        },
    ]
}

/// Added latency of path `i` per round (same round = same machine state), then
/// the median.
fn added(stats: &[Vec<SdkStats>], i: usize) -> f64 {
    median(
        &(0..ROUNDS)
            .map(|r| stats[i][r].p50 - stats[0][r].p50)
            .collect::<Vec<_>>(),
    )
}

/// What mcpw adds as a multiple of what the byte relay adds.
fn ratio(x: f64, relay_add: f64) -> String {
    if relay_add > 0.0 {
        format!("{:.1}×", x / relay_add)
    } else {
        "n/a (relay added ≤ 0)".into()
    }
}

/// Median over the rounds of one figure of path `i`.
fn of(stats: &[Vec<SdkStats>], i: usize, f: fn(&SdkStats) -> f64) -> f64 {
    median(&stats[i].iter().map(f).collect::<Vec<_>>())
}

/// The detailed table: every path with its p50 per round, then mcpw beside the
/// relay and the rmcp floor.
fn print_table(paths: &[SdkPath], stats: &[Vec<SdkStats>]) {
    println!(
        "{:<34} {:>9} {:>9} {:>14}   p50 per round (ms)",
        "path", "p50 ms", "p99 ms", "added p50 ms"
    );
    for (i, p) in paths.iter().enumerate() {
        let p50 = of(stats, i, |s| s.p50);
        let p99 = of(stats, i, |s| s.p99);
        let add = if i == 0 {
            "—".to_string()
        } else {
            format!("{:+.3}", added(stats, i))
        };
        let rounds: Vec<String> = stats[i].iter().map(|s| format!("{:.3}", s.p50)).collect();
        println!(
            "{:<34} {p50:>9.3} {p99:>9.3} {add:>14}   {}",
            p.name,
            rounds.join(" ")
        );
    }
    let (relay_add, floor_add) = (added(stats, 1), added(stats, 2));
    let (direct_add, proxy_add) = (added(stats, 3), added(stats, 4));
    println!(
        "mcpw added p50 = {} (direct exposure), {} (proxy) of the relay's; direct exposure {:+.3} ms beyond the rmcp floor\n",
        ratio(direct_add, relay_add),
        ratio(proxy_add, relay_add),
        direct_add - floor_add
    );
}

/// The row of the summary table.
fn summary(n: usize, stats: &[Vec<SdkStats>]) -> String {
    let (relay_add, floor_add) = (added(stats, 1), added(stats, 2));
    let (direct_add, proxy_add) = (added(stats, 3), added(stats, 4));
    let p = |i: usize, f: fn(&SdkStats) -> f64| of(stats, i, f);
    format!(
        "| 1 | Added latency over direct, stdio `echo`, TS SDK client ({n} calls × {ROUNDS} rounds; direct p50 {:.3} ms) \
         | direct exposure {direct_add:+.3} ms (p50 {:.3} / p99 {:.3} ms); proxy `mcp` {proxy_add:+.3} ms (p50 {:.3} / p99 {:.3} ms) \
         | byte relay {relay_add:+.3} ms (p50 {:.3} / p99 {:.3} ms); minimal rmcp forwarder {floor_add:+.3} ms (p50 {:.3} / p99 {:.3} ms) | {} (direct), {} (proxy) of the relay |",
        p(0, |s| s.p50),
        p(3, |s| s.p50),
        p(3, |s| s.p99),
        p(4, |s| s.p50),
        p(4, |s| s.p99),
        p(1, |s| s.p50),
        p(1, |s| s.p99),
        p(2, |s| s.p50),
        p(2, |s| s.p99),
        ratio(direct_add, relay_add),
        ratio(proxy_add, relay_add),
    )
}
