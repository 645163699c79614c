//! Row 3: 100 concurrent Streamable HTTP sessions × 10 `echo` calls, `mcpw
//! serve --http` in front of server-everything (stdio) against
//! server-everything's own Streamable HTTP mode, in alternating rounds; mcpw's
//! RSS before and after.

use crate::shared::{
    Load, Proc, ROUNDS, free_port, http_load, http_warm_up, mcpw_command, mib, ms, percentile,
    proc_kb,
};
use std::path::Path;
use std::process::Command;

const HTTP_SESSIONS: usize = 100;
const HTTP_CALLS_PER_SESSION: usize = 10;

/// Both targets, running and listening.
struct Targets {
    mcpw: Proc,
    mcpw_url: String,
    se: Proc,
    se_url: String,
}

/// What the rounds measured; mcpw's RSS in kB before, after and at its peak.
struct Measured {
    mcpw: Load,
    se: Load,
    rss: (u64, u64, u64),
}

pub(crate) async fn row3_http_load(everything: &str, home: &Path) -> String {
    println!(
        "## 3. {HTTP_SESSIONS} concurrent Streamable HTTP sessions × {HTTP_CALLS_PER_SESSION} `echo` calls, {ROUNDS} alternating rounds"
    );
    let targets = start(everything, home);
    http_warm_up(&targets.mcpw_url, "e__echo", "mcpw").await;
    http_warm_up(&targets.se_url, "echo", "server-everything").await;
    let mut m = measure(&targets).await;
    drop(targets.se);
    drop(targets.mcpw);
    m.mcpw.settle();
    m.se.settle();
    report(&m)
}

/// mcpw in front of server-everything over stdio, and server-everything's own
/// Streamable HTTP (port from $PORT, path /mcp).
fn start(everything: &str, home: &Path) -> Targets {
    let mcpw_port = free_port();
    let addr = format!("127.0.0.1:{mcpw_port}");
    let mut mcpw = Proc::spawn(
        mcpw_command(home, &["serve", "--http", &addr, "--exposure", "direct"]),
        "mcpw serve --http",
        Some(home.join("mcpw-http.stderr")),
    );
    mcpw.wait_for_port(mcpw_port);
    let mcpw_url = format!("http://{addr}/mcp");
    let se_port = free_port();
    let mut cmd = Command::new("node");
    cmd.args([everything, "streamableHttp"])
        .env("PORT", se_port.to_string())
        .current_dir(home);
    let mut se = Proc::spawn(
        cmd,
        "server-everything streamableHttp",
        Some(home.join("everything-http.stderr")),
    );
    se.wait_for_port(se_port);
    let se_url = format!("http://127.0.0.1:{se_port}/mcp");
    Targets {
        mcpw,
        mcpw_url,
        se,
        se_url,
    }
}

/// [`ROUNDS`] rounds of the full load on each target, alternating which goes
/// first; mcpw's RSS around them.
async fn measure(t: &Targets) -> Measured {
    let rss_before = proc_kb(t.mcpw.pid(), "VmRSS");
    let mut m = Load::default();
    let mut b = Load::default();
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_mcpw in order {
            if is_mcpw {
                m.merge(
                    http_load(
                        &t.mcpw_url,
                        "e__echo",
                        HTTP_SESSIONS,
                        HTTP_CALLS_PER_SESSION,
                    )
                    .await,
                );
            } else {
                b.merge(http_load(&t.se_url, "echo", HTTP_SESSIONS, HTTP_CALLS_PER_SESSION).await);
            }
        }
    }
    let rss_after = proc_kb(t.mcpw.pid(), "VmRSS");
    let rss_peak = proc_kb(t.mcpw.pid(), "VmHWM");
    Measured {
        mcpw: m,
        se: b,
        rss: (rss_before, rss_after, rss_peak),
    }
}

/// Prints both targets and mcpw's memory; returns the row of the summary table.
fn report(r: &Measured) -> String {
    let line = |name: &str, l: &Load| {
        println!(
            "{name:<34} calls {:>5}  errors {:>4} (sessions failed {})  p50 {:>8.2} ms  p99 {:>8.2} ms  {:>7.0} calls/s",
            l.calls,
            l.errors,
            l.session_errors,
            ms(percentile(&l.latencies, 0.5)),
            ms(percentile(&l.latencies, 0.99)),
            l.calls_per_s()
        );
        if let Some(e) = &l.first_error {
            println!("{:<34} first error: {e}", "");
        }
    };
    let (m, b) = (&r.mcpw, &r.se);
    let (rss_before, rss_after, rss_peak) = r.rss;
    line("server-everything streamableHttp", b);
    line("mcpw serve --http (direct)", m);
    println!(
        "mcpw RSS: {:.1} MiB before the load, {:.1} MiB after (peak {:.1} MiB)\n",
        mib(rss_before),
        mib(rss_after),
        mib(rss_peak)
    );
    format!(
        "| 3 | {HTTP_SESSIONS} concurrent HTTP sessions × {HTTP_CALLS_PER_SESSION} `echo` ({ROUNDS} rounds, rmcp client) \
         | `mcpw serve --http --exposure direct` → server-everything stdio: {} errors, p50 {:.2} ms / p99 {:.2} ms, {:.0} calls/s; RSS {:.1} → {:.1} MiB (peak {:.1}) \
         | server-everything streamableHttp: {} errors, p50 {:.2} ms / p99 {:.2} ms, {:.0} calls/s | p50 {:.2}×, throughput {:.2}× |",
        m.errors,
        ms(percentile(&m.latencies, 0.5)),
        ms(percentile(&m.latencies, 0.99)),
        m.calls_per_s(),
        mib(rss_before),
        mib(rss_after),
        mib(rss_peak),
        b.errors,
        ms(percentile(&b.latencies, 0.5)),
        ms(percentile(&b.latencies, 0.99)),
        b.calls_per_s(),
        ms(percentile(&m.latencies, 0.5)) / ms(percentile(&b.latencies, 0.5)),
        m.calls_per_s() / b.calls_per_s(),
    )
}
