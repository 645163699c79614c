//! Rows 6 and 7: what a hostile or merely large upstream puts on `mcpw serve`.
//! Row 6 is a server flooding notifications (log messages, then `list_changed`)
//! while a client calls it; row 7 a server with 5,000 tools. Both use an rmcp
//! client over stdio, beside a direct connection to the same server.

// Logging is deprecated in the newest MCP revision; the flood row uses it as the
// older revisions servers still speak do.
#![allow(deprecated)]

use super::*;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::NotificationContext;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Log messages per `flood` call; the flooder calls it again as soon as it returns.
const FLOOD_BURST: usize = 5_000;
const FLOOD_ECHOES: usize = 300;
const LIST_FLOOD: usize = 5_000;
pub const MANY_TOOLS: usize = 5_000;
const MANY_CALLS: usize = 200;
const MANY_RUNS: usize = 5;
const SEARCHES: [&str; 8] = [
    "export an invoice",
    "delete old backups",
    "archive a slack message",
    "validate the webhook",
    "list deployments",
    "summarise the report",
    "update a customer",
    "import a dataset",
];

/// A client that counts the log messages it gets.
#[derive(Clone, Default)]
struct Counting(Arc<AtomicUsize>);

impl rmcp::ClientHandler for Counting {
    async fn on_logging_message(
        &self,
        _: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

type Client = RunningService<RoleClient, Counting>;

/// Starts `cmd` as a stdio MCP server and connects to it; returns its pid too.
async fn connect(mut cmd: tokio::process::Command, what: &str) -> (Client, u32, Arc<AtomicUsize>) {
    cmd.env(TAG_ENV, tag()).kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let pid = transport.id().expect("a pid");
    let logs = Counting::default();
    let counter = logs.0.clone();
    let client = match tokio::time::timeout(Duration::from_secs(60), logs.serve(transport)).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => panic!("{what}: initialize failed: {e}"),
        Err(_) => panic!("{what}: no initialize answer in 60 s"),
    };
    (client, pid, counter)
}

fn request(tool: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(map) = arguments else {
        unreachable!("arguments are an object")
    };
    CallToolRequestParams::new(tool.to_string()).with_arguments(map)
}

async fn call(client: &Client, tool: &str, arguments: Value) -> Duration {
    let t = Instant::now();
    let out = client
        .call_tool(request(tool, arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool} failed: {e}"));
    assert_ne!(
        out.is_error,
        Some(true),
        "{tool} answered an error: {out:?}"
    );
    t.elapsed()
}

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

fn p(d: &[Duration], q: f64) -> f64 {
    ms(percentile(d, q))
}

// ---------------------------------------------------------------------------
// Row 6: an upstream flooding notifications

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
pub async fn row6_flood(misbehave: &str, home: &Path, lists_home: &Path) -> String {
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

// ---------------------------------------------------------------------------
// Row 7: a server with 5,000 tools

/// Spawn → first complete `tools/list`; the client, its pid and the tool count.
async fn first_list(cmd: tokio::process::Command, what: &str) -> (Duration, Client, u32, usize) {
    let t = Instant::now();
    let (client, pid, _) = connect(cmd, what).await;
    let tools = client
        .list_all_tools()
        .await
        .unwrap_or_else(|e| panic!("{what}: tools/list failed: {e}"));
    (t.elapsed(), client, pid, tools.len())
}

fn serve(home: &Path, exposure: &str) -> tokio::process::Command {
    mcpw_command(home, &["serve", "--exposure", exposure]).into()
}

/// 20 calls to warm up, then [`MANY_CALLS`] timed ones, sorted.
async fn warm_calls(client: &Client, tool: &str) -> Vec<Duration> {
    let hello = || json!({"message": "hello"});
    for _ in 0..20 {
        call(client, tool, hello()).await;
    }
    let mut d = Vec::with_capacity(MANY_CALLS);
    for _ in 0..MANY_CALLS {
        d.push(call(client, tool, hello()).await);
    }
    d.sort();
    d
}

pub async fn row7_many_tools(misbehave: &str, home: &Path) -> String {
    println!(
        "## 7. A server with {MANY_TOOLS} tools (misbehave.mjs `many`, one page): first `tools/list` ({MANY_RUNS} runs), {MANY_CALLS} calls to its last tool, searches"
    );
    let last = format!("validate_webhook_{}", MANY_TOOLS - 1);
    let node = || {
        let mut cmd = tokio::process::Command::new("node");
        cmd.args([misbehave, "many"]);
        cmd
    };
    let cache = home.join(".cache/mcpw");
    let (mut direct, mut cold, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    let mut rss = (0, 0);
    for _ in 0..MANY_RUNS {
        let (d, client, _, n) = first_list(node(), "misbehave.mjs many").await;
        assert_eq!(n, MANY_TOOLS, "the server lists every tool");
        direct.push(d);
        let _ = client.cancel().await;

        let _ = std::fs::remove_dir_all(&cache);
        let (d, client, pid, n) = first_list(serve(home, "direct"), "mcpw serve").await;
        assert_eq!(n, MANY_TOOLS, "a cold mcpw lists every tool");
        cold.push(d);
        rss.0 = proc_kb(pid, "VmRSS");
        let _ = client.cancel().await;

        let (d, client, pid, n) = first_list(serve(home, "direct"), "mcpw serve").await;
        assert_eq!(n, MANY_TOOLS, "a warm mcpw lists every tool");
        warm.push(d);
        rss.1 = proc_kb(pid, "VmRSS");
        let _ = client.cancel().await;
    }
    for v in [&mut direct, &mut cold, &mut warm] {
        v.sort();
    }

    // Calls to the last tool, direct and through mcpw (both warm).
    let (_, client, _, _) = first_list(node(), "misbehave.mjs many").await;
    let direct_calls = warm_calls(&client, &last).await;
    let _ = client.cancel().await;
    let (_, client, _, _) = first_list(serve(home, "direct"), "mcpw serve").await;
    let mcpw_calls = warm_calls(&client, &format!("b__{last}")).await;
    let _ = client.cancel().await;

    // Searches: the first one builds the index; then each query 5 times.
    let mut searches = Vec::new();
    for (exposure, tool, key) in [
        ("tool-search", "ToolSearch", "query"),
        ("proxy", "mcp", "search"),
    ] {
        let (_, client, _, _) = first_list(serve(home, exposure), "mcpw serve").await;
        let first = call(&client, tool, json!({key: SEARCHES[0]})).await;
        let mut d = Vec::new();
        for _ in 0..5 {
            for q in SEARCHES {
                d.push(call(&client, tool, json!({key: q})).await);
            }
        }
        d.sort();
        let _ = client.cancel().await;
        println!(
            "{exposure:<12} first search {:.1} ms, then p50 {:.2} ms p99 {:.2} ms",
            ms(first),
            p(&d, 0.5),
            p(&d, 0.99)
        );
        searches.push(format!(
            "{exposure} search p50 {:.2} ms (first {:.0} ms)",
            p(&d, 0.5),
            ms(first)
        ));
    }
    println!(
        "first tools/list p50: direct {:.0} ms, mcpw cold {:.0} ms (RSS {:.1} MiB), warm {:.0} ms (RSS {:.1} MiB)",
        p(&direct, 0.5),
        p(&cold, 0.5),
        mib(rss.0),
        p(&warm, 0.5),
        mib(rss.1)
    );
    println!(
        "calls to {last}: direct p50 {:.3} ms p99 {:.3} ms, mcpw p50 {:.3} ms p99 {:.3} ms\n",
        p(&direct_calls, 0.5),
        p(&direct_calls, 0.99),
        p(&mcpw_calls, 0.5),
        p(&mcpw_calls, 0.99)
    );
    format!(
        "| 7 | A server with {MANY_TOOLS} tools (stdio, one page): spawn → first full `tools/list` (p50 of {MANY_RUNS}); {MANY_CALLS} calls to its last tool; searches \
         | `serve --exposure direct` cold (empty cache) {:.0} ms, warm {:.0} ms (RSS {:.1} / {:.1} MiB); calls p50 {:.3} ms / p99 {:.3} ms; {} \
         | direct: {:.0} ms; calls p50 {:.3} ms / p99 {:.3} ms | cold {:+.0} ms, calls {:+.3} ms p50 |",
        p(&cold, 0.5),
        p(&warm, 0.5),
        mib(rss.0),
        mib(rss.1),
        p(&mcpw_calls, 0.5),
        p(&mcpw_calls, 0.99),
        searches.join("; "),
        p(&direct, 0.5),
        p(&direct_calls, 0.5),
        p(&direct_calls, 0.99),
        p(&cold, 0.5) - p(&direct, 0.5),
        p(&mcpw_calls, 0.5) - p(&direct_calls, 0.5),
    )
}
