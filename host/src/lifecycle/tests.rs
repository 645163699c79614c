//! The lifecycle on tokio's paused clock, against servers in this process: no
//! processes, no sockets, and no sleeping to see that nothing happens. A sleep
//! on the paused clock returns only once every other task waits, so what
//! would have happened by then has.

mod fake;

use super::*;
use crate::config::ConfigSources;
use crate::upstream::CallOptions;
use fake::{Fake, FakeConnector};
use serde_json::json;

/// A manager over `servers` whose connections go to `fake`; the directory
/// holds its cache.
fn manager(
    servers: Value,
    options: LifecycleOptions,
    fake: &Arc<Fake>,
) -> (Arc<Manager>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let env = Environment::from_pairs([("HOME", dir.path().display().to_string())]);
    let config = crate::config::load(&ConfigSources {
        user_file: None,
        user_value: Some(json!({"mcpServers": servers})),
        project_dir: None,
        env: env.clone(),
    });
    assert!(!config.has_errors(), "{:?}", config.diagnostics);
    let cache = MetadataCache::new(dir.path().join("metadata.json"));
    let connector = Arc::new(FakeConnector(fake.clone()));
    let manager = Manager::with_connector(&config, env, cache, options, connector);
    (manager, dir)
}

/// A server entry; the fake connector never runs its command.
fn server(extra: Value) -> Value {
    let mut v = json!({"command": "in-process"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

async fn call(m: &Manager, tool: &str, args: Value) -> Result<(), LifecycleError> {
    let timeout = m.call_timeout("s");
    let args = args.as_object().cloned();
    m.with_connection("s", |c| async move {
        c.call_tool(tool, args, timeout, CallOptions::default())
            .await
            .map(|_| ())
    })
    .await
}

/// Waits, on the paused clock, until `cond` holds.
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("{what} never happened");
}

/// Long enough for anything pending to have run.
async fn quiet() {
    tokio::time::sleep(Duration::from_secs(3600)).await;
}

fn state(m: &Manager) -> ConnectionState {
    m.server_status("s").unwrap().state
}

#[tokio::test(start_paused = true)]
async fn a_backoff_ends_and_an_explicit_connect_skips_it() {
    let fake = Arc::new(Fake::default());
    fake.fail.store(true, Ordering::SeqCst);
    let options = LifecycleOptions {
        backoff: Duration::from_secs(60),
        ..Default::default()
    };
    let (m, _dir) = manager(json!({"s": server(json!({}))}), options, &fake);
    let err = m.connect("s", false).await.unwrap_err();
    assert!(matches!(err, LifecycleError::Connect { .. }), "{err}");
    tokio::time::advance(Duration::from_secs(59)).await;
    let err = m.connect("s", false).await.unwrap_err();
    assert!(matches!(err, LifecycleError::Backoff { .. }), "{err}");
    assert_eq!(Fake::count(&fake.opens), 1, "no attempt during the backoff");
    m.connect("s", true).await.unwrap_err();
    assert_eq!(Fake::count(&fake.opens), 2, "an explicit connect tries");
    tokio::time::advance(Duration::from_secs(61)).await;
    fake.fail.store(false, Ordering::SeqCst);
    m.connect("s", false)
        .await
        .expect("after the backoff it tries again");
    assert_eq!(Fake::count(&fake.opens), 3);
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn idle_servers_close_unless_a_call_is_in_flight() {
    let fake = Arc::new(Fake::default());
    // 0.002 minutes = 120 ms.
    let s = server(json!({"idleTimeout": 0.002, "callTimeoutMs": 3000}));
    let (m, _dir) = manager(json!({"s": s}), LifecycleOptions::default(), &fake);
    call(&m, "echo", json!({})).await.unwrap();
    // A long call in flight keeps it open past the idle timeout.
    let hanging = tokio::spawn({
        let m = m.clone();
        async move { call(&m, "hang", json!({})).await }
    });
    until("the call to be in flight", || m.in_flight("s") == 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    m.maintain().await;
    assert_eq!(state(&m), ConnectionState::Connected);
    assert!(hanging.await.unwrap().is_err(), "the hang times out");
    // Quiet for longer than the idle timeout: closed, its tools still known.
    tokio::time::sleep(Duration::from_millis(200)).await;
    m.maintain().await;
    let status = m.server_status("s").unwrap();
    assert_eq!(status.state, ConnectionState::Cached);
    assert!(status.tool_count > 0);
    until("the server to end", || Fake::count(&fake.live) == 0).await;
    // The next call connects again.
    call(&m, "echo", json!({})).await.unwrap();
    assert_eq!(Fake::count(&fake.opens), 2);
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_abandoned_call_does_not_keep_the_server_busy() {
    let fake = Arc::new(Fake::default());
    let s = server(json!({"idleTimeout": 0.002}));
    let (m, _dir) = manager(json!({"s": s}), LifecycleOptions::default(), &fake);
    // A caller that gives up drops the call mid-flight.
    let hanging = tokio::spawn({
        let m = m.clone();
        async move { call(&m, "hang", json!({})).await }
    });
    until("the call to be in flight", || m.in_flight("s") == 1).await;
    hanging.abort();
    assert!(hanging.await.unwrap_err().is_cancelled());
    assert_eq!(m.in_flight("s"), 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    m.maintain().await;
    assert_eq!(state(&m), ConnectionState::Cached);
    m.shutdown().await;
}

fn keep_alive(ping_timeout_ms: u64) -> LifecycleOptions {
    LifecycleOptions {
        ping_timeout: Duration::from_millis(ping_timeout_ms),
        ..Default::default()
    }
}

#[tokio::test(start_paused = true)]
async fn the_health_check_replaces_a_hung_keep_alive_server() {
    let fake = Arc::new(Fake::default());
    let s = server(json!({"lifecycle": "keep-alive"}));
    let (m, _dir) = manager(json!({"s": s}), keep_alive(300), &fake);
    m.connect_at_start().await;
    // Pings go to servers quiet for longer than the ping timeout; one that
    // answers is left alone.
    tokio::time::sleep(Duration::from_millis(350)).await;
    m.maintain().await;
    assert_eq!(Fake::count(&fake.opens), 1);
    // One that does not is replaced, and the hung connection closed.
    fake.freeze(true);
    m.maintain().await;
    assert_eq!(Fake::count(&fake.opens), 2, "reconnected");
    assert_eq!(state(&m), ConnectionState::Connected);
    fake.freeze(false);
    until("the hung one to be closed", || Fake::count(&fake.live) == 1).await;
    call(&m, "echo", json!({})).await.unwrap();
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_keep_alive_server_busy_with_a_call_is_not_pinged() {
    let fake = Arc::new(Fake::default());
    let s = server(json!({"lifecycle": "keep-alive", "callTimeoutMs": 60000}));
    let (m, _dir) = manager(json!({"s": s}), keep_alive(300), &fake);
    m.connect_at_start().await;
    let hanging = tokio::spawn({
        let m = m.clone();
        async move { call(&m, "hang", json!({})).await }
    });
    until("the call to be in flight", || m.in_flight("s") == 1).await;
    // Busy and silent, as a single-threaded server mid-call would be.
    fake.freeze(true);
    tokio::time::sleep(Duration::from_millis(350)).await;
    m.maintain().await;
    assert_eq!(Fake::count(&fake.opens), 1, "not replaced");
    hanging.abort();
    m.shutdown().await;
}

/// A server that floods `list_changed` gets a few relists, not one per
/// notification: each relist waits for the one before it, so a queue of them
/// would keep a server busy listing long after it stopped changing.
#[tokio::test(start_paused = true)]
async fn a_flood_of_list_changed_costs_a_few_relists() {
    let fake = Arc::new(Fake::default());
    *fake.list_delay.lock().unwrap() = Duration::from_millis(20);
    let (m, _dir) = manager(json!({"s": server(json!({}))}), Default::default(), &fake);
    call(&m, "echo", json!({})).await.unwrap();
    let before = Fake::count(&fake.lists);
    call(&m, "flood", json!({"count": 500})).await.unwrap();
    // A last real change, seen once the relists reach it.
    call(&m, "add_tool", json!({"name": "fresh"}))
        .await
        .unwrap();
    let fresh = || {
        m.server_tools("s")
            .unwrap()
            .is_some_and(|t| t.iter().any(|t| t.name == "fresh"))
    };
    until("the new tool to show", fresh).await;
    // Queued relists would go on at one per 20 ms; none may be left to run.
    quiet().await;
    let relists = Fake::count(&fake.lists) - before;
    assert!(relists <= 6, "501 list_changed cost {relists} relists");
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn start_up_connects_a_bounded_number_at_once() {
    let fake = Arc::new(Fake::gated());
    let five: serde_json::Map<String, Value> = (0..5)
        .map(|i| (format!("s{i}"), server(json!({"lifecycle": "eager"}))))
        .collect();
    let options = LifecycleOptions {
        max_parallel_connects: 2,
        ..Default::default()
    };
    let (m, _dir) = manager(Value::Object(five), options, &fake);
    let starting = tokio::spawn({
        let m = m.clone();
        async move { m.connect_at_start().await }
    });
    quiet().await;
    assert_eq!(fake.opening(), 2, "two connect at once, and no more");
    fake.open_gate();
    starting.await.unwrap();
    assert_eq!(Fake::count(&fake.opens), 5);
    assert_eq!(Fake::count(&fake.most_opening), 2);
    assert!(
        m.status()
            .iter()
            .all(|s| s.state == ConnectionState::Connected)
    );
    m.shutdown().await;
}
