//! Lifecycle against real processes: a server that fails to start, a killed
//! one replaced by the periodic check, the metadata cache on disk, guests
//! acting on live connections, and signals. The rest of the lifecycle
//! (first-call dedup, eager and lazy, backoff, idle, pings, list_changed,
//! reloads, bounded start-up) runs against servers in the process, on a
//! paused clock, in the host crate's lifecycle tests.

use crate::common::{ConfigDirs, adversarial_path, host, host_with_config};
use crate::servers::{MCPW, all_gone, pids, servers};
use mcpw::plugin::SearchOptions;
use mcpw::servers::ServerError;
use serde_json::{Value, json};
use std::time::Duration;

fn misbehave(mode: &str, pid_file: &std::path::Path, extra: Value) -> Value {
    let mut v = json!({"command": "node", "args": [servers().misbehave(), mode], "env": {"PID_FILE": pid_file.display().to_string()}});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn echo() -> Option<serde_json::Map<String, Value>> {
    json!({"message": "hi"}).as_object().cloned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_connect_backs_off_and_an_explicit_connect_bypasses_it() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    let host = host(
        &d,
        json!({"bad": misbehave("exit-on-init", &pf, json!({}))}),
        |_| {},
    )
    .await;
    assert!(host.servers().connect("bad", false).await.is_err());
    assert_eq!(pids(&pf).len(), 1);
    let err = host.servers().connect("bad", false).await.unwrap_err();
    assert!(matches!(err, ServerError::Backoff { .. }), "{err}");
    assert!(
        err.to_string().contains("retrying in")
            && err.to_string().contains("closed the connection"),
        "{err}"
    );
    assert_eq!(pids(&pf).len(), 1, "no new attempt during the backoff");
    let (_, left) = host.servers().failure("bad").unwrap();
    assert!(left > 50, "about a minute of backoff left, got {left}s");
    assert!(
        host.connect("bad").await.is_err(),
        "an explicit connect tries again"
    );
    assert_eq!(pids(&pf).len(), 2);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn guests_imports_act_on_live_connections() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    d.user(
        &json!({
            "mcpServers": {"a": misbehave("ok", &pf, json!({})), "b": misbehave("ok", &pf, json!({}))},
            "settings": {"plugins": {"ranking": adversarial_path(), "grants": {"ranking": ["catalog", "lifecycle", "calls"]}, "calls": {"ranking": ["*"]}}}
        })
        .to_string(),
    );
    let host = host_with_config(&d, |_| {}).await;
    host.call("a__echo", echo()).await.unwrap();
    let score = |hits: Vec<(mcpw::catalog::Entry, f32)>| hits.first().map(|h| h.1);
    let opts = SearchOptions::default;
    assert_eq!(
        score(host.search("catalog", opts()).await.unwrap()),
        Some(2.0),
        "the guest saw both servers"
    );
    assert_eq!(pids(&pf).len(), 1);
    let tools = score(host.search("lifecycle:b", opts()).await.unwrap()).unwrap();
    assert!(
        tools >= 5.0,
        "the guest connected b and saw its tools ({tools})"
    );
    assert_eq!(pids(&pf).len(), 2, "b was started for the guest");
    assert_eq!(
        score(host.search("calls:a/echo", opts()).await.unwrap()),
        Some(1.0),
        "the guest called a's echo"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_search_profile_setting_chooses_the_scoring() {
    let top = |profile: Option<&str>| {
        let profile = profile.map(str::to_string);
        async move {
            let d = ConfigDirs::new();
            let pf = d.root.path().join("pids");
            let mut config = json!({"mcpServers": {"s": misbehave("ok", &pf, json!({}))}});
            if let Some(p) = profile {
                config["settings"] = json!({"searchProfile": p});
            }
            d.user(&config.to_string());
            let host = host_with_config(&d, |_| {}).await;
            host.call("s__echo", echo()).await.unwrap(); // connects: the catalog is known
            let hits = host.search("echo", SearchOptions::default()).await.unwrap();
            host.shutdown().await;
            (hits[0].0.name.clone(), hits[0].1)
        }
    };
    let (seed_top, seed_score) = top(Some("seed")).await;
    let (default_top, default_score) = top(None).await;
    assert_eq!(seed_top, "s__echo");
    assert_eq!(default_top, "s__echo");
    // The seed's keyword scoring adds whole-number weights (10 for a name part, ...).
    assert!(
        seed_score >= 10.0 && seed_score.fract() == 0.0,
        "{seed_score}"
    );
    assert_ne!(seed_score, default_score);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_periodic_health_check_runs_by_itself() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    let host = host(
        &d,
        json!({"kept": misbehave("ok", &pf, json!({"lifecycle": "keep-alive"}))}),
        |o| {
            o.maintenance = true;
            o.lifecycle.health_interval = Duration::from_millis(100);
        },
    )
    .await;
    host.connect_at_start().await;
    let first = host.servers().pid("kept").unwrap();
    // SAFETY: sending a signal to a process we started.
    unsafe { libc::kill(first as i32, libc::SIGKILL) };
    // Nobody calls maintain(): the host's own task notices and reconnects.
    let reconnected = async || host.servers().pid("kept").is_some_and(|p| p != first);
    let within = Duration::from_secs(10);
    mcpw_test_support::eventually("a reconnect by the periodic check", within, reconnected).await;
    host.shutdown().await;
}

#[test]
fn cache_entries_that_cannot_be_read_are_dropped_and_their_servers_listed_again() {
    use mcpw::cache::{self as metadata, MetadataCache};
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    d.user(
        &json!({"mcpServers": {
            "bad_tool": misbehave("ok", &pf, json!({})),
            "bad_shape": misbehave("ok", &pf, json!({"description": "another identity"})),
            "good": {"command": "/nonexistent/never-started"},
        }})
        .to_string(),
    );
    let cfg = d.load();
    let path = d.env.cache_dir().join("metadata.json");
    let entry = |server: &str, tool: Value| metadata::Entry {
        config_hash: metadata::config_hash(&cfg.server(server).unwrap().raw),
        tools: vec![serde_json::value::to_raw_value(&tool).unwrap()],
        resources: vec![],
        resource_templates: vec![],
        prompts: vec![],
        skills: vec![],
        directory_read: false,
        cached_at: mcpw::clock::now_ms(),
        protocol_version: None,
    };
    MetadataCache::new(path.clone())
        .update(
            [
                (
                    "good",
                    entry(
                        "good",
                        json!({"name": "kept", "inputSchema": {"type": "object"}}),
                    ),
                ),
                // A name that is not text: the tool cannot be read.
                (
                    "bad_tool",
                    entry("bad_tool", json!({"name": 5, "inputSchema": "x"})),
                ),
                ("bad_shape", entry("bad_shape", json!({"name": "x"}))),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), Some(v)))
            .collect(),
        )
        .unwrap();
    // An entry of the wrong shape altogether, beside the others.
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    file["servers"]["bad_shape"]["tools"] = json!("not a list");
    std::fs::write(&path, file.to_string()).unwrap();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpw"))
        .args(["tools", "--json"])
        .env("HOME", d.home())
        .env("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("MCPW_CONFIG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // The good entry served its tool without starting its (missing) server;
    // the others were listed again from their servers.
    assert!(names.contains(&"good__kept"), "{names:?}\n{stderr}");
    assert!(names.contains(&"bad_tool__echo"), "{names:?}\n{stderr}");
    assert!(names.contains(&"bad_shape__echo"), "{names:?}\n{stderr}");
    assert!(
        stderr.contains("bad_tool") && stderr.contains("cannot be read"),
        "{stderr}"
    );
    assert!(stderr.contains("\"bad_shape\" cannot be read"), "{stderr}");
}

#[test]
fn a_cache_lock_held_elsewhere_delays_no_call_and_the_write_comes_later() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    d.user(&json!({"mcpServers": {"m": misbehave("ok", &pf, json!({}))}}).to_string());
    let cache_dir = d.env.cache_dir();
    std::fs::create_dir_all(&cache_dir).unwrap();
    // Another process's lock, as a hung mcpw would hold it.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(cache_dir.join("metadata.lock"))
        .unwrap();
    lock.lock().unwrap();
    let mcpw = || {
        // Bounded: before, the call never returned.
        let mut c = std::process::Command::new("timeout");
        c.args(["30", env!("CARGO_BIN_EXE_mcpw")])
            .env("HOME", d.home())
            .env("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("MCPW_CONFIG");
        c
    };
    let out = mcpw()
        .args(["call", "m__echo", r#"{"message": "hi"}"#])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Echo: hi");
    assert!(stderr.contains("written later"), "{stderr}");
    assert!(!cache_dir.join("metadata.json").exists());

    // A gateway keeps what it could not write, and writes it once the lock is free.
    let serving = crate::servers::Serving::start(MCPW, &d.home(), &["--exposure", "direct"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use rmcp::ServiceExt;
        let client = ()
            .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
                serving.url(),
            ))
            .await
            .unwrap();
        let args = json!({"message": "hi"}).as_object().cloned().unwrap();
        client
            .call_tool(rmcp::model::CallToolRequestParams::new("m__echo").with_arguments(args))
            .await
            .unwrap();
    });
    drop(lock);
    crate::servers::wait_until(
        "the cache to be written after the lock is released",
        Duration::from_secs(20),
        || cache_dir.join("metadata.json").exists(),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guests_deadline_does_not_count_its_wait_for_a_server() {
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    d.user(
        &json!({
            "mcpServers": {"slow": misbehave("ok", &pf, json!({"callTimeoutMs": 900}))},
            "settings": {"plugins": {
                "ranking": adversarial_path(),
                "grants": {"ranking": ["calls"]},
                "calls": {"ranking": ["slow__*"]},
                "limits": {"deadlineMs": 300}
            }}
        })
        .to_string(),
    );
    let host = host_with_config(&d, |_| {}).await;
    // A guest calls what the catalog holds: the server is listed first.
    host.connect("slow").await.unwrap();
    host.entries().await.unwrap();
    // The guest waits 900 ms for `hang`, three times its 300 ms deadline: the
    // server's timeout comes back to it as an error value, not a trap.
    let err = host
        .search("calls:slow/hang", SearchOptions::default())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(!text.contains("deadline of 300 ms"), "{text}");
    assert!(text.contains("900 ms"), "{text}");
    // Its own time still counts (sandbox::deadline_violated: a spinning guest traps).
    host.shutdown().await;
}

#[test]
fn a_signal_stops_serve_through_its_own_shutdown() {
    use std::io::Read;
    let d = ConfigDirs::new();
    let pf = d.root.path().join("pids");
    d.user(
        &json!({"mcpServers": {"m": misbehave("ok", &pf, json!({"lifecycle": "eager"}))}})
            .to_string(),
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcpw"))
        .args(["serve", "--http", &format!("127.0.0.1:{port}")])
        .env("HOME", d.home())
        .env("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("MCPW_CONFIG")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::servers::wait_until("serve to listen", Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    crate::servers::wait_until("the eager server to start", Duration::from_secs(20), || {
        !pids(&pf).is_empty()
    });
    // SIGTERM, as a service manager sends it: the same orderly stop as Ctrl-C.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("mcpw: stopping"), "{stderr}");
    assert!(all_gone(&pids(&pf), Duration::from_secs(5)));
}
