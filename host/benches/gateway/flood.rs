//! Row 6: an upstream flooding notifications on `mcpw serve`. The server
//! sends log messages while a client calls it, then a flood of `list_changed`;
//! an rmcp client over stdio, beside a direct connection to the same server.

// Logging is deprecated in the newest MCP revision; the flood row uses it as the
// older revisions servers still speak do.
#![allow(deprecated)]

use crate::shared::{Client, call, connect, mib, ms, p, proc_kb, request, serve};
use rmcp::model::{LoggingLevel, SetLevelRequestParams};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Log messages per `flood` call; the flooder calls it again as soon as it returns.
const FLOOD_BURST: usize = 5_000;
const FLOOD_ECHOES: usize = 300;
const LIST_FLOOD: usize = 5_000;

async fn echoes(client: &Client, tool: &str, n: usize) -> Vec<Duration> {
    let mut d = Vec::with_capacity(n);
    for i in 0..n {
        d.push(call(client, tool, json!({"message": format!("m{i}")})).await);
    }
    d.sort();
    d
}

/// CPU time (user + system) of a process so far, in ms; 0 if unreadable.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which may hold spaces: state is field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    f.iter().sum::<u64>() as f64 * 1000.0 / hz
}

struct Flooded {
    quiet: Vec<Duration>,
    flooded: Vec<Duration>,
    sent: usize,
    delivered: usize,
    /// The measured process: CPU ms spent during the flood, RSS before, peak RSS.
    cpu_ms: f64,
    rss_kb: (u64, u64),
}

/// Echo calls before and during a log flood from the same server, with the
/// client at level `info` (so every message is for it).
async fn flood_path(cmd: tokio::process::Command, what: &str, prefix: &str) -> Flooded {
    let (client, pid, logs) = connect(cmd, what).await;
    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap_or_else(|e| panic!("{what}: logging/setLevel failed: {e}"));
    let echo = format!("{prefix}echo");
    let flood = format!("{prefix}flood");
    echoes(&client, &echo, 50).await;
    let quiet = echoes(&client, &echo, FLOOD_ECHOES).await;

    let rss_before = proc_kb(pid, "VmRSS");
    let cpu_before = cpu_ms(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let flooder = {
        let peer = client.peer().clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut bursts = 0;
            while !stop.load(Ordering::Relaxed) {
                let flood = request(&flood, json!({"kind": "log", "count": FLOOD_BURST}));
                peer.call_tool(flood).await.expect("a flood call");
                bursts += 1;
            }
            bursts
        })
    };
    let flooded = echoes(&client, &echo, FLOOD_ECHOES).await;
    stop.store(true, Ordering::Relaxed);
    let sent = flooder.await.expect("the flooder") * FLOOD_BURST;
    // Messages still in pipes arrive within moments; then the count stands.
    let mut delivered = logs.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = logs.load(Ordering::Relaxed);
        if now == delivered {
            break;
        }
        delivered = now;
    }
    let cpu = cpu_ms(pid) - cpu_before;
    let hwm = proc_kb(pid, "VmHWM");
    let _ = client.cancel().await;
    Flooded {
        quiet,
        flooded,
        sent,
        delivered,
        cpu_ms: cpu,
        rss_kb: (rss_before, hwm),
    }
}

/// `count` list_changed from the server: how many relists mcpw makes, and how
/// long until it is done with them.
async fn list_flood(home: &Path, methods: &Path) -> (usize, Duration) {
    let (client, _, _) = connect(serve(home, "direct"), "mcpw serve").await;
    call(&client, "m__echo", json!({"message": "warm"})).await;
    let lists = || {
        std::fs::read_to_string(methods)
            .unwrap_or_default()
            .lines()
            .filter(|m| *m == "tools/list")
            .count()
    };
    let before = lists();
    let t = Instant::now();
    call(
        &client,
        "m__flood",
        json!({"kind": "list_changed", "count": LIST_FLOOD}),
    )
    .await;
    // Done when no relist has come for a second.
    let (mut seen, mut last) = (lists(), Instant::now());
    while last.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = lists();
        if now != seen {
            (seen, last) = (now, Instant::now());
        }
    }
    let settled = last.duration_since(t);
    let _ = client.cancel().await;
    (seen - before, settled)
}

/// `home` serves `m` (misbehave.mjs ok); `lists_home` the same server with
/// `$METHODS_FILE` at `<lists_home>/methods`, for counting its relists.
pub(crate) async fn row6_flood(misbehave: &str, home: &Path, lists_home: &Path) -> String {
    println!(
        "## 6. An upstream flooding notifications: {FLOOD_ECHOES} sequential `echo` calls, quiet and during a flood of log messages (bursts of {FLOOD_BURST}, the client at level info); then {LIST_FLOOD} list_changed"
    );
    let direct = {
        let mut cmd = tokio::process::Command::new("node");
        cmd.args([misbehave, "ok"]);
        flood_path(cmd, "misbehave.mjs", "").await
    };
    let mcpw = flood_path(serve(home, "direct"), "mcpw serve", "m__").await;
    for (name, r) in [("direct", &direct), ("mcpw serve --exposure direct", &mcpw)] {
        println!(
            "{name:<30} quiet p50 {:.3} ms p99 {:.3} ms | flooded p50 {:.3} ms p99 {:.3} ms | {} of {} messages delivered | measured process: {:.0} ms CPU, RSS {:.1} → peak {:.1} MiB",
            p(&r.quiet, 0.5),
            p(&r.quiet, 0.99),
            p(&r.flooded, 0.5),
            p(&r.flooded, 0.99),
            r.delivered,
            r.sent,
            r.cpu_ms,
            mib(r.rss_kb.0),
            mib(r.rss_kb.1)
        );
    }
    let (relists, settled) = list_flood(lists_home, &lists_home.join("methods")).await;
    println!(
        "{LIST_FLOOD} list_changed → {relists} relists, done {:.0} ms after the flood began\n",
        ms(settled)
    );
    format!(
        "| 6 | An upstream flooding notifications (stdio, rmcp client): {FLOOD_ECHOES} `echo` calls during log-message bursts of {FLOOD_BURST}, client at level info; then {LIST_FLOOD} `list_changed` \
         | flooded p50 {:.2} ms / p99 {:.2} ms (quiet {:.2} / {:.2}); {} of {} messages relayed (the rest dropped), mcpw CPU {:.1} µs per message sent; RSS {:.1} → peak {:.1} MiB; {LIST_FLOOD} list_changed → {relists} relists, done in {:.0} ms \
         | direct: flooded p50 {:.2} ms / p99 {:.2} ms (quiet {:.2} / {:.2}); {} of {} delivered | p50 {:+.2} ms flooded ({:+.2} ms quiet) |",
        p(&mcpw.flooded, 0.5),
        p(&mcpw.flooded, 0.99),
        p(&mcpw.quiet, 0.5),
        p(&mcpw.quiet, 0.99),
        mcpw.delivered,
        mcpw.sent,
        mcpw.cpu_ms * 1000.0 / mcpw.sent.max(1) as f64,
        mib(mcpw.rss_kb.0),
        mib(mcpw.rss_kb.1),
        ms(settled),
        p(&direct.flooded, 0.5),
        p(&direct.flooded, 0.99),
        p(&direct.quiet, 0.5),
        p(&direct.quiet, 0.99),
        direct.delivered,
        direct.sent,
        p(&mcpw.flooded, 0.5) - p(&direct.flooded, 0.5),
        p(&mcpw.quiet, 0.5) - p(&direct.quiet, 0.5),
    )
}
