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
use crate::gateway::tokens::{call, session, session_with, text};
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

/// Three homes (the operator's, two replicas') with one config: the OAuth
/// `server` as `o`, for each person's own login, served with `serve`.
fn homes(server: &Background, serve: Value) -> Vec<ConfigDirs> {
    let config = json!({
        "mcpServers": {"o": {"url": server.url("/mcp"), "oauth": {"perPerson": true}}},
        "serve": serve,
        "settings": {"sharedStateKey": KEY}
    })
    .to_string();
    super::three_homes(&config)
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
    let homes = homes(&server, json!({"tokens": tokens}));
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

/// A browser that signs in at `link`: the authorization server (which
/// approves at once) sends it to the gateway's callback, which it then
/// opens; the callback's status and page, and its address.
async fn sign_in_at(link: &str, callback: &str) -> (u16, String, String) {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let sent = browser.get(link).send().await.unwrap();
    let back = sent.headers()["location"].to_str().unwrap().to_string();
    assert!(back.starts_with(callback), "sent back to {back}");
    let page = browser.get(&back).send().await.unwrap();
    (page.status().as_u16(), page.text().await.unwrap(), back)
}

/// A person with no login of their own gets a link to sign in (as a tool
/// error, or by URL elicitation to a client that takes it); the browser
/// comes back to the public address, here the other replica, which keeps
/// the login; the link works once; and the person's next call, at the
/// first replica, goes out with their own new login.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_signs_in_by_the_link_and_it_finishes_at_the_other_replica() {
    use mcpw_test_support::{free_port, team::replica_on};
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let server = Background::node(&[&servers().oauth_server()], &[]);
    let (a_port, b_port) = (free_port(), free_port());
    let public = format!("http://127.0.0.1:{b_port}");
    let tokens = json!([{"name": "carol", "token": CAROL}, {"name": "dave", "token": BOB}]);
    let homes = homes(&server, json!({"tokens": tokens, "publicUrl": public}));
    mcpw(&homes[0], &redis, &["auth", "login", "o"]);
    let direct = ["--exposure", "direct"];
    let _a = replica_on(MCPW, &homes[1].home(), &redis.url(), a_port, &direct);
    let _b = replica_on(MCPW, &homes[2].home(), &redis.url(), b_port, &direct);
    let at_a = format!("http://127.0.0.1:{a_port}/mcp");
    let callback = format!("{public}/oauth/callback");

    // Carol's client takes no URLs: a tool error with the link.
    let carol = session(&at_a, CAROL).await;
    let got = call(&carol, "o__whoami", json!({})).await;
    let said = text(&got);
    assert!(
        got.is_error == Some(true) && !said.contains("client "),
        "{said}"
    );
    let link = super::link_in(&said);
    assert!(link.starts_with(&server.url("/authorize")), "{link}");
    // A prompt of the server's, too, is refused with the link.
    let prompt: rmcp::model::GetPromptRequestParams =
        serde_json::from_value(json!({"name": "o__whoami"})).unwrap();
    let refused = carol.get_prompt(prompt.clone()).await.unwrap_err();
    assert!(refused.to_string().contains("Sign in at "), "{refused}");
    let (status, page, back) = sign_in_at(&link, &callback).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("signed in to o as token:carol"), "{page}");
    let (_, people) = clients(&homes[0], &redis);
    let owners: Vec<&str> = people.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(owners, ["token:carol"]);
    let got = call(&carol, "o__whoami", json!({})).await;
    assert_eq!(text(&got), format!("client {}", people[0].1));
    let got = carol.get_prompt(prompt).await.unwrap();
    let said = serde_json::to_value(&got.messages).unwrap().to_string();
    assert!(said.contains(&format!("client {}", people[0].1)), "{said}");
    // The callback, opened again, finds its sign-in spent.
    let again = reqwest::get(&back).await.unwrap();
    assert_eq!(again.status().as_u16(), 400);
    assert!(again.text().await.unwrap().contains("used already"));

    // Dave's client takes URLs: the link comes as a URL elicitation.
    let dave = session_with(&at_a, BOB, json!({"elicitation": {"url": {}}})).await;
    let args = serde_json::Map::new();
    let request = rmcp::model::CallToolRequestParams::new("o__whoami").with_arguments(args);
    let refused = dave.call_tool(request.clone()).await.unwrap_err();
    let rmcp::ServiceError::McpError(error) = refused else {
        panic!("a JSON-RPC error: {refused:?}")
    };
    assert_eq!(error.code.0, -32042, "{error:?}");
    let asked = &error.data.as_ref().unwrap()["elicitations"][0];
    assert_eq!(asked["mode"], "url");
    let link = asked["url"].as_str().unwrap();
    let (status, page, _) = sign_in_at(link, &callback).await;
    assert!(status == 200 && page.contains("token:dave"), "{page}");
    let got = dave.call_tool(request).await.unwrap();
    assert!(text(&got).starts_with("client "), "{}", text(&got));
    let (_, people) = clients(&homes[0], &redis);
    assert_eq!(people.len(), 2, "{people:?}");
    assert_ne!(people[0].1, people[1].1);
}
