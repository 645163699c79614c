//! Gateway overhead benchmarks (`cargo bench -p mcpw --bench gateway`), each
//! measured beside its baseline in the same run, in alternating rounds so that
//! machine noise hits both alike:
//!
//! 1. Added latency of sequential `echo` calls over stdio (official TypeScript SDK
//!    client → server-everything): direct, through a plain byte relay, through
//!    the smallest rmcp forwarder (rmcp's own floor), through `mcpw serve
//!    --exposure direct`, and through the `mcp` proxy tool.
//! 2. `tools/list` of the gateway in tool-search mode, in-process over an
//!    in-memory transport, with the real 101-server / 1,287-tool catalog in a warm
//!    metadata cache (direct exposure beside it for context).
//! 3. 100 concurrent Streamable HTTP sessions × 10 `echo` calls: `mcpw serve
//!    --http` in front of server-everything (stdio) against server-everything's
//!    own Streamable HTTP mode; mcpw's RSS before and after.
//! 4. Warm start of `mcpw serve` (stdio) to the first `tools/list` answer, per
//!    exposure, with the 1,287-tool warm cache; RSS after it.
//! 5. A 10 MB tool result (`misbehave.mjs ok`, tool `big`): direct, through the
//!    byte relay, through `mcpw serve --exposure direct`.
//! 6. An upstream flooding notifications: `echo` latency during log-message
//!    floods, messages relayed, mcpw's CPU and memory; relists after a flood of
//!    `list_changed`.
//! 7. A server with 5,000 tools: first `tools/list` cold and warm, calls to its
//!    last tool, searches in tool-search and proxy exposure.
//! 8. A team gateway: sessions through haproxy to one replica and to two
//!    sharing Redis; failover when one is killed (needs redis-server and
//!    haproxy, installed from Debian's packages when missing).
//! 9. Added latency over Streamable HTTP: sequential `echo` calls (TypeScript
//!    SDK client) to server-everything's own endpoint and through `mcpw serve
//!    --http` in front of it.
//!
//! 10. Code mode: a script's start and the cost of its inner calls against
//!     the same calls through the `mcp` tool; five multi-step tasks on
//!     server-filesystem and server-memory, by one script and one call at a
//!     time: result tokens read and the calls' wall time.
//! 11. Guards: an `echo` with no guard, with the example redaction guard, and
//!     with it and the audit trail; a 1 MB result with and without the guard.
//! 12. Big results: ten large results of server-filesystem, server-memory and
//!     mcp-server-git, in tokens whole, as the default budget's preview, by a
//!     jq projection and as TOON; the cost of cutting per MB; the store's size.
//! 13. Tokens at session start: the first `tools/list` of each exposure with
//!     the 1,287-tool warm cache, as JSON bytes / 4.
//! 14. Component servers: the same rmcp server as a WebAssembly component and
//!     as a native process, through `mcpw serve`: the first call of a fresh
//!     serve (compiled and compiling), `echo` p50, memory.
//! 15. The held path: the official Python SDK client in both eras, direct
//!     and through `mcpw serve`, to a Python SDK server; what a client of
//!     2026-07-28 pays for its calls running in a task of their own.
//! 16. Memory whatever the other side does: mcpw's peak RSS while a server
//!     writes 600 MiB to stdout without a newline (as a component, and as a
//!     native process), and while a stdio client writes 20,000 requests
//!     without reading the answers (against one that reads them).
//! 17. Signing in: `echo` through `mcpw serve --http` with a static token,
//!     a JWT of a real OpenID provider, and an opaque token introspected
//!     once per `cacheSeconds` or on every request.
//!
//! `BENCH_CALLS` sets the number of `echo` calls per path and round in row 1
//! (default 500). Every process started carries a tag in its environment; at the
//! end (or on a panic) any tagged process still alive is killed and reported.

#[path = "gateway/big_result.rs"]
mod big_result;
#[path = "gateway/big_results.rs"]
mod big_results;
#[path = "gateway/bounds.rs"]
mod bounds;
#[path = "gateway/code_mode.rs"]
mod code_mode;
#[path = "gateway/components.rs"]
mod components;
#[path = "gateway/eras.rs"]
mod eras;
#[path = "gateway/flood.rs"]
mod flood;
#[path = "gateway/forwarder.rs"]
mod forwarder;
#[path = "gateway/guards.rs"]
mod guards;
#[path = "gateway/http_latency.rs"]
mod http_latency;
#[path = "gateway/http_load.rs"]
mod http_load;
#[path = "gateway/many_tools.rs"]
mod many_tools;
#[path = "gateway/shared.rs"]
mod shared;
#[path = "gateway/sign_in.rs"]
mod sign_in;
#[path = "gateway/start_tokens.rs"]
mod start_tokens;
#[path = "gateway/stdio_latency.rs"]
mod stdio_latency;
#[path = "gateway/team.rs"]
mod team;
#[path = "gateway/tools_list.rs"]
mod tools_list;
#[path = "gateway/warm_start.rs"]
mod warm_start;

use serde_json::json;
use shared::{RELAY_ENV, Relay, Sweep, home_with, relay_main, write_catalog_home};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `echo` calls per path and round in row 1 when `BENCH_CALLS` is not set.
const SDK_CALLS_DEFAULT: usize = 500;

/// What the rows run against: the test servers, the byte relay and one HOME
/// per config, so mcpw never lists or starts a server a row does not use.
struct Setup {
    everything: String,
    misbehave: String,
    relay: Relay,
    n_calls: usize,
    /// The temporary directory the HOMEs live in; rows 8 and 9 write theirs there.
    root: PathBuf,
    home_e: PathBuf,
    home_m: PathBuf,
    home_lists: PathBuf,
    home_many: PathBuf,
    home_cat: PathBuf,
    catalog_servers: usize,
}

fn main() {
    // Relay mode must win over everything else: the bench re-executes itself.
    if std::env::var_os(RELAY_ENV).is_some() {
        relay_main();
    }
    if std::env::var_os(forwarder::ENV).is_some() {
        forwarder::main();
    }
    let _sweep = Sweep; // kills anything left behind, also when a row panics
    let n_calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SDK_CALLS_DEFAULT);
    let started = Instant::now();
    let everything = shared::servers().everything();
    let misbehave = shared::servers().misbehave();
    let tmp = tempfile::tempdir().expect("a temporary directory for the HOMEs");
    let relay = Relay::pick();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let setup = Setup::write(tmp.path(), everything, misbehave, relay, n_calls);
    print_header(&setup.relay);
    let rows = run_rows(&rt, &setup);
    drop(rt);
    if std::env::var_os("BENCH_KEEP").is_some() {
        println!("(homes kept in {})", tmp.keep().display());
    }
    print_summary(&rows, started, &setup.relay);
}

impl Setup {
    /// Writes the HOMEs under `root`, each with its own config.
    fn write(
        root: &Path,
        everything: String,
        misbehave: String,
        relay: Relay,
        n_calls: usize,
    ) -> Setup {
        let home_e = home_with(
            &root.join("everything"),
            json!({"e": {"command": "node", "args": [&everything, "stdio"]}}),
        );
        // Rows 5 and 6 measure results passed whole: no result budget.
        let home_m = home_with(
            &root.join("misbehave"),
            json!({"m": {"command": "node", "args": [&misbehave, "ok"], "resultBudget": 0}}),
        );
        let home_lists = root.join("lists");
        let home_lists = home_with(
            &home_lists,
            json!({"m": {"command": "node", "args": [&misbehave, "ok"],
                         "env": {"METHODS_FILE": home_lists.join("methods").display().to_string()}}}),
        );
        let home_many = home_with(
            &root.join("many"),
            json!({"b": {"command": "node", "args": [&misbehave, "many"],
                         "env": {"TOOLS": many_tools::MANY_TOOLS.to_string()}}}),
        );
        let home_cat = root.join("catalog");
        let catalog_servers = write_catalog_home(&home_cat);
        Setup {
            everything,
            misbehave,
            relay,
            n_calls,
            root: root.to_path_buf(),
            home_e,
            home_m,
            home_lists,
            home_many,
            home_cat,
            catalog_servers,
        }
    }
}

/// The title and the machine, before any row runs.
fn print_header(relay: &Relay) {
    println!("mcpw gateway benchmarks (byte relay: {})", relay.describe());
    println!(
        "machine: {} cores; every row measures mcpw and its baseline in the same run\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
}

/// Runs the rows in order and returns their lines of the summary table;
/// `BENCH_ROWS=1,4` runs only those rows.
fn run_rows(rt: &tokio::runtime::Runtime, s: &Setup) -> Vec<String> {
    let rows = std::env::var("BENCH_ROWS").unwrap_or_default();
    let run = |row: &str, f: &dyn Fn() -> String| {
        if rows.is_empty() || rows.split(',').any(|r| r.trim() == row) {
            f()
        } else {
            "| (skipped) |".to_string()
        }
    };
    let (everything, misbehave) = (s.everything.as_str(), s.misbehave.as_str());
    vec![
        run("1", &|| {
            stdio_latency::row1_stdio_latency(everything, &s.home_e, &s.relay, s.n_calls)
        }),
        run("2", &|| {
            rt.block_on(tools_list::row2_tools_list(&s.home_cat))
        }),
        run("3", &|| {
            rt.block_on(http_load::row3_http_load(everything, &s.home_e))
        }),
        run("4", &|| {
            rt.block_on(warm_start::row4_warm_start(&s.home_cat, s.catalog_servers))
        }),
        run("5", &|| {
            big_result::row5_big_result(misbehave, &s.home_m, &s.relay)
        }),
        run("6", &|| {
            rt.block_on(flood::row6_flood(misbehave, &s.home_m, &s.home_lists))
        }),
        run("7", &|| {
            rt.block_on(many_tools::row7_many_tools(misbehave, &s.home_many))
        }),
        run("8", &|| rt.block_on(team::row8_team(misbehave, &s.root))),
        run("9", &|| {
            http_latency::row9_http_latency(everything, &s.root)
        }),
        run("10", &|| code_mode::row10_code_mode(everything, &s.root)),
        run("11", &|| {
            guards::row11_guards(everything, misbehave, &s.root)
        }),
        run("12", &|| big_results::row12_big_results(&s.root)),
        run("13", &|| {
            rt.block_on(start_tokens::row13_start_tokens(&s.home_cat))
        }),
        run("14", &|| rt.block_on(components::row14_components(&s.root))),
        run("15", &|| eras::row15_eras(&s.root)),
        run("16", &|| rt.block_on(bounds::row16_bounds(&s.root))),
        run("17", &|| sign_in::row17_sign_in(everything, &s.root)),
    ]
}

/// The rows' lines as one table, after every row has run.
fn print_summary(rows: &[String], started: Instant, relay: &Relay) {
    println!("\n## Summary\n");
    println!("| # | Measurement | mcpw | Baseline | mcpw vs baseline |");
    println!("|---|---|---|---|---|");
    println!("{}", rows.join("\n"));
    println!(
        "\n(total bench time {:.0} s; relay: {})",
        started.elapsed().as_secs_f64(),
        relay.describe()
    );
}
