//! Pinned tool definitions in a team: the replicas pin a server once for all
//! of them, and an approval given at one machine reaches every replica.

use super::wire::Wire;
use crate::common::ConfigDirs;
use crate::servers::{MCPW, mcpw_in, servers};
use mcpw_test_support::team::{Redis, replica};
use mcpw_test_support::{eventually, wait_until};
use serde_json::json;
use std::time::Duration;

/// `m` (misbehave.mjs ok, connected at start, its tools pinned) with `env`.
fn config(dirs: &ConfigDirs, env: serde_json::Value) {
    let server = json!({"command": "node", "args": [servers().misbehave(), "ok"],
                        "lifecycle": "eager", "env": env});
    let config = json!({"mcpServers": {"m": server}, "settings": {"pinTools": true}});
    dirs.user(&config.to_string());
}

/// Replica B first lists `m` after it gained a tool that replica A never
/// listed (a rug pull between the two listings). With pins of its own, B
/// would pin the tool as it found it; the team's pins, taken by A, make it
/// wait. A tool new at A waits beside it. `mcpw trust m` run with A's config
/// approves both for the team, and B lets its tool through without a restart.
#[tokio::test(flavor = "multi_thread")]
async fn a_team_pins_a_server_once_and_one_approval_serves_every_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let (home_a, home_b) = (ConfigDirs::new(), ConfigDirs::new());
    config(&home_a, json!({}));
    config(&home_b, json!({"EXTRA_TOOL": "exfiltrate"}));
    let url = |p: u16| format!("http://127.0.0.1:{p}/mcp");

    let (_a, a_port) = replica(
        MCPW,
        &home_a.home(),
        &redis.url(),
        &["--exposure", "direct"],
    );
    let at_a = Wire::initialize(&url(a_port)).await;
    assert!(
        at_a.tool_names(&url(a_port))
            .await
            .contains(&"m__echo".to_string())
    );
    let pinned = || redis.cli(&["HGET", "mcpw:pins:tools", "user#m"]);
    wait_until("A to pin m for the team", Duration::from_secs(20), || {
        pinned().contains("\"echo\"")
    });
    assert!(!pinned().contains("exfiltrate"), "{}", pinned());

    let (_b, b_port) = replica(
        MCPW,
        &home_b.home(),
        &redis.url(),
        &["--exposure", "direct"],
    );
    let waiting = || redis.cli(&["HGET", "mcpw:pins:pending", "user#m"]);
    wait_until(
        "B to find the new tool waiting",
        Duration::from_secs(20),
        || waiting().contains("exfiltrate"),
    );
    let at_b = Wire::initialize(&url(b_port)).await;
    let listed = at_b.tool_names(&url(b_port)).await;
    assert!(listed.contains(&"m__echo".to_string()), "{listed:?}");
    assert!(
        !listed.contains(&"m__exfiltrate".to_string()),
        "withheld: {listed:?}"
    );

    // A tool new at A waits beside the one B saw: neither replica erases
    // what the other recorded.
    let added = json!({"name": "extra"});
    at_a.call(&url(a_port), "m__add_tool", added).await.unwrap();
    // A's catalog, and its check, are built when next asked for.
    eventually("both to wait", Duration::from_secs(20), async || {
        at_a.tool_names(&url(a_port)).await;
        let w = waiting();
        w.contains("exfiltrate") && w.contains("\"extra\"")
    })
    .await;

    let trust = mcpw_in(&home_a.home())
        .env("MCPW_SHARED_STATE", redis.url())
        .args(["trust", "m"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&trust.stdout);
    assert!(
        trust.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&trust.stderr)
    );
    assert!(
        said.contains("m's changed tools (exfiltrate, extra)"),
        "{said}"
    );
    assert!(pinned().contains("exfiltrate"), "{}", pinned());
    assert_eq!(waiting(), "", "nothing waits once approved");

    eventually(
        "B to let the tool through",
        Duration::from_secs(20),
        async || {
            let listed = at_b.tool_names(&url(b_port)).await;
            listed.contains(&"m__exfiltrate".to_string())
        },
    )
    .await;
    let called = at_b
        .call(&url(b_port), "m__exfiltrate", json!({}))
        .await
        .unwrap();
    assert_eq!(crate::gateway::serve::text(&called), "exfiltrate");
}
