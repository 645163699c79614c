//! Servers that misbehave on demand: each fault costs the one call a clear error,
//! other servers keep working, and no process is left behind.

use crate::common::{ConfigDirs, host};
use crate::servers::{Background, all_gone, pids, servers};
use mcpw::catalog::ConnectionState;
use mcpw::host::{Host, HostError};
use mcpw::servers::ServerError;
use mcpw::upstream::ConnectError;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// A host with a healthy `good` server and a `bad` one in `mode`, both recording pids.
async fn pair(d: &ConfigDirs, mode: &str, bad_extra: Value) -> (Host, PathBuf) {
    let s = servers();
    let pid_file = d.root.path().join("pids");
    let pf = pid_file.display().to_string();
    let mut bad = json!({"command": "node", "args": [s.misbehave(), mode], "env": {"PID_FILE": pf}, "callTimeoutMs": 1500, "startupTimeoutMs": 5000});
    for (k, v) in bad_extra.as_object().unwrap() {
        if k == "env" {
            bad["env"]
                .as_object_mut()
                .unwrap()
                .extend(v.as_object().unwrap().clone());
        } else {
            bad[k] = v.clone();
        }
    }
    let good = json!({"command": "node", "args": [s.misbehave(), "ok"], "env": {"PID_FILE": pf}});
    let host = host(d, json!({"good": good, "bad": bad}), |o| {
        o.lifecycle.backoff = Duration::from_millis(200)
    })
    .await;
    (host, pid_file)
}

async fn good_still_works(host: &Host) {
    let out = host
        .call(
            "good__echo",
            json!({"message": "still here"}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert!(!out.is_error);
}

async fn finish(host: Host, pid_file: PathBuf) {
    host.shutdown().await;
    let all = pids(&pid_file);
    assert!(!all.is_empty());
    assert!(
        all_gone(&all, Duration::from_secs(5)),
        "left behind: {all:?}"
    );
}

fn connect_error(e: HostError) -> ConnectError {
    match e {
        HostError::Lifecycle(ServerError::Connect { error, .. }) => error,
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_mid_call() {
    let d = ConfigDirs::new();
    let (host, pid_file) = pair(&d, "ok", json!({})).await;
    let err = connect_error(host.call("bad__crash", None).await.unwrap_err());
    assert!(err.to_string().contains("closed"), "{err}");
    good_still_works(&host).await;
    // The next call reconnects (a new process) and works.
    let out = host
        .call("bad__echo", json!({"message": "back"}).as_object().cloned())
        .await
        .unwrap();
    assert!(!out.is_error);
    finish(host, pid_file).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hang() {
    let d = ConfigDirs::new();
    let (host, pid_file) = pair(&d, "ok", json!({})).await;
    let err = connect_error(host.call("bad__hang", None).await.unwrap_err());
    assert!(
        matches!(err, ConnectError::CallTimeout { ms: 1500, .. }),
        "{err}"
    );
    good_still_works(&host).await;
    let out = host
        .call(
            "bad__echo",
            json!({"message": "after a hang"}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "the hung call does not block the next one");
    finish(host, pid_file).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_during_initialize() {
    let d = ConfigDirs::new();
    let (host, pid_file) = pair(&d, "exit-on-init", json!({})).await;
    let err = connect_error(host.connect("bad").await.unwrap_err());
    assert!(
        err.to_string()
            .contains("closed the connection during initialize"),
        "{err}"
    );
    assert_eq!(
        host.servers().status("bad").unwrap().state,
        ConnectionState::Failed
    );
    good_still_works(&host).await;
    finish(host, pid_file).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_on_stdout() {
    let d = ConfigDirs::new();
    let (host, pid_file) = pair(&d, "garbage", json!({"startupTimeoutMs": 1500})).await;
    let err = connect_error(host.connect("bad").await.unwrap_err());
    assert!(matches!(err, ConnectError::Timeout { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("not JSON-RPC on stdout: \"this is not JSON-RPC\""),
        "the error says what the server wrote: {err}"
    );
    good_still_works(&host).await;
    finish(host, pid_file).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn slower_than_the_startup_timeout() {
    let d = ConfigDirs::new();
    let (host, pid_file) = pair(
        &d,
        "slow-start",
        json!({"startupTimeoutMs": 300, "env": {"DELAY_MS": "10000"}}),
    )
    .await;
    let err = connect_error(host.connect("bad").await.unwrap_err());
    assert!(
        matches!(err, ConnectError::Timeout { ms: 300, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("startupTimeoutMs"));
    good_still_works(&host).await;
    finish(host, pid_file).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_result() {
    let d = ConfigDirs::new();
    // 130 MiB: over the 128 MiB the stdio transport accepts for one message.
    let (host, pid_file) = pair(
        &d,
        "ok",
        json!({"env": {"HUGE_BYTES": (130 << 20).to_string()}, "callTimeoutMs": 60000}),
    )
    .await;
    let out = host.call("bad__huge", None).await.unwrap();
    // That call fails, said at once, not after the call timeout...
    assert!(out.is_error, "{out:?}");
    let text = serde_json::to_string(&out.content).unwrap();
    assert!(text.contains("larger than 128 MiB"), "{text}");
    good_still_works(&host).await;
    // ...and the connection, with the server's state, stays.
    let out = host
        .call("bad__echo", json!({"message": "ok"}).as_object().cloned())
        .await
        .unwrap();
    assert!(!out.is_error);
    assert_eq!(
        std::fs::read_to_string(&pid_file).unwrap().lines().count(),
        2,
        "no server was started again (one pid each for the good and the bad one)"
    );
    finish(host, pid_file).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn grandchildren_die_with_the_server() {
    let d = ConfigDirs::new();
    let (host, pid_file) = pair(&d, "ok", json!({})).await;
    host.call("bad__spawn_child", None).await.unwrap();
    assert_eq!(
        pids(&pid_file).len(),
        2,
        "bad and its child (good was never used)"
    );
    finish(host, pid_file).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_401_means_needs_auth_and_a_token_fixes_it() {
    let s = servers();
    let server = Background::node(&[&s.misbehave(), "http"], &[("TOKEN", "s3cret")]);
    let d = ConfigDirs::new();
    let host = host(
        &d,
        json!({
            "anonymous": {"url": server.url("/mcp")},
            "with-token": {"url": server.url("/mcp"), "bearerToken": "s3cret"},
            "token-env": {"url": server.url("/mcp"), "bearerTokenEnv": "THE_TOKEN"},
            "token-cmd": {"url": server.url("/mcp"), "headers": {"Authorization": "!echo Bearer s3cret"}}
        }),
        |_| {},
    )
    .await;
    let err = connect_error(host.connect("anonymous").await.unwrap_err());
    assert!(
        matches!(err, ConnectError::NeedsAuth { status: 401, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("bearerToken"),
        "the message says what to set: {err}"
    );
    assert_eq!(
        host.servers().status("anonymous").unwrap().state,
        ConnectionState::NeedsAuth
    );
    assert!(!err.to_string().contains("s3cret"));
    host.connect("with-token").await.unwrap();
    host.connect("token-cmd").await.unwrap();
    // bearerTokenEnv names a variable this environment does not have.
    let err = connect_error(host.connect("token-env").await.unwrap_err());
    assert!(err.to_string().contains("THE_TOKEN"), "{err}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_sse_endpoint_on_another_origin_gets_no_credentials() {
    let s = servers();
    // Where the endpoint event points: nothing may arrive here.
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    elsewhere.set_nonblocking(true).unwrap();
    let other_port = elsewhere.local_addr().unwrap().port().to_string();
    let server = Background::node(
        &[&s.misbehave(), "sse-elsewhere"],
        &[("OTHER_PORT", &other_port)],
    );
    let d = ConfigDirs::new();
    let host = host(
        &d,
        json!({"sse": {"type": "sse", "url": server.url("/sse"), "bearerToken": "TOPSECRET"}}),
        |_| {},
    )
    .await;
    let err = host.connect("sse").await.unwrap_err().to_string();
    assert!(err.contains("another origin"), "{err}");
    assert!(!err.contains("TOPSECRET"));
    assert_eq!(
        elsewhere.accept().unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing was sent to the other origin"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_403_needs_auth_and_a_refused_token_says_so() {
    let s = servers();
    let server = Background::node(
        &[&s.misbehave(), "http"],
        &[("TOKEN", "s3cret"), ("AUTH_STATUS", "403")],
    );
    let d = ConfigDirs::new();
    let host = host(
        &d,
        json!({"anonymous": {"url": server.url("/mcp")}, "wrong": {"url": server.url("/mcp"), "bearerToken": "nope"}}),
        |_| {},
    )
    .await;
    let err = connect_error(host.connect("anonymous").await.unwrap_err());
    assert!(
        matches!(err, ConnectError::NeedsAuth { status: 403, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("set `bearerToken`"), "{err}");
    let err = connect_error(host.connect("wrong").await.unwrap_err());
    assert!(
        err.to_string().contains("refused the credentials"),
        "a token was sent, so the hint is to check it: {err}"
    );
    assert!(!err.to_string().contains("nope"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cwd_is_used_and_a_missing_one_is_named() {
    let s = servers();
    let d = ConfigDirs::new();
    let work = d.root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let host = host(
        &d,
        json!({
            "here": {"command": "node", "args": [s.misbehave(), "ok"], "cwd": work.display().to_string(),
                     "env": {"PID_FILE": "relative-pids"}},
            "nowhere": {"command": "node", "args": [s.misbehave(), "ok"], "cwd": "/nonexistent/dir"}
        }),
        |_| {},
    )
    .await;
    host.connect("here").await.unwrap();
    assert_eq!(
        pids(&work.join("relative-pids")).len(),
        1,
        "started in its cwd"
    );
    let err = host.connect("nowhere").await.unwrap_err().to_string();
    assert!(
        err.contains("/nonexistent/dir") && err.contains("`cwd`"),
        "{err}"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_host_stops_its_servers() {
    let d = ConfigDirs::new();
    let (host, pid_file) = pair(&d, "ok", json!({})).await;
    host.connect("bad").await.unwrap();
    host.connect("good").await.unwrap();
    drop(host); // no shutdown()
    assert!(all_gone(&pids(&pid_file), Duration::from_secs(5)));
}
