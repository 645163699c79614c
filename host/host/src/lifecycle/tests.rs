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

/// The config of `servers`, read as from a user file in `home`.
fn config(servers: Value, home: &std::path::Path) -> Config {
    config_of(json!({"mcpServers": servers}), home)
}

/// The config `user`, read as from a user file in `home`.
fn config_of(user: Value, home: &std::path::Path) -> Config {
    let env = Environment::from_pairs([("HOME", home.display().to_string())]);
    let config = crate::config::load(&ConfigSources {
        user_file: None,
        user_value: Some(user),
        project_dir: None,
        env,
    });
    assert!(!config.has_errors(), "{:?}", config.diagnostics);
    config
}

/// A manager over `servers` whose connections go to `fake`; the directory
/// holds its cache.
fn manager(
    servers: Value,
    options: LifecycleOptions,
    fake: &Arc<Fake>,
) -> (Arc<Manager>, tempfile::TempDir) {
    manager_of(json!({"mcpServers": servers}), options, fake)
}

/// As [`manager`], of the whole user config `user`.
fn manager_of(
    user: Value,
    options: LifecycleOptions,
    fake: &Arc<Fake>,
) -> (Arc<Manager>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let env = Environment::from_pairs([("HOME", dir.path().display().to_string())]);
    let config = config_of(user, dir.path());
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
    state_of(m, "s")
}

fn state_of(m: &Manager, name: &str) -> ConnectionState {
    m.server_status(name).unwrap().state
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

#[tokio::test(start_paused = true)]
async fn concurrent_first_calls_share_one_connect() {
    let fake = Arc::new(Fake::default());
    let (m, _dir) = manager(json!({"s": server(json!({}))}), Default::default(), &fake);
    let calls = (0..6).map(|_| call(&m, "echo", json!({})));
    for r in futures::future::join_all(calls).await {
        r.unwrap();
    }
    assert_eq!(
        Fake::count(&fake.opens),
        1,
        "one connection for six first calls"
    );
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn eager_and_keep_alive_connect_at_start_lazy_does_not() {
    let fake = Arc::new(Fake::default());
    let servers = json!({
        "lazy": server(json!({})),
        "eager": server(json!({"lifecycle": "eager"})),
        "kept": server(json!({"lifecycle": "keep-alive"})),
    });
    let (m, _dir) = manager(servers, Default::default(), &fake);
    m.connect_at_start().await;
    let states: Vec<_> = m.status().into_iter().map(|s| (s.name, s.state)).collect();
    assert_eq!(
        states,
        [
            ("lazy".to_string(), ConnectionState::NotConnected),
            ("eager".into(), ConnectionState::Connected),
            ("kept".into(), ConnectionState::Connected)
        ]
    );
    let mut opened = fake.opened.lock().unwrap().clone();
    opened.sort();
    assert_eq!(opened, ["eager", "kept"]);
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_health_check_reconnects_a_keep_alive_server_that_died() {
    let fake = Arc::new(Fake::default());
    let s = server(json!({"lifecycle": "keep-alive"}));
    let (m, _dir) = manager(json!({"s": s}), Default::default(), &fake);
    m.connect_at_start().await;
    let first = m.connection("s", false).await.unwrap();
    fake.kill();
    until("the death to be noticed", || {
        state(&m) != ConnectionState::Connected
    })
    .await;
    m.maintain().await;
    let second = m.connection("s", false).await.unwrap();
    assert!(!Arc::ptr_eq(&first, &second), "a new connection");
    assert_eq!(Fake::count(&fake.opens), 2);
    call(&m, "echo", json!({})).await.unwrap();
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn list_changed_refreshes_the_catalog_and_the_cache() {
    let fake = Arc::new(Fake::default());
    let (m, dir) = manager(json!({"s": server(json!({}))}), Default::default(), &fake);
    call(&m, "echo", json!({})).await.unwrap();
    let mut events = m.subscribe();
    call(&m, "add_tool", json!({"name": "fresh"}))
        .await
        .unwrap();
    loop {
        match events.recv().await.expect("a catalog event") {
            LifecycleEvent::CatalogChanged(s) if s == "s" => break,
            _ => continue,
        }
    }
    let tools = m.server_tools("s").unwrap().unwrap();
    assert!(tools.iter().any(|t| t.name == "fresh"));
    m.flush_cache().await;
    let cached = std::fs::read_to_string(dir.path().join("metadata.json")).unwrap();
    assert!(cached.contains("\"fresh\""), "the cache was updated too");
    call(&m, "fresh", json!({})).await.unwrap();
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn disabled_and_unknown_servers_are_not_connected() {
    let fake = Arc::new(Fake::default());
    let s = server(json!({"enabled": false}));
    let (m, _dir) = manager(json!({"off": s}), Default::default(), &fake);
    assert_eq!(m.status()[0].state, ConnectionState::Disabled);
    let off = m.connect("off", false).await.unwrap_err();
    assert!(matches!(off, LifecycleError::Disabled(_)), "{off}");
    let nope = m.connect("nope", false).await.unwrap_err();
    assert!(matches!(nope, LifecycleError::NotFound(_)), "{nope}");
    assert_eq!(Fake::count(&fake.opens), 0);
}

#[tokio::test(start_paused = true)]
async fn a_reload_keeps_unchanged_servers_and_retires_the_rest() {
    let fake = Arc::new(Fake::default());
    let servers =
        json!({"keep": server(json!({})), "gone": server(json!({})), "edited": server(json!({}))});
    let (m, dir) = manager(servers, Default::default(), &fake);
    let kept = m.connection("keep", false).await.unwrap();
    for s in ["gone", "edited"] {
        m.connect(s, false).await.unwrap();
    }
    let edited = json!({"keep": server(json!({})), "edited": server(json!({"cwd": "/"})),
                        "added": server(json!({}))});
    let mut changed = m.reload(&config(edited, dir.path())).await;
    changed.sort();
    assert_eq!(changed, ["added", "edited", "gone"]);
    let still = m.connection("keep", false).await.unwrap();
    assert!(Arc::ptr_eq(&kept, &still), "unchanged: the same connection");
    until("gone and edited to be closed", || {
        Fake::count(&fake.live) == 1
    })
    .await;
    assert!(m.server_status("gone").is_err());
    assert_ne!(
        state_of(&m, "edited"),
        ConnectionState::Connected,
        "reconnects on use"
    );
    m.connect("added", false).await.unwrap();
    m.connect("edited", false).await.unwrap();
    assert_eq!(Fake::count(&fake.opens), 5);
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_connect_finishing_after_a_reload_is_dropped() {
    let fake = Arc::new(Fake::gated());
    let (m, dir) = manager(json!({"s": server(json!({}))}), Default::default(), &fake);
    let connecting = tokio::spawn({
        let m = m.clone();
        async move { m.connect("s", false).await }
    });
    until("the connect to begin", || fake.opening() == 1).await;
    let edited = config(json!({"s": server(json!({"cwd": "/"}))}), dir.path());
    assert_eq!(m.reload(&edited).await, ["s"]);
    fake.open_gate();
    let err = connecting.await.unwrap().unwrap_err();
    assert!(matches!(err, LifecycleError::Reconfigured(_)), "{err}");
    until("its connection to be closed", || {
        Fake::count(&fake.live) == 0
    })
    .await;
    assert_ne!(
        state(&m),
        ConnectionState::Connected,
        "nothing stored for the new definition"
    );
    m.shutdown().await;
}

/// A per-person server of the fake's (the connector ignores its URL).
fn per_person() -> Value {
    json!({"url": "http://in-process.invalid/mcp", "oauth": {"perPerson": true}})
}

async fn call_as(m: &Manager, who: Who<'_>, tool: &str) -> Result<(), LifecycleError> {
    let timeout = m.call_timeout("s");
    m.with_connection_as("s", who, Need::Any, |c| async move {
        c.call_tool(tool, None, timeout, CallOptions::default())
            .await
            .map(|_| ())
    })
    .await
}

fn owners(fake: &Fake) -> Vec<Option<String>> {
    fake.owners.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn each_person_calls_on_a_connection_of_their_own_and_nobody_on_none() {
    let fake = Arc::new(Fake::default());
    let (m, _dir) = manager(
        json!({"s": per_person()}),
        LifecycleOptions::default(),
        &fake,
    );
    let (alice, bob) = (
        Who::Person("token:alice", None),
        Who::Person("token:bob", None),
    );
    call_as(&m, alice, "echo").await.unwrap();
    call_as(&m, bob, "echo").await.unwrap();
    call_as(&m, alice, "echo").await.unwrap();
    call_as(&m, Who::Shared, "echo").await.unwrap();
    assert_eq!(
        owners(&fake),
        [Some("token:alice".into()), Some("token:bob".into()), None],
        "one connection per person, reused, and the shared one apart"
    );
    let err = call_as(&m, Who::Nobody, "echo").await.unwrap_err();
    assert!(matches!(err, LifecycleError::NoPerson(_)), "{err}");
    assert_eq!(Fake::count(&fake.opens), 3, "nobody's call opens nothing");
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_persons_missing_login_is_theirs_alone() {
    let fake = Arc::new(Fake::default());
    fake.logged_out
        .lock()
        .unwrap()
        .push("token:carol".to_string());
    let (m, _dir) = manager(
        json!({"s": per_person()}),
        LifecycleOptions::default(),
        &fake,
    );
    let err = call_as(&m, Who::Person("token:carol", None), "echo")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LifecycleError::PersonNeedsLogin { owner, .. } if owner == "token:carol"),
        "{err}"
    );
    assert!(err.to_string().contains("--principal token:carol"), "{err}");
    // No backoff for the server, nor for anyone else.
    call_as(&m, Who::Person("token:alice", None), "echo")
        .await
        .expect("another person's call goes on");
    call_as(&m, Who::Shared, "echo")
        .await
        .expect("the shared connection goes on");
    assert_eq!(state(&m), ConnectionState::Connected);
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn at_the_cap_the_least_recently_used_idle_person_makes_room_and_busy_ones_refuse() {
    let fake = Arc::new(Fake::default());
    let options = LifecycleOptions {
        max_people: 2,
        ..Default::default()
    };
    let s = json!({"url": "http://in-process.invalid/mcp", "oauth": {"perPerson": true},
                   "callTimeoutMs": 600_000});
    let (m, _dir) = manager(json!({"s": s}), options, &fake);
    call_as(&m, Who::Person("a", None), "echo").await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    call_as(&m, Who::Person("b", None), "echo").await.unwrap();
    assert_eq!(Fake::count(&fake.live), 2);
    // "a" is the least recently used: "c" takes its place.
    call_as(&m, Who::Person("c", None), "echo").await.unwrap();
    until("a's connection closed", || Fake::count(&fake.live) == 2).await;
    call_as(&m, Who::Person("b", None), "echo").await.unwrap();
    assert_eq!(Fake::count(&fake.opens), 3, "b kept its connection");
    // Both held connections busy: a newcomer is refused at once.
    let hanging = |who: &'static str| {
        let m = m.clone();
        tokio::spawn(async move { call_as(&m, Who::Person(who, None), "hang").await })
    };
    let (hb, hc) = (hanging("b"), hanging("c"));
    // Well inside their call timeout: both calls are under way.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let err = call_as(&m, Who::Person("d", None), "echo")
        .await
        .unwrap_err();
    assert!(
        matches!(err, LifecycleError::PeopleFull { cap: 2, .. }),
        "{err}"
    );
    hb.abort();
    hc.abort();
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_persons_idle_connection_closes_and_a_busy_one_stays() {
    let fake = Arc::new(Fake::default());
    let s = json!({"url": "http://in-process.invalid/mcp", "oauth": {"perPerson": true},
                   "callTimeoutMs": 6_000_000});
    let (m, _dir) = manager(json!({"s": s}), LifecycleOptions::default(), &fake);
    call_as(&m, Who::Person("idle", None), "echo")
        .await
        .unwrap();
    let busy = {
        let m = m.clone();
        tokio::spawn(async move { call_as(&m, Who::Person("busy", None), "hang").await })
    };
    until("both connected", || Fake::count(&fake.live) == 2).await;
    // Past the default idle timeout (10 minutes).
    tokio::time::advance(Duration::from_secs(11 * 60)).await;
    m.maintain().await;
    until("the idle one closed", || Fake::count(&fake.live) == 1).await;
    quiet().await;
    assert_eq!(Fake::count(&fake.live), 1, "the busy one stays");
    busy.abort();
    m.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_person_logged_out_elsewhere_loses_their_open_connection() {
    use rmcp::transport::auth::CredentialStore;
    let fake = Arc::new(Fake::default());
    let user = json!({"mcpServers": {"s": per_person()},
                      "settings": {"credentialStore": "file"}});
    let (m, _dir) = manager_of(user, LifecycleOptions::default(), &fake);
    let url = "http://in-process.invalid/mcp";
    let alices = || crate::auth::ServerCredentials::person(m.vault().clone(), url, "token:alice");
    let login = json!({"client_id": "c",
                       "token_response": {"access_token": "a", "token_type": "bearer"}});
    let login = serde_json::from_value(login).unwrap();
    CredentialStore::save(&alices(), login).await.unwrap();
    let alice = Who::Person("token:alice", None);
    call_as(&m, alice, "echo").await.unwrap();
    // `mcpw auth logout s --principal token:alice`, in another process.
    alices().forget().await.unwrap();
    call_as(&m, alice, "echo")
        .await
        .expect("looked for again only every 30 s");
    tokio::time::advance(Duration::from_secs(31)).await;
    let err = call_as(&m, alice, "echo").await.unwrap_err();
    assert!(
        matches!(err, LifecycleError::PersonNeedsLogin { .. }),
        "{err}"
    );
    until("alice's connection closed", || Fake::count(&fake.live) == 0).await;
    m.shutdown().await;
}
