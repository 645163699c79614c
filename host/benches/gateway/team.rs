//! Row 8: a team gateway. Streamable HTTP sessions through haproxy
//! (round-robin, no stickiness) to one replica and to two replicas sharing
//! Redis, in alternating rounds; then failover: a session calling in a loop
//! while one of the two replicas is killed.

use crate::shared::{Load, home_with, http_load, http_warm_up, ms, percentile};
use mcpw_test_support::team::{Haproxy, Redis, replica};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const SESSIONS: usize = 50;
const CALLS: usize = 20;
const ROUNDS: usize = 4;

fn line(name: &str, l: &Load) -> String {
    let out = format!(
        "{:>5.0} calls/s, p50 {:.2} ms, p99 {:.2} ms, {} errors",
        l.calls_per_s(),
        ms(percentile(&l.latencies, 0.5)),
        ms(percentile(&l.latencies, 0.99)),
        l.errors
    );
    println!("{name:<28} {out}");
    if let Some(e) = &l.first_error {
        println!("{:<28} first error: {e}", "");
    }
    out
}

/// A session through `url` calling `echo` in a loop while `kill` happens
/// after a second: how long from the kill to the next call that succeeded,
/// and how many calls failed.
async fn failover(url: &str, kill: impl FnOnce()) -> (Duration, usize, usize) {
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(url.to_string()))
            .await
            .expect("a session through haproxy");
    let args = json!({"message": "ping"}).as_object().cloned().unwrap();
    let call =
        || client.call_tool(CallToolRequestParams::new("m__echo").with_arguments(args.clone()));
    let begun = Instant::now();
    while begun.elapsed() < Duration::from_secs(1) {
        call().await.expect("calls before the kill");
    }
    kill();
    let killed = Instant::now();
    let (mut failed, mut after) = (0, 0);
    let mut recovered = None;
    while killed.elapsed() < Duration::from_secs(3) {
        match call().await {
            Ok(r) if r.is_error != Some(true) => {
                recovered.get_or_insert(killed.elapsed());
                after += 1;
            }
            _ => failed += 1,
        }
    }
    let _ = client.cancel().await;
    (
        recovered.expect("a call succeeded after the kill"),
        failed,
        after,
    )
}

pub(crate) async fn row8_team(misbehave: &str, tmp: &Path) -> String {
    println!(
        "## 8. A team gateway: {SESSIONS} sessions × {CALLS} `echo` through haproxy, one replica vs two sharing Redis ({ROUNDS} alternating rounds); failover after a kill"
    );
    let redis = Redis::start(&tmp.join("redis"));
    let homes: Vec<_> = ["a", "b"]
        .iter()
        .map(|h| {
            home_with(
                &tmp.join(format!("team-{h}")),
                json!({"m": {"command": "node", "args": [misbehave, "ok"]}}),
            )
        })
        .collect();
    let args = ["--exposure", "direct"];
    let (a, a_port) = replica(env!("CARGO_BIN_EXE_mcpw"), &homes[0], &redis.url(), &args);
    let (_b, b_port) = replica(env!("CARGO_BIN_EXE_mcpw"), &homes[1], &redis.url(), &args);
    let one = Haproxy::start(tmp, &[a_port]);
    let two = Haproxy::start(tmp, &[a_port, b_port]);
    for lb in [&one, &two] {
        http_warm_up(&lb.url(), "m__echo", "haproxy").await;
    }
    let (mut l1, mut l2) = (Load::default(), Load::default());
    for round in 0..ROUNDS {
        for first in [round % 2 == 0, round % 2 == 1] {
            if first {
                l1.merge(http_load(&one.url(), "m__echo", SESSIONS, CALLS).await);
            } else {
                l2.merge(http_load(&two.url(), "m__echo", SESSIONS, CALLS).await);
            }
        }
    }
    l1.settle();
    l2.settle();
    let s1 = line("haproxy → 1 replica", &l1);
    let s2 = line("haproxy → 2 replicas", &l2);
    let pid = a.pid();
    let (recovered, failed, after) = failover(&two.url(), || {
        // SAFETY: killing a process this bench started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    })
    .await;
    let f = format!(
        "kill -9 of a replica mid-session: next call succeeded {:.1} ms after it, {failed} call(s) failed, {after} succeeded in the next 3 s",
        ms(recovered)
    );
    println!("{f}\n");
    drop(a);
    format!(
        "| 8 | team gateway through haproxy, {SESSIONS} sessions × {CALLS} `echo` | 2 replicas + Redis: {s2} | 1 replica: {s1} | {f} |"
    )
}
