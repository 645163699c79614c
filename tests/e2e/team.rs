//! A team gateway: mcpw replicas sharing state through a real Redis, behind a
//! real haproxy balancing round-robin with no stickiness.

mod cross_app;
mod exchange;
mod oidc;
mod people_store;
mod per_person;
mod pins;
mod principals;
mod sdk_signin;
mod sign_in_checked;
mod signin;
mod skills;
mod wire;

use crate::common::ConfigDirs;
use crate::gateway::serve::text;
use crate::servers::{MCPW, mcpw_in, servers};
use mcpw_test_support::team::{Haproxy, Redis, replica};
use mcpw_test_support::{eventually, wait_until};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use wire::Wire;

/// Three homes with the user config `config`: the operator's, and two
/// replicas'.
fn three_homes(config: &str) -> Vec<ConfigDirs> {
    let homes: Vec<ConfigDirs> = (0..3).map(|_| ConfigDirs::new()).collect();
    for h in &homes {
        h.user(config);
    }
    homes
}

/// The principals logged in to `server` (sorted), by `mcpw auth status
/// --json` at `home`, sharing `redis`. A sign-in begun keeps the client it
/// registered, with no token yet: that person is not logged in.
fn logged_in(home: &ConfigDirs, redis: &Redis, server: &str) -> Vec<String> {
    let out = mcpw_in(&home.home())
        .args(["--shared-state", &redis.url(), "auth", "status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let people = status[server]["people"].as_array().cloned();
    let mut owners: Vec<String> = people
        .unwrap_or_default()
        .iter()
        .filter(|p| p["loggedIn"] == true)
        .map(|p| p["owner"].as_str().unwrap().to_string())
        .collect();
    owners.sort();
    owners
}

/// The address after "Sign in at " in `said` (a call's answer).
fn link_in(said: &str) -> String {
    let (_, rest) = said
        .split_once("Sign in at ")
        .unwrap_or_else(|| panic!("a sign-in link: {said}"));
    rest.split_whitespace().next().unwrap().to_string()
}

/// Server `s` (misbehave.mjs ok, its starts appended to `pids`) in a config
/// under `home`.
fn config_with(dirs: &ConfigDirs, pids: &Path, mode: &str) {
    let server = json!({"command": "node", "args": [servers().misbehave(), mode],
                        "env": {"PID_FILE": pids.display().to_string()}});
    let settings = json!({"captureStats": {"flushDelayMs": 20}});
    dirs.user(&json!({"mcpServers": {"s": server}, "settings": settings}).to_string());
}

/// Two replicas sharing `redis`, each with a home of its own (by default
/// serving server `s`, misbehave.mjs `mode`), serving with `args`; and the
/// homes, which must outlive them.
struct Pair {
    a: crate::servers::Serving,
    a_port: u16,
    b: crate::servers::Serving,
    b_port: u16,
    _homes: [ConfigDirs; 2],
}

impl Pair {
    fn start(redis: &Redis, pids: &Path, mode: &str, args: &[&str]) -> Pair {
        Pair::configured(redis, |h| config_with(h, pids, mode), args)
    }

    /// Two replicas, each home's config written by `config`.
    fn configured(redis: &Redis, config: impl Fn(&ConfigDirs), args: &[&str]) -> Pair {
        let homes = [ConfigDirs::new(), ConfigDirs::new()];
        for h in &homes {
            config(h);
        }
        let (a, a_port) = replica(MCPW, &homes[0].home(), &redis.url(), args);
        let (b, b_port) = replica(MCPW, &homes[1].home(), &redis.url(), args);
        Pair {
            a,
            a_port,
            b,
            b_port,
            _homes: homes,
        }
    }

    fn urls(&self) -> (String, String) {
        let url = |p: u16| format!("http://127.0.0.1:{p}/mcp");
        (url(self.a_port), url(self.b_port))
    }
}

fn starts(pids: &Path) -> usize {
    std::fs::read_to_string(pids).map_or(0, |t| t.lines().count())
}

fn mcpw(home: &Path, args: &[&str]) -> std::process::Output {
    mcpw_in(home).args(args).output().unwrap()
}

/// A session begun at one replica goes on at the other, request by request:
/// a tool loaded with ToolSearch through one is listed by the other, and
/// the other calls it.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_goes_on_at_the_other_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let pair = Pair::start(
        &redis,
        &root.path().join("pids"),
        "ok",
        &["--exposure", "tool-search"],
    );
    let (a, b) = pair.urls();

    let session = Wire::initialize(&a).await;
    let before = session.tool_names(&b).await;
    assert!(before.contains(&"ToolSearch".to_string()), "{before:?}");
    assert!(!before.contains(&"s__echo".to_string()), "{before:?}");
    let loaded = session
        .call(&a, "ToolSearch", json!({"query": "select:s__echo"}))
        .await
        .unwrap();
    assert!(text(&loaded).contains("s__echo"), "{loaded}");
    let after = session.tool_names(&b).await;
    assert!(
        after.contains(&"s__echo".to_string()),
        "loaded through A, listed by B: {after:?}"
    );
    let echoed = session
        .call(&b, "s__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "Echo: hi");

    // A session nobody began is not found, at either replica.
    let stranger = session.with_session("no-such-session");
    let refused = stranger.tool_names_result(&b).await.unwrap_err();
    assert!(refused.starts_with("HTTP 404"), "{refused}");
    // Ended at one replica, it is gone at the other too.
    session.delete(&a).await;
    wait_until(
        "B to forget the ended session",
        Duration::from_secs(10),
        || redis.cli(&["EXISTS", &format!("mcpw:session:{}", session.session)]) == "0",
    );
    let gone = session.tool_names_result(&b).await.unwrap_err();
    assert!(gone.starts_with("HTTP 404"), "{gone}");
}

/// A cache filled by one replica lets another list tools without starting
/// the server; `mcpw tools` with the same shared state sees them too.
#[tokio::test(flavor = "multi_thread")]
async fn a_cache_filled_by_one_replica_serves_the_other() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let (a_dirs, b_dirs, cli_dirs) = (ConfigDirs::new(), ConfigDirs::new(), ConfigDirs::new());
    let pids = root.path().join("pids");
    for d in [&a_dirs, &b_dirs, &cli_dirs] {
        config_with(d, &pids, "ok");
    }
    let (_a, a_port) = replica(
        MCPW,
        &a_dirs.home(),
        &redis.url(),
        &["--exposure", "direct"],
    );
    let a = format!("http://127.0.0.1:{a_port}/mcp");
    let names = Wire::initialize(&a).await.tool_names(&a).await;
    assert!(names.contains(&"s__echo".to_string()), "{names:?}");
    assert_eq!(starts(&pids), 1, "A started the server once");
    wait_until("A's listing in Redis", Duration::from_secs(10), || {
        redis.cli(&["HEXISTS", "mcpw:cache:servers", "s"]) == "1"
    });

    let (_b, b_port) = replica(
        MCPW,
        &b_dirs.home(),
        &redis.url(),
        &["--exposure", "direct"],
    );
    let b = format!("http://127.0.0.1:{b_port}/mcp");
    let names = Wire::initialize(&b).await.tool_names(&b).await;
    assert!(names.contains(&"s__echo".to_string()), "{names:?}");
    let out = mcpw(
        &cli_dirs.home(),
        &["--shared-state", &redis.url(), "tools", "--json"],
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("s__echo"), "{listed}");
    assert_eq!(starts(&pids), 1, "neither B nor the CLI started it");
}

/// A rate limit is one bucket for the team: calls through either replica
/// draw from it, and the one past it is refused at once with a retry-after.
#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_is_shared_by_the_replicas() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let pids = root.path().join("pids");
    let homes = [ConfigDirs::new(), ConfigDirs::new()];
    for h in &homes {
        let server = json!({"command": "node", "args": [servers().misbehave(), "ok"],
                            "env": {"PID_FILE": pids.display().to_string()}, "rateLimit": "3/h"});
        let settings = json!({"audit": {"path": root.path().join("audit.jsonl")}});
        h.user(&json!({"mcpServers": {"s": server}, "settings": settings}).to_string());
    }
    let (_a, a_port) = replica(
        MCPW,
        &homes[0].home(),
        &redis.url(),
        &["--exposure", "direct"],
    );
    let (_b, b_port) = replica(
        MCPW,
        &homes[1].home(),
        &redis.url(),
        &["--exposure", "direct"],
    );
    let (a, b) = (
        format!("http://127.0.0.1:{a_port}/mcp"),
        format!("http://127.0.0.1:{b_port}/mcp"),
    );
    let (wa, wb) = (Wire::initialize(&a).await, Wire::initialize(&b).await);
    let echo = |m: &str| json!({"message": m});
    let mut outcomes = Vec::new();
    for (wire, url, m) in [
        (&wa, &a, "1"),
        (&wb, &b, "2"),
        (&wa, &a, "3"),
        (&wb, &b, "4"),
    ] {
        outcomes.push(wire.call(url, "s__echo", echo(m)).await.unwrap());
    }
    for r in &outcomes[..3] {
        assert_ne!(r["isError"], true, "{r}");
    }
    let refused = text(&outcomes[3]);
    assert_eq!(outcomes[3]["isError"], true);
    let after = refused
        .split("retry after ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{refused}"));
    assert!(
        (1100.0..=1200.0).contains(&after),
        "one call back every 20 minutes: {refused}"
    );
    assert!(
        refused.contains("mcpServers.s.rateLimit allows 3/h for each client"),
        "{refused}"
    );
    assert_eq!(
        redis.cli(&["EXISTS", "mcpw:rate:|s|"]),
        "1",
        "the bucket is in Redis"
    );

    // Each replica keeps its audit trail in a file named for it.
    let trails: Vec<String> = std::fs::read_dir(root.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("audit-") && n.ends_with(".jsonl"))
        .collect();
    assert_eq!(trails.len(), 2, "{trails:?}");
    let read = |t: &String| std::fs::read_to_string(root.path().join(t)).unwrap();
    let lines: Vec<Value> = trails
        .iter()
        .map(read)
        .flat_map(|text| {
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<Value>>()
        })
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines.iter().filter(|l| l["decision"] == "denied").count(),
        1
    );
}

/// A failed connect recorded by one replica holds the other back for the
/// backoff, even though it was already running.
#[tokio::test(flavor = "multi_thread")]
async fn a_failure_recorded_by_one_replica_is_honoured_by_the_other() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let pids = root.path().join("pids");
    // Proxy exposure connects nothing until asked.
    let pair = Pair::start(&redis, &pids, "exit-on-init", &["--exposure", "proxy"]);
    let (a, b) = pair.urls();
    assert_eq!(starts(&pids), 0);
    let call = json!({"tool": "s__anything", "args": {}});
    let at_a = Wire::initialize(&a)
        .await
        .call(&a, "mcp", call.clone())
        .await;
    assert!(at_a.is_ok(), "{at_a:?}");
    assert_eq!(starts(&pids), 1, "A tried the server");
    wait_until("A's failure in Redis", Duration::from_secs(10), || {
        redis.cli(&["HEXISTS", "mcpw:cache:failures", "s"]) == "1"
    });
    let at_b = Wire::initialize(&b).await;
    at_b.call(&b, "mcp", call).await.unwrap();
    let status = at_b.call(&b, "mcp", json!({})).await.unwrap();
    assert_eq!(starts(&pids), 1, "B honoured A's failure: {status}");
    assert!(text(&status).contains("✗ s (failed"), "{}", text(&status));
}

/// The TypeScript SDK's client through haproxy (round-robin, no
/// stickiness) to two replicas, in every exposure: each request may land
/// on either replica, and both serve.
#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_client_through_haproxy_in_every_exposure() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let pids = root.path().join("pids");
    let mut echo_calls = 0;
    for (exposure, steps, check) in exposures() {
        let pair = Pair::start(&redis, &pids, "ok", &["--exposure", exposure]);
        let lb = Haproxy::start(root.path(), &[pair.a_port, pair.b_port]);
        let results = crate::gateway::serve::client(json!({"url": lb.url()}), steps)
            .unwrap_or_else(|e| panic!("{exposure}: {e}"));
        check(&results);
        echo_calls += results
            .iter()
            .filter(|r| r.to_string().contains("Echo: "))
            .count();
        for (name, serving) in [("A", &pair.a), ("B", &pair.b)] {
            let metrics = reqwest::get(serving.at("/metrics"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(
                metrics.contains("mcpw_tool_calls_total{"),
                "{exposure}: replica {name} served no call:\n{metrics}"
            );
        }
    }

    // Every replica's calls, added up in one place (the replicas flushed
    // their statistics as they stopped).
    let out = mcpw(
        ConfigDirs::new().home().as_path(),
        &["--shared-state", &redis.url(), "stats", "--json"],
    );
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    let echo = stats["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "s__echo")
        .unwrap_or_else(|| panic!("{stats}"));
    assert_eq!(echo["calls"], json!(echo_calls), "{stats}");
}

type Check = fn(&[Value]);

fn exposures() -> Vec<(&'static str, Value, Check)> {
    let echo =
        |name: &str, m: &str| json!({"op": "callTool", "name": name, "arguments": {"message": m}});
    let via_proxy = |m: &str| json!({"op": "callTool", "name": "mcp", "arguments": {"tool": "s__echo", "args": {"message": m}}});
    vec![
        (
            "direct",
            json!([{"op": "listTools"}, echo("s__echo", "1"), echo("s__echo", "2"), echo("s__echo", "3"), echo("s__echo", "4")]),
            |r| {
                assert!(r[0].to_string().contains("s__echo"));
                for (i, call) in r[1..].iter().enumerate() {
                    assert_eq!(text(call), format!("Echo: {}", i + 1));
                }
            },
        ),
        (
            "tool-search",
            json!([{"op": "listTools"}, {"op": "callTool", "name": "ToolSearch", "arguments": {"query": "select:s__echo"}},
                   {"op": "listTools"}, {"op": "listTools"}, echo("s__echo", "1"), echo("s__echo", "2")]),
            |r| {
                let names = |v: &Value| -> Vec<String> {
                    v.as_array()
                        .unwrap()
                        .iter()
                        .map(|t| t["name"].as_str().unwrap().to_string())
                        .collect()
                };
                assert!(!names(&r[0]).contains(&"s__echo".to_string()), "{}", r[0]);
                assert!(names(&r[2]).contains(&"s__echo".to_string()), "{}", r[2]);
                assert!(names(&r[3]).contains(&"s__echo".to_string()), "{}", r[3]);
                assert_eq!(text(&r[4]), "Echo: 1");
                assert_eq!(text(&r[5]), "Echo: 2");
            },
        ),
        (
            "proxy",
            json!([{"op": "listTools"}, via_proxy("1"), via_proxy("2"), via_proxy("3"), via_proxy("4")]),
            |r| {
                assert!(r[0].to_string().contains("\"mcp\""), "{}", r[0]);
                for (i, call) in r[1..].iter().enumerate() {
                    assert!(text(call).contains(&format!("Echo: {}", i + 1)), "{call}");
                }
            },
        ),
    ]
}

/// A replica killed in the middle of a session: the next calls succeed on
/// the other, in the same session.
#[tokio::test(flavor = "multi_thread")]
async fn a_replica_killed_mid_session_loses_nothing() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let mut pair = Pair::start(
        &redis,
        &root.path().join("pids"),
        "ok",
        &["--exposure", "direct"],
    );
    let lb = Haproxy::start(root.path(), &[pair.a_port, pair.b_port]);
    let session = Wire::initialize(&lb.url()).await;
    for i in 0..4 {
        let out = session
            .call(&lb.url(), "s__echo", json!({"message": i.to_string()}))
            .await
            .unwrap();
        assert_eq!(text(&out), format!("Echo: {i}"));
    }
    // SAFETY: killing our own child.
    unsafe { libc::kill(pair.a.pid() as i32, libc::SIGKILL) };
    // Gone, sockets and all: a request sent while it was dying would have
    // been in flight.
    assert!(pair.a.exited(Duration::from_secs(10)).is_some());
    for i in 0..6 {
        let out = session
            .call(&lb.url(), "s__echo", json!({"message": i.to_string()}))
            .await;
        assert_eq!(
            out.as_ref().map(text),
            Ok(format!("Echo: {i}")),
            "call {i} after the kill"
        );
    }
}

/// Redis stopped, then started again, while clients call through haproxy:
/// no call fails, sessions begun meanwhile go on at either replica, the
/// replicas say they are degraded while it is away, and write back what it
/// missed once it returns.
#[tokio::test(flavor = "multi_thread")]
async fn redis_stopped_and_restarted_under_load() {
    let root = tempfile::tempdir().unwrap();
    let mut redis = Redis::start(&root.path().join("redis"));
    let pair = Pair::start(
        &redis,
        &root.path().join("pids"),
        "ok",
        &["--exposure", "direct"],
    );
    let lb = Haproxy::start(root.path(), &[pair.a_port, pair.b_port]);
    let url = lb.url();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // What the clients got done so far: calls answered, sessions begun.
    let done = std::sync::Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
    // Each phase lasts until the clients made calls and began a session in it.
    let phase = |what: &'static str| {
        let done = done.clone();
        async move {
            let (calls, begun) = (done.0.load(SeqCst), done.1.load(SeqCst));
            let traffic = format!("traffic {what}");
            eventually(&traffic, Duration::from_secs(30), async || {
                done.0.load(SeqCst) >= calls + 10 && done.1.load(SeqCst) > begun
            })
            .await;
        }
    };
    // Steady clients, each in a session begun before the outage.
    let mut workers = Vec::new();
    for w in 0..3 {
        let (url, stop, done) = (url.clone(), stop.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            let session = Wire::initialize(&url).await;
            let (mut ok, mut failed) = (0, Vec::new());
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let m = format!("{w}-{i}");
                match session.call(&url, "s__echo", json!({"message": m})).await {
                    Ok(r) if text(&r) == format!("Echo: {m}") => {
                        ok += 1;
                        done.0.fetch_add(1, SeqCst);
                    }
                    other => failed.push(format!("{m}: {other:?}")),
                }
                i += 1;
            }
            (ok, failed, Vec::<String>::new())
        }));
    }
    // A client that begins a new session every so often, and calls in it.
    {
        let (url, stop, done) = (url.clone(), stop.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            let (mut ok, mut failed, mut begun) = (0, Vec::new(), Vec::new());
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let session = Wire::initialize(&url).await;
                for i in 0..2 {
                    match session
                        .call(&url, "s__echo", json!({"message": i.to_string()}))
                        .await
                    {
                        Ok(r) if text(&r) == format!("Echo: {i}") => {
                            ok += 1;
                            done.0.fetch_add(1, SeqCst);
                        }
                        other => failed.push(format!("new session, call {i}: {other:?}")),
                    }
                }
                begun.push(session.session.clone());
                done.1.fetch_add(1, SeqCst);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            (ok, failed, begun)
        }));
    }
    phase("before the outage").await;
    redis.stop();
    let outage_began = std::time::Instant::now();
    let readyz = pair.a.at("/readyz");
    let mut said = String::new();
    while outage_began.elapsed() < Duration::from_secs(8) {
        let r = reqwest::get(&readyz).await.unwrap();
        assert_eq!(
            r.status(),
            200,
            "a replica stays in the balancer without Redis"
        );
        said = r.text().await.unwrap();
        if said.contains("degraded") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(said.contains("degraded: shared state redis://"), "{said}");
    // Sessions begun while Redis is away.
    phase("while Redis is away").await;
    redis.restart();
    phase("after Redis is back").await;
    stop.store(true, std::sync::atomic::Ordering::Release);
    let (mut ok, mut failed, mut begun) = (0, Vec::new(), Vec::new());
    for w in workers {
        let (o, f, b) = w.await.unwrap();
        ok += o;
        failed.extend(f);
        begun.extend(b);
    }
    assert!(
        failed.is_empty(),
        "{} of {} calls failed: {failed:?}",
        failed.len(),
        ok + failed.len()
    );
    assert!(ok > 20, "only {ok} calls made");
    // Every session begun, during the outage too, is in Redis again.
    wait_until(
        "the replicas to write back their sessions",
        Duration::from_secs(15),
        || {
            begun
                .iter()
                .all(|id| redis.cli(&["HEXISTS", &format!("mcpw:session:{id}"), "init"]) == "1")
        },
    );
    let r = reqwest::get(&readyz).await.unwrap().text().await.unwrap();
    assert_eq!(r, "ready\n");
}

/// A login through one process serves every process that shares the state,
/// sealed in Redis under the team's key; processes with separate homes
/// refreshing the same token at once take turns through a lock in Redis.
#[test]
fn a_login_made_once_serves_every_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let events = root.path().join("events");
    // Access tokens live 1 s; the server refuses a refresh token used twice.
    let server = crate::servers::Background::node(
        &[&servers().oauth_server()],
        &[
            ("EVENTS_FILE", &events.display().to_string()),
            ("ACCESS_TTL_S", "1"),
        ],
    );
    let config = json!({"mcpServers": {"o": {"url": server.url("/mcp")}}}).to_string();
    let homes: Vec<ConfigDirs> = (0..6).map(|_| ConfigDirs::new()).collect();
    for h in &homes {
        h.user(&config);
    }
    let key = "a team secret only the replicas know";
    let run = |home: &ConfigDirs, key: &str, args: &[&str], browser: bool| {
        let mut cmd = mcpw_in(&home.home());
        cmd.args(["--shared-state", &redis.url()])
            .args(args)
            .env("MCPW_SHARED_STATE_KEY", key)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if browser {
            cmd.env(
                "BROWSER",
                crate::common::workspace().join("tests/conformance/browser.sh"),
            );
        } else {
            cmd.env_remove("BROWSER");
        }
        cmd
    };
    let said = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let login = run(&homes[0], key, &["auth", "login", "o"], true)
        .output()
        .unwrap();
    assert!(login.status.success(), "{}", said(&login));
    // Sealed: nothing of the token response is readable in Redis, and
    // nothing was written to the login's own home.
    let stored = redis.cli(&["HGETALL", "mcpw:credentials"]);
    assert!(stored.contains("v1."), "{stored}");
    assert!(
        !stored.contains("access_token") && !stored.contains("Bearer"),
        "{stored}"
    );
    assert!(!homes[0].home().join(".config/mcpw/credentials").exists());

    let other = run(&homes[1], key, &["call", "o__whoami", "{}"], false)
        .output()
        .unwrap();
    assert!(other.status.success(), "{}", said(&other));
    assert!(said(&other).starts_with("client "), "{}", said(&other));
    // Another key opens nothing: the call is refused, and the auth
    // commands name the problem (a login would not replace the team's).
    let wrong_key = "not the key the team uses";
    let wrong = run(&homes[1], wrong_key, &["call", "o__whoami", "{}"], false)
        .output()
        .unwrap();
    assert!(!wrong.status.success(), "{}", said(&wrong));
    for args in [&["auth", "status"][..], &["auth", "login", "o"]] {
        let out = run(&homes[1], wrong_key, args, true).output().unwrap();
        assert!(
            said(&out).contains("do not open with this key"),
            "{args:?}: {}",
            said(&out)
        );
    }
    // Waiting out the token's lifetime (a clock, not an event).
    std::thread::sleep(Duration::from_millis(1100));
    let calls: Vec<_> = homes[2..]
        .iter()
        .map(|h| {
            run(h, key, &["call", "o__whoami", "{}"], false)
                .spawn()
                .unwrap()
        })
        .collect();
    for call in calls {
        let out = call.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", said(&out));
    }
    let events = std::fs::read_to_string(&events).unwrap_or_default();
    assert!(events.contains("refresh\n"), "{events}");
    assert!(!events.contains("refresh-reused"), "{events}");
}

/// A server does not inherit mcpw's own secrets: one that shows its
/// environment (server-everything's `get-env`) shows none of them.
#[test]
fn servers_do_not_inherit_mcpws_secrets() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let dirs = ConfigDirs::new();
    let server = json!({"command": "node", "args": [servers().everything(), "stdio"]});
    dirs.user(&json!({"mcpServers": {"e": server}}).to_string());
    let out = mcpw_in(&dirs.home())
        .args(["call", "e__get-env", "{}"])
        .env("MCPW_TOKEN", "token-for-clients-only")
        .env("MCPW_SHARED_STATE", redis.url())
        .env("MCPW_SHARED_STATE_KEY", "the team key, for replicas only")
        .env("SOME_OTHER_VARIABLE", "passed on")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{shown}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        shown.contains("passed on"),
        "the environment is shown: {shown}"
    );
    for secret in ["token-for-clients-only", &redis.url(), "the team key"] {
        assert!(
            !shown.contains(secret),
            "{secret} reached the server: {shown}"
        );
    }
}

/// A session belongs to the client that opened it at every replica: another
/// client's token naming it is answered 404 at the other replica too, and a
/// limited client sees only its servers there.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_stays_its_clients_at_every_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let pids = root.path().join("pids");
    let dirs: Vec<ConfigDirs> = (0..2).map(|_| ConfigDirs::new()).collect();
    for d in &dirs {
        let s = json!({"command": "node", "args": [servers().misbehave(), "ok"],
                       "env": {"PID_FILE": pids.display().to_string()}});
        let t = json!({"command": "node", "args": [servers().misbehave(), "ok"]});
        let tokens = json!([{"name": "ci", "token": "ci-token-0123456789", "servers": ["s"]},
                            {"name": "admin", "token": "admin-token-0123456789"}]);
        d.user(&json!({"mcpServers": {"s": s, "t": t}, "serve": {"tokens": tokens}}).to_string());
    }
    let args = ["--exposure", "direct"];
    let (_a, a_port) = replica(MCPW, &dirs[0].home(), &redis.url(), &args);
    let (_b, b_port) = replica(MCPW, &dirs[1].home(), &redis.url(), &args);
    let a = format!("http://127.0.0.1:{a_port}/mcp");
    let b = format!("http://127.0.0.1:{b_port}/mcp");
    let ci = Wire::initialize_as(&a, Some("ci-token-0123456789")).await;
    // Another client, at the other replica, before the owner got there.
    let refused = ci
        .as_client("admin-token-0123456789")
        .tool_names_result(&b)
        .await
        .unwrap_err();
    assert!(refused.starts_with("HTTP 404"), "{refused}");
    let names = ci.tool_names(&b).await;
    assert!(names.contains(&"s__echo".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("t__")), "{names:?}");
}

/// The log level a session sets through one replica reaches the other
/// replica's servers too: at once where that replica holds the session
/// (announced), and when it takes the session up later (loaded).
#[tokio::test(flavor = "multi_thread")]
async fn a_log_level_set_through_one_replica_holds_at_the_other() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let mut ports = Vec::new();
    let mut replicas = Vec::new();
    let mut methods = Vec::new();
    for name in ["a", "b", "c"] {
        let dirs = ConfigDirs::new();
        let file = root.path().join(format!("methods-{name}"));
        let server = json!({"command": "node", "args": [servers().misbehave(), "ok"],
                            "env": {"METHODS_FILE": file.display().to_string()}});
        dirs.user(&json!({"mcpServers": {"s": server}}).to_string());
        let (serving, port) = replica(MCPW, &dirs.home(), &redis.url(), &["--exposure", "direct"]);
        ports.push(port);
        replicas.push((serving, dirs));
        methods.push(file);
    }
    let url = |i: usize| format!("http://127.0.0.1:{}/mcp", ports[i]);
    let asked = |i: usize| {
        std::fs::read_to_string(&methods[i])
            .unwrap_or_default()
            .lines()
            .any(|m| m == "logging/setLevel")
    };
    let session = Wire::initialize(&url(0)).await;
    // B holds the session (and has its server running) before the level is set.
    session.tool_names(&url(1)).await;
    assert!(!asked(1));
    session
        .request(&url(0), "logging/setLevel", json!({"level": "debug"}))
        .await
        .unwrap();
    assert!(asked(0));
    wait_until("B to pass the level on", Duration::from_secs(10), || {
        asked(1)
    });
    // C takes the session up only now.
    session.tool_names(&url(2)).await;
    wait_until("C to pass the level on", Duration::from_secs(10), || {
        asked(2)
    });
}

/// A client of the stateless revision (2026-07-28: no session at all; here
/// mcpw itself, as rmcp speaks it) through haproxy: every request may land
/// on either replica, and needs nothing shared.
#[tokio::test(flavor = "multi_thread")]
async fn stateless_requests_land_on_either_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let pair = Pair::start(
        &redis,
        &root.path().join("pids"),
        "ok",
        &["--exposure", "direct"],
    );
    let lb = Haproxy::start(root.path(), &[pair.a_port, pair.b_port]);
    let outer = ConfigDirs::new();
    let host = crate::common::host(&outer, json!({"team": {"url": lb.url()}}), |_| {}).await;
    for i in 0..6 {
        let out = host
            .call(
                "team__s__echo",
                json!({"message": i.to_string()}).as_object().cloned(),
            )
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&out.content).unwrap()[0]["text"],
            format!("Echo: {i}")
        );
    }
    let status = host.connect("team").await.unwrap();
    assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
    for serving in [&pair.a, &pair.b] {
        let metrics = reqwest::get(serving.at("/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(metrics.contains("mcpw_tool_calls_total{"), "{metrics}");
    }
    host.shutdown().await;
}

/// A resource a session watches through one replica is watched for it by
/// the others too: at once where a replica holds the session (announced),
/// and when one takes the session up later (loaded).
#[tokio::test(flavor = "multi_thread")]
async fn a_resource_watched_through_one_replica_is_watched_at_the_others() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let mut kept = Vec::new();
    let mut urls = Vec::new();
    let mut files = Vec::new();
    for name in ["a", "b", "c"] {
        // Each replica its own upstream, which records what it is asked to watch.
        let file = root.path().join(format!("subscriptions-{name}"));
        let upstream = crate::servers::Background::node(
            &[&servers().conformance_upstream()],
            &[("SUBSCRIPTIONS_FILE", &file.display().to_string())],
        );
        let dirs = ConfigDirs::new();
        let config = json!({"mcpServers": {"c": {"url": upstream.url("/mcp")}},
                            "settings": {"toolPrefix": "none"}});
        dirs.user(&config.to_string());
        let (serving, port) = replica(MCPW, &dirs.home(), &redis.url(), &["--exposure", "direct"]);
        urls.push(format!("http://127.0.0.1:{port}/mcp"));
        files.push(file);
        kept.push((upstream, dirs, serving));
    }
    let watched = |i: usize| {
        std::fs::read_to_string(&files[i])
            .unwrap_or_default()
            .lines()
            .any(|u| u == "test://watched-resource")
    };
    let session = Wire::initialize(&urls[0]).await;
    session.tool_names(&urls[1]).await; // B holds the session
    session
        .request(
            &urls[0],
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await
        .unwrap();
    assert!(watched(0));
    wait_until("B to watch it too", Duration::from_secs(10), || watched(1));
    assert!(!watched(2));
    session.tool_names(&urls[2]).await; // C takes the session up only now
    wait_until("C to watch it too", Duration::from_secs(10), || watched(2));
}

/// A replica whose Redis has not answered yet is not ready, and says why;
/// it is once Redis answers.
#[tokio::test(flavor = "multi_thread")]
async fn a_replica_is_ready_once_redis_answers() {
    let root = tempfile::tempdir().unwrap();
    let mut redis = Redis::stopped(&root.path().join("redis"));
    let dirs = ConfigDirs::new();
    config_with(&dirs, &root.path().join("pids"), "ok");
    let (serving, _) = mcpw_test_support::team::replica_started(
        MCPW,
        &dirs.home(),
        &redis.url(),
        &["--exposure", "direct"],
    );
    let readyz = serving.at("/readyz");
    let probe = || async {
        let r = reqwest::get(&readyz).await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    };
    let mut said = (0, String::new());
    for _ in 0..200 {
        said = probe().await;
        if said.1.contains("shared state") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(said.0, 503, "{said:?}");
    assert!(
        said.1
            .starts_with("starting: shared state redis://127.0.0.1:"),
        "{said:?}"
    );
    redis.restart();
    for _ in 0..200 {
        said = probe().await;
        if said.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(said, (200, "ready\n".to_string()));
}

/// A result too big for the budget, cut through one replica: the other
/// serves the whole (by range and as a resource) to the same session, and
/// to no other.
#[tokio::test(flavor = "multi_thread")]
async fn a_result_kept_through_one_replica_is_read_at_the_other() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let pair = Pair::start(
        &redis,
        &root.path().join("pids"),
        "ok",
        &["--exposure", "direct"],
    );
    let (a, b) = pair.urls();
    let session = Wire::initialize(&a).await;
    let preview = session
        .call(&a, "s__big", json!({"bytes": 200_000}))
        .await
        .unwrap();
    assert!(preview.to_string().len() <= 40_000, "cut to the budget");
    let link = preview["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "resource_link")
        .unwrap_or_else(|| panic!("{preview}"))
        .clone();
    let id = link["name"].as_str().unwrap();
    let read = session
        .call(
            &b,
            "read_result",
            json!({"id": id, "offset": 150_000, "limit": 20_000}),
        )
        .await
        .unwrap();
    assert_eq!(read["content"][0]["text"], "x".repeat(20_000), "{read}");
    assert_eq!(read["structuredContent"]["total"], 200_000);
    let whole = session
        .request(&b, "resources/read", json!({"uri": link["uri"]}))
        .await
        .unwrap();
    assert_eq!(whole["contents"][0]["text"], "x".repeat(200_000));
    // Another session, at either replica, finds nothing.
    let other = Wire::initialize(&b).await;
    let theirs = other
        .call(&b, "read_result", json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(theirs["isError"], true, "{theirs}");
    assert!(
        redis.cli(&[
            "EXISTS",
            &format!("mcpw:session:{}:result:{id}", session.session)
        ]) == "1",
        "kept in Redis under the session"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_vectors_one_replica_computed_serve_the_other() {
    use crate::host::embed::{background, shared_embeddings};
    let dir = tempfile::tempdir().unwrap();
    let redis = Redis::start(dir.path());
    let texts: Vec<String> = [
        "git status: Shows the working tree status",
        "time now: Get the current time",
    ]
    .map(String::from)
    .to_vec();
    let open = || Some(mcpw::team_state::SharedState::open(&redis.url()).unwrap());
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let a = shared_embeddings(&a_dir, open());
    let (pending, computed) = background(&a, &texts).await;
    assert_eq!(pending, Some((0, 2)));
    let key = redis.cli(&["KEYS", "mcpw:vectors:*"]);
    assert!(
        key.contains("@"),
        "vectors kept under the model's identity: {key}"
    );
    assert_eq!(redis.cli(&["HLEN", key.trim()]).trim(), "2");
    // The other replica has no file of its own: Redis answers at once.
    let b = shared_embeddings(&b_dir, open());
    let (pending, shared) = background(&b, &texts).await;
    assert_eq!(pending, None, "no run on the second replica");
    assert_eq!(shared, computed);
}

/// A tool call of a 2026-07-28 client at the wire: `params` with the `_meta`
/// that revision requires (a client that takes elicitation), at `port`.
async fn stateless_call(port: u16, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "wire", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let name = params["name"].as_str().unwrap().to_string();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .json(&body)
        .send()
        .await
        .unwrap();
    wire::message(&response.text().await.unwrap())
}

/// A call of a 2026-07-28 client that its server asks something waits at
/// the replica that took it; the client's retry with the answer may reach
/// the other replica, which opens the state (sealed with the team's key)
/// and passes the answer on; the call ends with it, and the same retry
/// again finds nothing waiting.
#[tokio::test(flavor = "multi_thread")]
async fn a_retry_with_answers_may_reach_either_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let cu = crate::servers::Background::node(&[&servers().conformance_upstream()], &[]);
    let homes = [ConfigDirs::new(), ConfigDirs::new()];
    for h in &homes {
        let settings = json!({"sharedStateKey": "the team's key, thirty-two bytes or more"});
        let config = json!({"mcpServers": {"cu": {"url": cu.url("/mcp")}}, "settings": settings});
        h.user(&config.to_string());
    }
    let direct = ["--exposure", "direct"];
    let (_a, a_port) = replica(MCPW, &homes[0].home(), &redis.url(), &direct);
    let (_b, b_port) = replica(MCPW, &homes[1].home(), &redis.url(), &direct);
    let call = json!({"name": "cu__test_elicitation", "arguments": {"message": "who?"}});
    let asked = stateless_call(a_port, call.clone()).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked:#}");
    let requests = result["inputRequests"].as_object().expect("input requests");
    assert_eq!(requests.len(), 1, "{asked:#}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{asked:#}");
    let answer =
        json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}});
    let mut retry = call.clone();
    retry["inputResponses"] = json!({key: answer});
    retry["requestState"] = result["requestState"].clone();
    let done = stateless_call(b_port, retry.clone()).await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("action=accept") && text.contains("ada"),
        "{done:#}"
    );
    assert_eq!(done["result"]["resultType"], "complete", "{done:#}");
    // One round, one answer: the call no longer waits, at either replica.
    for port in [a_port, b_port] {
        let again = stateless_call(port, retry.clone()).await;
        let error = again["error"]["message"].as_str().unwrap_or_default();
        assert!(error.contains("no longer waiting"), "{again:#}");
    }
}

/// A component server's `wasi:keyvalue` state lives in Redis: one session's
/// calls, at either replica and through haproxy, count on one counter, and
/// the counter is where the replicas share it.
#[tokio::test(flavor = "multi_thread")]
async fn a_components_keyvalue_state_is_the_replicas_own() {
    let component = crate::components::rmcp_http().display().to_string();
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let homes = [ConfigDirs::new(), ConfigDirs::new()];
    let mut replicas = Vec::new();
    for h in &homes {
        h.user(&json!({"mcpServers": {"counter": {"component": component}}}).to_string());
        replicas.push(replica(
            MCPW,
            &h.home(),
            &redis.url(),
            &["--exposure", "direct"],
        ));
    }
    let url = |p: u16| format!("http://127.0.0.1:{p}/mcp");
    let (a, b) = (url(replicas[0].1), url(replicas[1].1));
    let lb = Haproxy::start(root.path(), &[replicas[0].1, replicas[1].1]);
    let session = Wire::initialize(&lb.url()).await;
    let mut said = Vec::new();
    for at in [&a, &b, &a, &lb.url(), &lb.url()] {
        let out = session
            .call(at, "counter__count", json!({"name": "visits"}))
            .await
            .unwrap();
        said.push(text(&out));
    }
    assert_eq!(
        said,
        [
            "visits = 1",
            "visits = 2",
            "visits = 3",
            "visits = 4",
            "visits = 5"
        ]
    );
    let kept = redis.cli(&["HGET", "mcpw:kv:counter:counts", "visits"]);
    assert_eq!(kept, "5");
}
