//! What a load balancer and an operator see of `mcpw serve --http`: `/healthz`,
//! `/readyz`, `/metrics`, and draining on SIGTERM.

use crate::common::ConfigDirs;
use crate::servers::{MCPW, Serving, servers};
use mcpw_test_support::{free_port, wait_until};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use std::time::Duration;

/// Server `s` (misbehave.mjs ok), recording the methods it gets; returns that file.
fn config(dirs: &ConfigDirs) -> std::path::PathBuf {
    let methods = dirs.root.path().join("methods");
    let server = json!({"command": "node", "args": [servers().misbehave(), "ok"],
                        "env": {"METHODS_FILE": methods.display().to_string()}});
    dirs.user(&json!({"mcpServers": {"s": server}}).to_string());
    methods
}

fn port_of(serving: &Serving) -> u16 {
    serving.at("").rsplit(':').next().unwrap().parse().unwrap()
}

async fn get(url: &str, token: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new().get(url);
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

async fn session(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("a session")
}

fn call(tool: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(map) = args else {
        unreachable!()
    };
    CallToolRequestParams::new(tool.to_string()).with_arguments(map)
}

/// `/healthz` and `/readyz` answer without a token; `/metrics` counts calls,
/// errors and latency per server and tool, behind the token.
#[tokio::test(flavor = "multi_thread")]
async fn probes_and_metrics() {
    let dirs = ConfigDirs::new();
    config(&dirs);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let serving = Serving::start(
        MCPW,
        &dirs.home(),
        &["--http", &addr, "--token", "t0k", "--exposure", "direct"],
    );
    assert_eq!(
        get(&serving.at("/healthz"), None).await,
        (200, "live\n".into())
    );
    let ready = serving.at("/readyz");
    let mut last = (0, String::new());
    for _ in 0..500 {
        last = get(&ready, None).await;
        if last.0 == 200 {
            break;
        }
        assert_eq!(last, (503, "starting\n".into()));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(last, (200, "ready\n".into()));

    let client = session(&serving.url(), "t0k").await;
    for message in ["a", "b"] {
        let out = client
            .call_tool(call("s__echo", json!({"message": message})))
            .await
            .unwrap();
        assert_ne!(out.is_error, Some(true));
    }
    // A tool error (the server rejects the arguments) counts as an error.
    let bad = client
        .call_tool(call("s__echo", json!({"message": 7})))
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true), "{bad:?}");

    assert_eq!(
        get(&serving.at("/metrics"), None).await.0,
        401,
        "the token guards /metrics"
    );
    let (status, text) = get(&serving.at("/metrics"), Some("t0k")).await;
    assert_eq!(status, 200);
    for line in [
        r#"mcpw_tool_calls_total{server="s",tool="echo"} 3"#,
        r#"mcpw_tool_errors_total{server="s",tool="echo"} 1"#,
        r#"mcpw_tool_call_duration_seconds_count{server="s",tool="echo"} 3"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }
    let _ = client.cancel().await;
}

/// SIGTERM: `/readyz` says draining, a new session is refused with a JSON-RPC
/// error, the call in flight finishes, and mcpw exits without waiting out the
/// drain deadline.
#[tokio::test(flavor = "multi_thread")]
async fn a_stop_drains_calls_in_flight_and_refuses_new_sessions() {
    let dirs = ConfigDirs::new();
    let (mut serving, in_flight) = draining_with_a_call_in_flight(&dirs, "60", 1500).await;
    let port = port_of(&serving);
    let refused = reqwest::Client::new()
        .post(serving.url())
        .bearer_auth("t0k")
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 503);
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], -32001, "{error}");
    assert_eq!(error["id"], 1, "{error}");

    let done = in_flight
        .await
        .unwrap()
        .expect("the call in flight finished");
    let text = serde_json::to_value(&done.content).unwrap()[0]["text"].clone();
    assert_eq!(text, "slept 1500");
    let status = serving
        .exited(Duration::from_secs(15))
        .expect("mcpw exits once nothing is in flight, long before the 60 s deadline");
    assert!(status.code().is_some(), "exited by itself: {status:?}");
    wait_until("nothing listening", Duration::from_secs(5), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
    });
}

/// `mcpw serve --http --drain-timeout SECS` with server `s`, a session,
/// and a `sleep` call of `ms` in flight at the server, stopped with SIGTERM:
/// `/readyz` says draining.
async fn draining_with_a_call_in_flight(
    dirs: &ConfigDirs,
    drain_timeout: &str,
    ms: u64,
) -> (
    Serving,
    tokio::task::JoinHandle<Result<rmcp::model::CallToolResult, rmcp::ServiceError>>,
) {
    let methods = config(dirs);
    let serving = Serving::start(
        MCPW,
        &dirs.home(),
        &[
            "--token",
            "t0k",
            "--exposure",
            "direct",
            "--drain-timeout",
            drain_timeout,
        ],
    );
    let client = session(&serving.url(), "t0k").await;
    let in_flight = tokio::spawn(async move {
        let called = client.call_tool(call("s__sleep", json!({"ms": ms}))).await;
        drop(client);
        called
    });
    wait_until(
        "the server to get the call",
        Duration::from_secs(10),
        || {
            let got = std::fs::read_to_string(&methods).unwrap_or_default();
            got.lines().any(|m| m == "tools/call")
        },
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(serving.pid() as i32, libc::SIGTERM) };
    let ready = serving.at("/readyz");
    let mut said = (0, String::new());
    for _ in 0..500 {
        said = get(&ready, None).await;
        if said.1 == "draining\n" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(said, (503, "draining\n".into()));
    (serving, in_flight)
}

/// The drain deadline passes with a call still in flight: a stateless
/// request is refused meanwhile, then mcpw exits and the client's call ends
/// in an error instead of hanging.
#[tokio::test(flavor = "multi_thread")]
async fn a_drain_that_runs_out_cuts_the_call_and_exits() {
    let dirs = ConfigDirs::new();
    let (mut serving, in_flight) = draining_with_a_call_in_flight(&dirs, "2", 30000).await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let stateless = reqwest::Client::new()
        .post(serving.url())
        .bearer_auth("t0k")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(stateless.status().as_u16(), 503);
    let error: Value = stateless.json().await.unwrap();
    assert_eq!(error["error"]["code"], -32001, "{error}");
    let status = serving
        .exited(Duration::from_secs(20))
        .expect("mcpw exits at the drain deadline");
    assert!(status.code().is_some(), "{status:?}");
    let called = tokio::time::timeout(Duration::from_secs(20), in_flight)
        .await
        .expect("the call ends, it does not hang")
        .unwrap();
    // Cut: an error, as a tool error or a JSON-RPC one, never a result.
    match called {
        Ok(result) => assert_eq!(result.is_error, Some(true), "{result:?}"),
        Err(e) => eprintln!("the call failed: {e}"),
    }
}

/// A second signal ends a drain at once, calls in flight or not.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_signal_ends_the_drain_at_once() {
    let dirs = ConfigDirs::new();
    let (mut serving, in_flight) = draining_with_a_call_in_flight(&dirs, "60", 30000).await;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(serving.pid() as i32, libc::SIGTERM) };
    serving
        .exited(Duration::from_secs(10))
        .expect("the second signal ends mcpw, long before the 60 s deadline");
    in_flight.abort();
}

/// Every connection `mcpw serve --http` accepts has Nagle off: checked on the
/// running process's own socket, whose option is copied out with
/// `pidfd_getfd`. With Nagle on, each response waits ~40 ms for a delayed ACK.
#[tokio::test(flavor = "multi_thread")]
async fn accepted_connections_send_small_writes_at_once() {
    use std::io::{Read, Write};
    let dirs = ConfigDirs::new();
    config(&dirs);
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    let port = port_of(&serving);
    // A kept-alive connection, answered once: the server has accepted it.
    let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    client
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = [0u8; 256];
    let n = client.read(&mut answer).unwrap();
    assert!(
        answer[..n].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&answer[..n])
    );
    let client_port = client.local_addr().unwrap().port();
    let fd = socket_fd(serving.pid(), port, client_port)
        .expect("mcpw's side of the connection among its open files");
    assert!(
        nodelay_of(serving.pid(), fd),
        "mcpw accepted a connection with Nagle on"
    );
}

/// The fd number that process `pid` holds for the TCP connection from
/// 127.0.0.1:`local` to 127.0.0.1:`remote`, found through its inode.
fn socket_fd(pid: u32, local: u16, remote: u16) -> Option<i32> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let (want_local, want_remote) = (format!(":{local:04X}"), format!(":{remote:04X}"));
    let inode = table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f[1].ends_with(&want_local) && f[2].ends_with(&want_remote)).then(|| f[9].to_string())
    })?;
    let link = format!("socket:[{inode}]");
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .find_map(|entry| {
            let entry = entry.ok()?;
            (std::fs::read_link(entry.path()).ok()?.to_str()? == link)
                .then(|| entry.file_name().to_str()?.parse().ok())?
        })
}

/// TCP_NODELAY of fd `fd` in process `pid` (a child of this test).
fn nodelay_of(pid: u32, fd: i32) -> bool {
    // SAFETY: plain syscalls on descriptors this function opens and closes.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) as i32;
        assert!(
            pidfd >= 0,
            "pidfd_open: {}",
            std::io::Error::last_os_error()
        );
        let ours = libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) as i32;
        assert!(
            ours >= 0,
            "pidfd_getfd: {}",
            std::io::Error::last_os_error()
        );
        let mut on: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let got = libc::getsockopt(
            ours,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&raw mut on).cast(),
            &mut len,
        );
        assert_eq!(got, 0, "getsockopt: {}", std::io::Error::last_os_error());
        libc::close(ours);
        libc::close(pidfd);
        on != 0
    }
}
