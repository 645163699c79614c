//! Each person's own login upstream (`oauth.perPerson`): two replicas of
//! `mcpw serve --http` sharing a real Redis, three people with tokens of
//! their own, and our OAuth server (`tests/servers/oauth-server.mjs`), whose
//! `whoami` answers with the client of the token it was called with. Every
//! login registers a client of its own there, so the client a call reaches
//! the server as says whose login it went out with: Alice's calls carry
//! Alice's, Bob's Bob's, at either replica, and never the shared login the
//! operator made for the listing; Carol, with no login, is told how to
//! make one, and nobody else's is used for her.

use crate::common::ConfigDirs;
use crate::gateway::tokens::{call, session, text};
use crate::servers::{Background, MCPW, mcpw_in, servers};
use mcpw_test_support::team::{Redis, replica};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789";
const CAROL: &str = "carol-token-0123456789";
const KEY: &str = "a team secret only the replicas know";

/// `mcpw ARGS` at `home`, sharing `redis`, the scripted browser on hand.
fn mcpw(home: &ConfigDirs, redis: &Redis, args: &[&str]) -> std::process::Output {
    let browser = crate::common::workspace().join("tests/conformance/browser.sh");
    let out = mcpw_in(&home.home())
        .args(["--shared-state", &redis.url()])
        .args(args)
        .env("BROWSER", browser)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{args:?}: {said}");
    out
}

/// The client each login of server `o` was made as: the shared one, and
/// each person's by owner.
fn clients(home: &ConfigDirs, redis: &Redis) -> (String, Vec<(String, String)>) {
    let out = mcpw(home, redis, &["auth", "status", "--json"]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let o = &status["o"];
    let id = |v: &Value| v["clientId"].as_str().unwrap().to_string();
    let people = o["people"].as_array().unwrap();
    let people = people
        .iter()
        .map(|p| (p["owner"].as_str().unwrap().to_string(), id(p)))
        .collect();
    (id(o), people)
}

#[tokio::test(flavor = "multi_thread")]
async fn each_persons_calls_go_out_with_their_own_login_at_every_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let server = Background::node(&[&servers().oauth_server()], &[]);
    let tokens = json!([{"name": "alice", "token": ALICE}, {"name": "bob", "token": BOB},
                        {"name": "carol", "token": CAROL}]);
    let config = json!({
        "mcpServers": {"o": {"url": server.url("/mcp"), "oauth": {"perPerson": true}}},
        "serve": {"tokens": tokens},
        "settings": {"sharedStateKey": KEY}
    })
    .to_string();
    let homes: Vec<ConfigDirs> = (0..3).map(|_| ConfigDirs::new()).collect();
    for h in &homes {
        h.user(&config);
    }
    // The operator's shared login lists the server; Alice and Bob are
    // logged in for themselves.
    mcpw(&homes[0], &redis, &["auth", "login", "o"]);
    for who in ["token:alice", "token:bob"] {
        mcpw(
            &homes[0],
            &redis,
            &["auth", "login", "o", "--principal", who],
        );
    }
    let (shared, people) = clients(&homes[0], &redis);
    let of = |owner: &str| {
        let found = people.iter().find(|(o, _)| o == owner);
        found
            .unwrap_or_else(|| panic!("{owner} in {people:?}"))
            .1
            .clone()
    };
    let (alice, bob) = (of("token:alice"), of("token:bob"));
    assert!(
        shared != alice && alice != bob && shared != bob,
        "three logins"
    );

    let direct = ["--exposure", "direct"];
    let (_a, a_port) = replica(MCPW, &homes[1].home(), &redis.url(), &direct);
    let (_b, b_port) = replica(MCPW, &homes[2].home(), &redis.url(), &direct);
    for port in [a_port, b_port] {
        let url = format!("http://127.0.0.1:{port}/mcp");
        for (token, client) in [(ALICE, &alice), (BOB, &bob), (ALICE, &alice)] {
            let person = session(&url, token).await;
            let got = call(&person, "o__whoami", json!({})).await;
            assert_eq!(text(&got), format!("client {client}"), "at {port}");
            person.cancel().await.unwrap();
        }
        let carol = session(&url, CAROL).await;
        let got = call(&carol, "o__whoami", json!({})).await;
        let said = text(&got);
        assert!(got.is_error == Some(true), "{said}");
        assert!(
            said.contains("--principal token:carol") && !said.contains("client "),
            "Carol is told how to log in, and no one's login is used: {said}"
        );
        carol.cancel().await.unwrap();
    }
}
