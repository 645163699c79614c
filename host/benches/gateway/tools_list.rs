//! Row 2: `tools/list` of the gateway in tool-search mode, in-process over an
//! in-memory transport, with the real 101-server / 1,287-tool catalog in a warm
//! metadata cache (direct exposure beside it for context). No server is started.

use crate::shared::{CATALOG_TOOLS, environment, load_config, ms, percentile, us};
use mcpw::gateway::{Exposure, Gateway, Session};
use mcpw::host::{Host, HostOptions};
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIST_CALLS_TOOL_SEARCH: usize = 2000;
/// Fewer for direct exposure: each answer carries all 1,287 tools.
const LIST_CALLS_DIRECT: usize = 400;

type Client = RunningService<RoleClient, ()>;

/// What the row measured, each list of samples sorted.
struct Lists {
    server_side: Vec<Duration>,
    tool_search: Vec<Duration>,
    direct: Vec<Duration>,
    ts_tools: usize,
    direct_tools: usize,
}

pub(crate) async fn row2_tools_list(home: &Path) -> String {
    println!(
        "## 2. `tools/list`, in-process over an in-memory transport, 1,287 cached tools, no server started"
    );
    let host = start_host(home).await;
    let (ts, ts_server) = in_memory_session(Gateway::new(host.clone(), Exposure::ToolSearch)).await;
    let (direct, direct_server) =
        in_memory_session(Gateway::new(host.clone(), Exposure::Direct)).await;
    let (ts_tools, direct_tools) = warm_up(&ts, &direct).await;
    let (mut tool_search, mut direct_samples) = round_trips(&ts, &direct).await;
    let server_side = server_side(&host).await;
    for s in [ts, direct] {
        let _ = s.cancel().await;
    }
    for s in [ts_server, direct_server] {
        let _ = s.cancel().await;
    }
    host.shutdown().await;
    tool_search.sort();
    direct_samples.sort();
    report(&Lists {
        server_side,
        tool_search,
        direct: direct_samples,
        ts_tools,
        direct_tools,
    })
}

/// The host of the catalog HOME, without maintenance; its start time is shown
/// because the first run also compiles the default guest.
async fn start_host(home: &Path) -> Arc<Host> {
    let env = environment(home);
    let mut options = HostOptions::for_env(&env);
    options.maintenance = false;
    options.metadata_cache = Some(home.join(".cache/mcpw/metadata.json"));
    let t = Instant::now();
    let host = Arc::new(
        Host::start(load_config(home), env, options)
            .await
            .expect("Host::start with the catalog config"),
    );
    println!(
        "(Host::start: {:.0} ms, includes compiling the default guest when not cached)",
        ms(t.elapsed())
    );
    host
}

/// An rmcp client session with the gateway over an in-memory pipe.
async fn in_memory_session(
    shared: Arc<Gateway>,
) -> (Client, RunningService<rmcp::RoleServer, Session>) {
    let (server_half, client_half) = tokio::io::duplex(1 << 20);
    let server = tokio::spawn(Session::new(shared).serve(server_half));
    let client = ().serve(client_half).await.expect("rmcp client initialize over duplex");
    let server = server
        .await
        .expect("the gateway session task")
        .expect("gateway initialize over duplex");
    // Every list must be a round trip, whatever cache hint the gateway sends.
    client
        .peer()
        .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
        .await;
    (client, server)
}

async fn list_once(client: &Client) -> (Duration, usize) {
    let t = Instant::now();
    let r = client.list_tools(None).await.expect("tools/list");
    (t.elapsed(), r.tools.len())
}

/// Five untimed lists on each session; returns how many tools each lists.
async fn warm_up(ts: &Client, direct: &Client) -> (usize, usize) {
    let mut ts_tools = 0;
    let mut direct_tools = 0;
    for _ in 0..5 {
        ts_tools = list_once(ts).await.1;
        direct_tools = list_once(direct).await.1;
    }
    assert_eq!(
        direct_tools, CATALOG_TOOLS,
        "direct exposure lists every cached tool"
    );
    (ts_tools, direct_tools)
}

/// Timed round trips, in interleaved blocks so both exposures see the same
/// machine state.
async fn round_trips(ts: &Client, direct: &Client) -> (Vec<Duration>, Vec<Duration>) {
    let blocks = 8;
    let mut ts_samples = Vec::with_capacity(LIST_CALLS_TOOL_SEARCH);
    let mut direct_samples = Vec::with_capacity(LIST_CALLS_DIRECT);
    for _ in 0..blocks {
        for _ in 0..LIST_CALLS_TOOL_SEARCH / blocks {
            ts_samples.push(list_once(ts).await.0);
        }
        for _ in 0..LIST_CALLS_DIRECT / blocks {
            direct_samples.push(list_once(direct).await.0);
        }
    }
    (ts_samples, direct_samples)
}

/// Server-side: the gateway's answer made and encoded as it is sent, without a
/// transport or a client. Sorted.
async fn server_side(host: &Arc<Host>) -> Vec<Duration> {
    let session = Session::new(Gateway::new(host.clone(), Exposure::ToolSearch));
    let mut server_side = Vec::with_capacity(LIST_CALLS_TOOL_SEARCH);
    for _ in 0..LIST_CALLS_TOOL_SEARCH {
        let t = Instant::now();
        let tools = session.tool_list().await.expect("the tool-search list");
        let bytes = serde_json::to_vec(&rmcp::model::ListToolsResult::with_all_items(tools))
            .expect("an encodable answer");
        server_side.push(t.elapsed());
        assert!(!bytes.is_empty());
    }
    server_side.sort();
    server_side
}

/// Prints the three lines and returns the row of the summary table.
fn report(l: &Lists) -> String {
    let line = |name: &str, s: &[Duration], tools: usize| {
        println!(
            "{name:<34} n={:<5} tools={tools:<5} p50 {:>9.1} µs   p99 {:>9.1} µs",
            s.len(),
            us(percentile(s, 0.5)),
            us(percentile(s, 0.99))
        );
    };
    let (ts_tools, direct_tools) = (l.ts_tools, l.direct_tools);
    line(
        "tool-search, server-side (made + encoded)",
        &l.server_side,
        ts_tools,
    );
    line(
        "tool-search exposure (round trip)",
        &l.tool_search,
        ts_tools,
    );
    line("direct exposure (context)", &l.direct, direct_tools);
    println!();
    format!(
        "| 2 | `tools/list` in tool-search mode, 101 servers / 1,287 cached tools, {} lists \
         | server-side (answer made and encoded) p50 {:.1} µs / p99 {:.1} µs; round trip through an rmcp client over an in-memory transport p50 {:.1} µs / p99 {:.1} µs (tools listed: {ts_tools}) | direct exposure round trip, {} lists: p50 {:.1} µs / p99 {:.1} µs (tools listed: {direct_tools}) | {:.2}× direct's p50 |",
        l.tool_search.len(),
        us(percentile(&l.server_side, 0.5)),
        us(percentile(&l.server_side, 0.99)),
        us(percentile(&l.tool_search, 0.5)),
        us(percentile(&l.tool_search, 0.99)),
        l.direct.len(),
        us(percentile(&l.direct, 0.5)),
        us(percentile(&l.direct, 0.99)),
        us(percentile(&l.tool_search, 0.5)) / us(percentile(&l.direct, 0.5)),
    )
}
