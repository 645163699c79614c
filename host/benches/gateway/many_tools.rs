//! Row 7: a server with 5,000 tools behind `mcpw serve`: the first `tools/list`
//! cold and warm, calls to its last tool, searches in tool-search and proxy
//! exposure; an rmcp client over stdio, beside a direct connection to the same
//! server.

use crate::shared::{Client, call, connect, mib, ms, p, proc_kb, serve};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

pub(crate) const MANY_TOOLS: usize = 5_000;
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

/// The server itself, started directly.
fn node(misbehave: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("node");
    cmd.args([misbehave, "many"]);
    cmd
}

/// Spawn → first full `tools/list`, each sorted: direct, mcpw with an empty
/// cache, mcpw with the cache that run left; mcpw's RSS (kB) cold and warm.
struct FirstLists {
    direct: Vec<Duration>,
    cold: Vec<Duration>,
    warm: Vec<Duration>,
    rss: (u64, u64),
}

pub(crate) async fn row7_many_tools(misbehave: &str, home: &Path) -> String {
    println!(
        "## 7. A server with {MANY_TOOLS} tools (misbehave.mjs `many`, one page): first `tools/list` ({MANY_RUNS} runs), {MANY_CALLS} calls to its last tool, searches"
    );
    let last = format!("validate_webhook_{}", MANY_TOOLS - 1);
    let lists = first_lists(misbehave, home).await;
    let (direct_calls, mcpw_calls) = last_tool_calls(misbehave, home, &last).await;
    let searches = searches(home).await;
    report(&last, &lists, &direct_calls, &mcpw_calls, &searches)
}

/// [`MANY_RUNS`] runs of the three first lists; the cold one empties mcpw's
/// cache first, the warm one reads what the cold one wrote.
async fn first_lists(misbehave: &str, home: &Path) -> FirstLists {
    let cache = home.join(".cache/mcpw");
    let (mut direct, mut cold, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    let mut rss = (0, 0);
    for _ in 0..MANY_RUNS {
        let (d, client, _, n) = first_list(node(misbehave), "misbehave.mjs many").await;
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
    FirstLists {
        direct,
        cold,
        warm,
        rss,
    }
}

/// Calls to the last tool, direct and through mcpw (both warm).
async fn last_tool_calls(
    misbehave: &str,
    home: &Path,
    last: &str,
) -> (Vec<Duration>, Vec<Duration>) {
    let (_, client, _, _) = first_list(node(misbehave), "misbehave.mjs many").await;
    let direct_calls = warm_calls(&client, last).await;
    let _ = client.cancel().await;
    let (_, client, _, _) = first_list(serve(home, "direct"), "mcpw serve").await;
    let mcpw_calls = warm_calls(&client, &format!("b__{last}")).await;
    let _ = client.cancel().await;
    (direct_calls, mcpw_calls)
}

/// Searches in tool-search and proxy exposure: the first one builds the index;
/// then each query 5 times. Prints each exposure; returns its summary cell.
async fn searches(home: &Path) -> Vec<String> {
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
    searches
}

/// Prints the first lists and the calls; returns the row of the summary table.
fn report(
    last: &str,
    l: &FirstLists,
    direct_calls: &[Duration],
    mcpw_calls: &[Duration],
    searches: &[String],
) -> String {
    let (direct, cold, warm, rss) = (&l.direct, &l.cold, &l.warm, l.rss);
    println!(
        "first tools/list p50: direct {:.0} ms, mcpw cold {:.0} ms (RSS {:.1} MiB), warm {:.0} ms (RSS {:.1} MiB)",
        p(direct, 0.5),
        p(cold, 0.5),
        mib(rss.0),
        p(warm, 0.5),
        mib(rss.1)
    );
    println!(
        "calls to {last}: direct p50 {:.3} ms p99 {:.3} ms, mcpw p50 {:.3} ms p99 {:.3} ms\n",
        p(direct_calls, 0.5),
        p(direct_calls, 0.99),
        p(mcpw_calls, 0.5),
        p(mcpw_calls, 0.99)
    );
    format!(
        "| 7 | A server with {MANY_TOOLS} tools (stdio, one page): spawn → first full `tools/list` (p50 of {MANY_RUNS}); {MANY_CALLS} calls to its last tool; searches \
         | `serve --exposure direct` cold (empty cache) {:.0} ms, warm {:.0} ms (RSS {:.1} / {:.1} MiB); calls p50 {:.3} ms / p99 {:.3} ms; {} \
         | direct: {:.0} ms; calls p50 {:.3} ms / p99 {:.3} ms | cold {:+.0} ms, calls {:+.3} ms p50 |",
        p(cold, 0.5),
        p(warm, 0.5),
        mib(rss.0),
        mib(rss.1),
        p(mcpw_calls, 0.5),
        p(mcpw_calls, 0.99),
        searches.join("; "),
        p(direct, 0.5),
        p(direct_calls, 0.5),
        p(direct_calls, 0.99),
        p(cold, 0.5) - p(direct, 0.5),
        p(mcpw_calls, 0.5) - p(direct_calls, 0.5),
    )
}
