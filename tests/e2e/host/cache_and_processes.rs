//! The metadata cache across processes, and server processes across mcpw's exit.

use crate::common::{ConfigDirs, entry_names, host, write};
use crate::servers::{alive, all_gone, mcpw_in, pids, servers};
use mcpw::catalog::ConnectionState;
use mcpw_test_support::wait_until;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::Duration;

fn ok_server(pf: &std::path::Path) -> Value {
    json!({"command": "node", "args": [servers().misbehave(), "ok"], "env": {"PID_FILE": pf.display().to_string()}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_warm_start_knows_every_tool_without_connecting() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    let first = host(&d, json!({"s": ok_server(&pf)}), |_| {}).await;
    first.connect("s").await.unwrap();
    let names: Vec<String> = entry_names(&first).await;
    first.shutdown().await;
    drop(first);

    let second = host(&d, json!({"s": ok_server(&pf)}), |_| {}).await;
    let status = &second.status()[0];
    assert_eq!(
        (status.state, status.tool_count as usize),
        (ConnectionState::Cached, names.len())
    );
    let again: Vec<String> = entry_names(&second).await;
    assert_eq!(again, names);
    let echo = second
        .find("s__echo")
        .await
        .unwrap()
        .expect("known from the cache");
    assert!(
        echo.tool.input_schema.object()["properties"]["message"].is_object(),
        "schemas come from the cache too"
    );
    assert_eq!(pids(&pf).len(), 1, "nothing was started");

    // Changing an identity field (args) invalidates the entry; a lifecycle change does not.
    let mut lazy_to_eager = ok_server(&pf);
    lazy_to_eager["lifecycle"] = json!("eager");
    let third = host(&d, json!({"s": lazy_to_eager}), |_| {}).await;
    assert_eq!(third.status()[0].state, ConnectionState::Cached);
    let mut other_args = ok_server(&pf);
    other_args["args"]
        .as_array_mut()
        .unwrap()
        .push(json!("--extra"));
    let fourth = host(&d, json!({"s": other_args}), |_| {}).await;
    assert_eq!(fourth.status()[0].state, ConnectionState::NotConnected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_cache_is_set_aside() {
    let d = ConfigDirs::new();
    let cache = write(
        &d.home(),
        ".cache/mcpw/metadata.json",
        "{\"version\": 1, \"servers\": {tru",
    );
    let pf = d.root.path().join("pids");
    let host = host(&d, json!({"s": ok_server(&pf)}), |_| {}).await;
    assert_eq!(host.status()[0].state, ConnectionState::NotConnected);
    host.connect("s").await.unwrap();
    // Cache writes happen off the call path; wait for them.
    host.servers().flush_cache().await;
    let text = std::fs::read_to_string(&cache).unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_ok(), "rebuilt");
    let aside = std::fs::read_dir(cache.parent().unwrap())
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains("corrupt"));
    assert!(aside);
    host.shutdown().await;
}

fn mcpw(home: &std::path::Path) -> Command {
    let mut c = mcpw_in(home);
    c.current_dir(home);
    c
}

#[test]
fn concurrent_processes_never_lose_each_others_cache_entries() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    let names: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
    let servers: serde_json::Map<String, Value> =
        names.iter().map(|n| (n.clone(), ok_server(&pf))).collect();
    d.user(&json!({"mcpServers": servers}).to_string());
    let children: Vec<_> = names
        .iter()
        .map(|n| {
            mcpw(&d.home())
                .args(["connect", n])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let cache: Value = serde_json::from_str(
        &std::fs::read_to_string(d.home().join(".cache/mcpw/metadata.json")).unwrap(),
    )
    .unwrap();
    let mut cached: Vec<&String> = cache["servers"].as_object().unwrap().keys().collect();
    cached.sort();
    assert_eq!(
        cached,
        names.iter().collect::<Vec<_>>(),
        "every process's entry survived"
    );
    assert!(
        all_gone(&pids(&pf), Duration::from_secs(5)),
        "every server exited with its mcpw"
    );
}

#[test]
fn no_server_outlives_the_cli_even_on_sigterm() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    let mut s = ok_server(&pf);
    s["callTimeoutMs"] = json!(60_000);
    d.user(&json!({"mcpServers": {"s": s}}).to_string());

    // A normal exit, after the server started a grandchild.
    let out = mcpw(&d.home())
        .args(["call", "s__spawn_child"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = pids(&pf);
    assert_eq!(first.len(), 2);
    assert!(
        all_gone(&first, Duration::from_secs(5)),
        "server and grandchild are gone after exit"
    );

    // A signal in the middle of a call: the server has the call when it comes.
    let methods = d.root.path().join("methods");
    s["env"]["METHODS_FILE"] = json!(methods.display().to_string());
    d.user(&json!({"mcpServers": {"s": s}}).to_string());
    let calls = || {
        std::fs::read_to_string(&methods)
            .unwrap_or_default()
            .lines()
            .filter(|m| *m == "tools/call")
            .count()
    };
    for (signal, code) in [
        (libc::SIGTERM, 143),
        (libc::SIGINT, 130),
        (libc::SIGHUP, 129),
    ] {
        let before = calls();
        let mut child = mcpw(&d.home())
            .args(["call", "s__hang"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until(
            "the call to reach the server",
            Duration::from_secs(20),
            || calls() != before,
        );
        // SAFETY: signalling the child we spawned.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "signal {signal}");
        assert!(
            all_gone(&pids(&pf), Duration::from_secs(5)),
            "no server outlives mcpw on signal {signal}"
        );
    }
}

#[test]
fn a_secret_command_dies_with_mcpw() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("secret-pids");
    let mut s = ok_server(&d.root.path().join("pids"));
    s["env"]["K"] = json!(format!("!echo $$ >> {}; sleep 30; echo late", pf.display()));
    d.user(&json!({"mcpServers": {"s": s}}).to_string());
    let mut child = mcpw(&d.home())
        .args(["connect", "s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the secret command to run", Duration::from_secs(20), || {
        !pids(&pf).is_empty()
    });
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert!(
        all_gone(&pids(&pf), Duration::from_secs(5)),
        "the secret command was killed"
    );
}

/// `kill -9` of `mcpw serve` runs no handler and kills nothing in order; still
/// every process mcpw started dies with it: a server, what a server started,
/// and a server that ignores both stdin EOF and SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_process_outlives_mcpw_serve_killed_with_sigkill() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    let mut plain = ok_server(&pf);
    plain["lifecycle"] = json!("eager");
    // A shell that ignores SIGTERM and SIGHUP, runs the server, and once the
    // server is gone (it exits on stdin EOF) goes on sleeping under its pid.
    let script = r#"trap '' TERM HUP; echo $$ >> "$PID_FILE"; node "$0" ok; exec sleep 300"#;
    let stubborn = json!({"command": "sh", "args": ["-c", script, servers().misbehave()],
        "env": {"PID_FILE": pf.display().to_string()}});
    d.user(&json!({"mcpServers": {"plain": plain, "stubborn": stubborn}}).to_string());
    let stderr = std::fs::File::create(d.root.path().join("stderr")).unwrap();
    let mut mcpw = tokio::process::Command::from(mcpw_in(&d.home()));
    mcpw.args(["serve", "--exposure", "direct"])
        .current_dir(d.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true);
    let mut child = mcpw.spawn().unwrap();
    let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve(io).await.unwrap();
    for tool in ["plain__spawn_child", "stubborn__spawn_child"] {
        let out = client
            .call_tool(CallToolRequestParams::new(tool))
            .await
            .unwrap();
        assert_ne!(out.is_error, Some(true), "{tool}: {out:?}");
    }
    let all = pids(&pf);
    assert_eq!(
        all.len(),
        5,
        "two servers, a shell and two grandchildren: {all:?}"
    );

    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGKILL) };
    child.wait().await.unwrap();
    let gone = all_gone(&all, Duration::from_secs(5));
    let left: Vec<u32> = all.iter().copied().filter(|p| alive(*p)).collect();
    for pid in &left {
        // SAFETY: only signals; these are the test's leftovers.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    drop(client);
    assert!(
        gone,
        "left behind after kill -9 of mcpw: {left:?} of {all:?}"
    );
}
