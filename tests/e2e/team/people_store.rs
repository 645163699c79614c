//! Each principal's own logins, kept apart in the credential store: sealed
//! per login in a real Redis, or in the file store. `mcpw auth login
//! --principal` logs two principals in to our OAuth server
//! (`tests/servers/oauth-server.mjs`, through a scripted browser), `auth
//! status --json` lists both, and `auth forget` leaves no trace of one (no
//! field, no owner, no token) while the other's login stays whole. A `serve`
//! start forgets the logins of principals the config no longer admits.

use crate::common::ConfigDirs;
use crate::servers::{Background, mcpw_in, servers};
use mcpw_test_support::team::Redis;
use serde_json::{Value, json};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A person signed in through an identity provider.
const ALICE: &str = "oauth:https://idp.example#sub:alice-0001";
/// A machine with a static token.
const BOB: &str = "token:bob-ci";
/// The team's key for shared state.
const KEY: &str = "a team secret only the replicas know";

/// Our OAuth server, a home whose config names it (`o`), and Redis when the
/// logins are kept there.
struct Setup {
    server: Background,
    home: ConfigDirs,
    redis: Option<Redis>,
    _root: tempfile::TempDir,
}

impl Setup {
    /// With the file store, or with Redis.
    fn new(with_redis: bool) -> Setup {
        let root = tempfile::tempdir().unwrap();
        let server = Background::node(&[&servers().oauth_server()], &[]);
        let redis = with_redis.then(|| Redis::start(&root.path().join("redis")));
        let setup = Setup {
            server,
            home: ConfigDirs::new(),
            redis,
            _root: root,
        };
        setup.configure(json!({}));
        setup
    }

    /// The config: server `o`, and `serve` as given.
    fn configure(&self, serve: Value) {
        let mut config = json!({"mcpServers": {"o": {"url": self.server.url("/mcp")}},
                                "serve": serve});
        if self.redis.is_none() {
            config["settings"] = json!({"credentialStore": "file"});
        }
        self.home.user(&config.to_string());
    }

    /// `mcpw ARGS` in the home (with the shared state and its key when
    /// Redis keeps the logins), the scripted browser on hand.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = mcpw_in(&self.home.home());
        if let Some(redis) = &self.redis {
            cmd.args(["--shared-state", &redis.url()])
                .env("MCPW_SHARED_STATE_KEY", KEY);
        }
        let browser = crate::common::workspace().join("tests/conformance/browser.sh");
        cmd.args(args).env("BROWSER", browser).stdin(Stdio::null());
        cmd
    }

    fn mcpw(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", said(&out));
        out
    }

    fn login(&self, owner: &str) {
        let out = self.mcpw(&["auth", "login", "o", "--principal", owner]);
        let line = format!("Logged in to \"o\" for {owner}");
        assert!(said(&out).contains(&line), "{}", said(&out));
    }

    /// `auth status --json` of server `o`.
    fn status(&self) -> Value {
        let out = self.mcpw(&["auth", "status", "--json"]);
        let status: Value = serde_json::from_slice(&out.stdout).unwrap();
        status["o"].clone()
    }

    /// The people's logins `status` lists, by owner.
    fn people(&self) -> Vec<(String, Value)> {
        let status = self.status();
        status["people"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["owner"].as_str().unwrap().to_string(), p.clone()))
            .collect()
    }

    /// The file store's directory.
    fn credentials(&self) -> PathBuf {
        self.home.home().join(".config/mcpw/credentials")
    }
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Everything Redis holds: each key, and each value of it whatever its type.
fn dump(redis: &Redis) -> String {
    let mut all = String::new();
    for key in redis.cli(&["--scan"]).lines() {
        let read: &[&str] = match redis.cli(&["TYPE", key]).as_str() {
            "hash" => &["HGETALL", key],
            "string" => &["GET", key],
            "set" => &["SMEMBERS", key],
            "list" => &["LRANGE", key, "0", "-1"],
            "zset" => &["ZRANGE", key, "0", "-1", "WITHSCORES"],
            "stream" => &["XRANGE", key, "-", "+"],
            other => panic!("key {key} of type {other}"),
        };
        all.push_str(&format!("{key}\n{}\n", redis.cli(read)));
    }
    all
}

/// The text of every file under `dir`, with its path.
fn every_file(dir: &Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        all.push_str(&format!("{}\n", path.display()));
        if path.is_dir() {
            all.push_str(&every_file(&path));
        } else {
            all.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    all
}

/// Both logged in, each with a client of their own; the shared login none.
fn two_logged_in(s: &Setup) -> Vec<(String, Value)> {
    s.login(ALICE);
    s.login(BOB);
    let people = s.people();
    let owners: Vec<&str> = people.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(owners, [ALICE, BOB]);
    for (owner, login) in &people {
        assert_eq!(login["loggedIn"], true, "{owner}: {login}");
        assert_eq!(login["refreshable"], true, "{owner}: {login}");
        assert_eq!(login["scopes"], json!(["mcp:tools"]), "{owner}: {login}");
    }
    assert_ne!(people[0].1["clientId"], people[1].1["clientId"]);
    assert_eq!(s.status()["loggedIn"], false, "no shared login was made");
    people
}

fn forget_alice(s: &Setup) {
    let out = s.mcpw(&["auth", "forget", ALICE]);
    assert!(
        said(&out).contains("Forgot the one login of"),
        "{}",
        said(&out)
    );
    let owners: Vec<String> = s.people().into_iter().map(|(o, _)| o).collect();
    assert_eq!(owners, [BOB]);
}

#[test]
fn in_redis_a_forgotten_principal_leaves_no_trace_and_the_other_stays() {
    let s = Setup::new(true);
    let people = two_logged_in(&s);
    let redis = s.redis.as_ref().unwrap();
    let before = dump(redis);
    let hash = "mcpw:credentials:people";
    let fields = redis.cli(&["HKEYS", hash]);
    assert_eq!(fields.lines().count(), 2, "{before}");
    // Redis sees how many logins there are, not whose nor what.
    let client = |i: usize| people[i].1["clientId"].as_str().unwrap().to_string();
    for secret in [ALICE, "alice-0001", BOB, "bob-ci", &client(0), &client(1)] {
        assert!(!before.contains(secret), "{secret} in Redis:\n{before}");
    }
    assert!(!before.contains("access_token") && !before.contains("refresh_token"));
    let pairs: Vec<(String, String)> = fields
        .lines()
        .map(|f| (f.to_string(), redis.cli(&["HGET", hash, f])))
        .collect();

    forget_alice(&s);
    let after = dump(redis);
    let left = redis.cli(&["HKEYS", hash]);
    assert_eq!(left.lines().count(), 1, "{after}");
    // Bob's field and value are as they were; Alice's are nowhere.
    let (kept, gone): (Vec<_>, Vec<_>) = pairs.into_iter().partition(|(f, _)| f == left.trim());
    assert_eq!(redis.cli(&["HGET", hash, &kept[0].0]), kept[0].1);
    let (field, value) = &gone[0];
    assert!(!after.contains(field) && !after.contains(value), "{after}");
    for secret in [ALICE, "alice-0001", &client(0)] {
        assert!(!after.contains(secret), "{secret} in Redis:\n{after}");
    }
    let bob = &s.people()[0].1;
    assert_eq!(
        (&bob["loggedIn"], &bob["clientId"]),
        (&json!(true), &json!(client(1)))
    );
}

#[test]
fn in_the_file_store_a_forgotten_principal_leaves_no_trace_and_the_other_stays() {
    let s = Setup::new(false);
    two_logged_in(&s);
    let file = s.credentials().join("people.json");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let record = |owner: &str| stored[owner][s.server.url("/mcp")].clone();
    let token = |owner: &str, which: &str| {
        record(owner)["credentials"]["token_response"][which]
            .as_str()
            .unwrap()
            .to_string()
    };
    let alices = [
        ALICE.to_string(),
        "alice-0001".to_string(),
        token(ALICE, "access_token"),
        token(ALICE, "refresh_token"),
        record(ALICE)["credentials"]["client_id"]
            .as_str()
            .unwrap()
            .to_string(),
    ];
    let bob = record(BOB);
    assert!(bob["credentials"]["token_response"]["access_token"].is_string());

    forget_alice(&s);
    let after = every_file(&s.credentials());
    for trace in &alices {
        assert!(!after.contains(trace.as_str()), "{trace} left:\n{after}");
    }
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored[BOB][s.server.url("/mcp")], bob);
    assert!(
        !s.credentials().join("credentials.json").exists(),
        "no shared login"
    );
    let out = s.mcpw(&["auth", "logout", "o", "--principal", BOB]);
    assert!(
        said(&out).contains("Logged out of \"o\" for token:bob-ci"),
        "{}",
        said(&out)
    );
    assert_eq!(s.people(), []);
}

/// A principal given in no form the gateway gives is refused, and the
/// refusal says which forms are.
#[test]
fn a_principal_of_no_known_form_is_refused() {
    let s = Setup::new(false);
    for args in [
        &["auth", "login", "o", "--principal", "alice"][..],
        &["auth", "logout", "o", "--principal", "alice"],
        &["auth", "forget", "alice"],
        &["auth", "status", "--principal", "alice"],
    ] {
        let out = s.command(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = said(&out);
        for form in ["token:<name>", "oauth:<issuer>#sub:<subject>", "#client:"] {
            assert!(err.contains(form), "{args:?}: {err}");
        }
    }
    assert!(!s.credentials().exists());
}

/// `mcpw serve --http` in the home until it has logged `lines`; what it
/// logged.
fn serve_until(s: &Setup, lines: &[&str]) -> String {
    let mut child = s
        .command(&["serve", "--http", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut logged = String::new();
    while !lines.iter().all(|l| logged.contains(l)) {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => logged.push_str(&format!("{line}\n")),
            Err(_) => break,
        }
    }
    // SAFETY: signalling our own child to stop.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    logged
}

#[test]
fn a_serve_start_forgets_the_logins_of_principals_no_longer_admitted() {
    let s = Setup::new(true);
    s.login("token:kept");
    s.login("token:old");
    s.login(ALICE);
    // `old` left serve.tokens, and no issuer vouches for Alice any more.
    let tokens = json!([{"name": "kept", "token": "kept-token-0123456789"}]);
    s.configure(json!({"tokens": tokens}));
    let token_line = "forgot 1 login(s) of token \"old\", no longer in serve.tokens";
    let issuer_line = "forgot 1 login(s) of a principal of issuer https://idp.example, no longer in serve.oauth.issuers";
    let logged = serve_until(&s, &[token_line, issuer_line]);
    assert!(logged.contains(token_line), "{logged}");
    assert!(logged.contains(issuer_line), "{logged}");
    assert!(!logged.contains("alice-0001"), "{logged}");
    let owners: Vec<String> = s.people().into_iter().map(|(o, _)| o).collect();
    assert_eq!(owners, ["token:kept"]);
    let redis = s.redis.as_ref().unwrap();
    assert_eq!(redis.cli(&["HLEN", "mcpw:credentials:people"]), "1");
}
