//! Two replicas sharing Redis behind haproxy (round-robin, no stickiness),
//! both signing in the principals of one real OpenID provider
//! (`oidc-provider` 9): two people in different groups and a CI machine each
//! list and call their groups' tools alone, whichever replica a request
//! reaches; with one replica killed, each session goes on at the other with
//! the same scope and stays its principal's; and a machine whose subject is
//! a static token's name can use neither the token's sessions nor the token
//! the machine's.

use super::Pair;
use super::signin::{CI, REDIRECT, provider_with, time_and_everything};
use super::wire::Wire;
use crate::common::ConfigDirs;
use crate::gateway::serve::text;
use mcpw_test_support::free_port;
use mcpw_test_support::oidc::OidcProvider;
use mcpw_test_support::team::{Haproxy, Redis};
use serde_json::{Value, json};
use std::time::Duration;

/// The static token named `ci`, the CI machine's subject too; it sees
/// everything's tools, the machine time's.
const CI_STATIC: &str = "ci-static-token-0123456789";

/// A replica's config: time and everything, served to the provider's
/// principals by group (`eng`: both servers; `support`: one tool of each;
/// `ci`: time) and to the static token `ci`.
fn config(home: &ConfigDirs, issuer: &str, resource: &str) {
    config_with(home, issuer, resource, json!({"servers": ["time"]}));
}

/// [`config`], the group `ci` as `ci` says.
fn config_with(home: &ConfigDirs, issuer: &str, resource: &str, ci: Value) {
    let groups = json!({
        "eng": {"servers": ["everything", "time"]},
        "support": {"tools": ["everything/echo", "time/get_current_time"]},
        "ci": ci,
    });
    let oauth = json!({"resource": resource, "issuers": [{"issuer": issuer}],
                       "scopes": ["mcp"], "groups": groups});
    let tokens = json!([{"name": "ci", "token": CI_STATIC, "servers": ["everything"]}]);
    let serve = json!({"tokens": tokens, "oauth": oauth});
    home.user(&json!({"mcpServers": time_and_everything(), "serve": serve}).to_string());
}

fn sum() -> Value {
    json!({"a": 2, "b": 3})
}

fn utc() -> Value {
    json!({"timezone": "UTC"})
}

fn to_tokyo() -> Value {
    json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
}

/// A tool call: the tool, its arguments and (when admitted) a part of its
/// answer.
type Call = (&'static str, Value, &'static str);

/// One principal's session, and what its groups let it do.
struct Principal {
    who: &'static str,
    token: String,
    session: Wire,
    /// Its tools, as it first listed them.
    tools: Vec<String>,
    /// Calls its groups admit.
    admitted: Vec<Call>,
    /// Calls of the gateway's tools outside its groups.
    outside: Vec<Call>,
}

impl Principal {
    /// A session begun with `token` at `url`, and its first listing.
    async fn begin(who: &'static str, token: String, url: &str) -> Principal {
        let session = Wire::initialize_as(url, Some(&token)).await;
        let tools = sorted(session.tool_names(url).await);
        Principal {
            who,
            token,
            session,
            tools,
            admitted: Vec::new(),
            outside: Vec::new(),
        }
    }

    /// Asserts, in requests at `url` of the same session, that it lists the
    /// tools it first listed, that its calls are answered, and that each
    /// tool outside its groups is an unknown tool.
    async fn holds(&self, url: &str, when: &str) {
        let who = self.who;
        let listed = self.session.tool_names_result(url).await;
        assert_eq!(listed.map(sorted), Ok(self.tools.clone()), "{who} {when}");
        for (tool, args, said) in &self.admitted {
            let out = self.session.call(url, tool, args.clone()).await;
            let out = out.unwrap_or_else(|e| panic!("{who} {when}, {tool}: {e}"));
            assert_ne!(out["isError"], true, "{who} {when}, {tool}: {out}");
            assert!(text(&out).contains(said), "{who} {when}, {tool}: {out}");
        }
        for (tool, args, _) in &self.outside {
            let out = self.session.call(url, tool, args.clone()).await;
            let out = out.unwrap_or_else(|e| panic!("{who} {when}, {tool}: {e}"));
            assert_eq!(out["isError"], true, "{who} {when}, {tool}: {out}");
            self.unknown(tool, &text(&out), &format!("{who} {when}"));
        }
    }

    /// Asserts that `said` answers `tool` as an unknown tool, suggesting
    /// (as for any unknown name) this principal's own tools alone.
    fn unknown(&self, tool: &str, said: &str, what: &str) {
        let rest = said.strip_prefix(&format!("tool \"{tool}\" not found"));
        let rest = rest.unwrap_or_else(|| panic!("{what}, {tool}: {said}"));
        let suggested = rest
            .strip_prefix("; did you mean ")
            .and_then(|r| r.strip_suffix('?'))
            .map_or(Vec::new(), |r| r.split(", ").collect());
        assert!(rest.is_empty() || !suggested.is_empty(), "{what}: {said}");
        for name in suggested {
            assert!(self.tools.iter().any(|t| t == name), "{what}: {said}");
        }
    }
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

/// The servers of `tools`, by name.
fn servers_of(tools: &[String]) -> Vec<&str> {
    let mut servers: Vec<&str> = tools
        .iter()
        .filter_map(|t| Some(t.split_once("__")?.0))
        .collect();
    servers.dedup();
    servers
}

/// Ada (`eng`) and bob (`support`) signed in through the provider's pages,
/// and the CI machine by client credentials, each in a session begun at
/// `url`; what each first listed is what its groups admit.
async fn sign_in(idp: &OidcProvider, url: &str) -> [Principal; 3] {
    let person = async |login: &str| {
        idp.user_token("cli", REDIRECT, login, url, "openid mcp")
            .await
    };
    let mut ada = Principal::begin("ada", person("ada").await, url).await;
    assert_eq!(
        servers_of(&ada.tools),
        ["everything", "time"],
        "{:?}",
        ada.tools
    );
    ada.admitted = vec![
        ("everything__get-sum", sum(), "The sum of 2 and 3 is 5."),
        ("time__convert_time", to_tokyo(), "Asia/Tokyo"),
    ];
    let mut bob = Principal::begin("bob", person("bob").await, url).await;
    assert_eq!(bob.tools, ["everything__echo", "time__get_current_time"]);
    bob.admitted = vec![
        ("everything__echo", json!({"message": "bob"}), "Echo: bob"),
        ("time__get_current_time", utc(), "\"timezone\": \"UTC\""),
    ];
    bob.outside = vec![
        ("time__convert_time", to_tokyo(), ""),
        ("everything__get-sum", sum(), ""),
    ];
    let machine = idp.client_credentials(CI.0, CI.1, url, "mcp").await;
    let mut ci = Principal::begin("ci", machine, url).await;
    assert_eq!(ci.tools, ["time__convert_time", "time__get_current_time"]);
    ci.admitted = vec![("time__get_current_time", utc(), "\"timezone\": \"UTC\"")];
    ci.outside = vec![("everything__echo", json!({"message": "ci"}), "")];
    [ada, bob, ci]
}

/// Asserts that `client` naming `session`'s session at `url` is answered
/// as for a session that does not exist.
async fn refused(session: &Wire, client: &str, url: &str, what: &str) {
    let answer = session.as_client(client).tool_names_result(url).await;
    match answer {
        Err(e) if e.starts_with("HTTP 404") => {}
        other => panic!("{what}: {other:?}"),
    }
}

/// Asserts that at `url` (`replica`) the static token `ci` cannot use the
/// session of the machine `ci`, nor the machine the token's.
async fn same_name_refused(token: &Wire, machine: &Principal, url: &str, replica: &str) {
    let tokens = format!("the token's session, to the machine, at {replica}");
    let machines = format!("the machine's session, to the token, at {replica}");
    refused(token, &machine.token, url, &tokens).await;
    refused(&machine.session, CI_STATIC, url, &machines).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn principals_keep_their_tools_and_sessions_at_either_replica_and_past_a_kill() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    // haproxy's address is the resource URI, which the provider and each
    // replica's config name before either starts.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let accounts = json!([{"sub": "ada", "email": "ada@example.com", "groups": ["eng"]},
                          {"sub": "bob", "email": "bob@example.com", "groups": ["support"]}]);
    let idp = provider_with(json!({"resource": url, "accounts": accounts}));
    let direct = ["--exposure", "direct"];
    let mut pair = Pair::configured(&redis, |h| config(h, idp.issuer(), &url), &direct);
    let _lb = Haproxy::start_on(root.path(), port, &[pair.a_port, pair.b_port]);
    let (a, b) = pair.urls();

    // Each principal's session through haproxy (alternating replicas), and
    // at each replica by name.
    let principals = sign_in(&idp, &url).await;
    for p in &principals {
        p.holds(&url, "through haproxy").await;
        p.holds(&a, "at A").await;
        p.holds(&b, "at B").await;
    }

    // The machine `ci` and the static token `ci`, each in a session begun
    // at A: neither's session is the other's, at B (which holds neither
    // yet, and reads their owners from Redis) nor at A (which holds both).
    let machine = &principals[2];
    let token = Wire::initialize_as(&a, Some(CI_STATIC)).await;
    let mut owned = Principal::begin("the machine ci", machine.token.clone(), &a).await;
    owned.admitted = machine.admitted.clone();
    owned.outside = machine.outside.clone();
    same_name_refused(&token, &owned, &b, "B").await;
    same_name_refused(&token, &owned, &a, "A").await;
    let token_tools = sorted(token.tool_names(&a).await);
    assert_eq!(servers_of(&token_tools), ["everything"]);

    // SAFETY: killing our own child.
    unsafe { libc::kill(pair.a.pid() as i32, libc::SIGKILL) };
    assert!(pair.a.exited(Duration::from_secs(10)).is_some());
    for p in &principals {
        p.holds(&url, "through haproxy after A was killed").await;
        p.holds(&b, "at B after A was killed").await;
        for other in principals.iter().filter(|o| o.who != p.who) {
            let what = format!("to {}, {}'s session, at B", other.who, p.who);
            refused(&p.session, &other.token, &b, &what).await;
        }
    }
    // The sessions B never held go on there, each its own owner's alone.
    owned.holds(&b, "at B, taken up after A was killed").await;
    assert_eq!(sorted(token.tool_names(&b).await), token_tools);
    same_name_refused(&token, &owned, &b, "B after A was killed").await;
}

/// A group's `rateLimit` is one bucket per principal for every replica: the
/// CI machine's calls through haproxy, alternating replicas, are refused
/// past the limit at either one, with a token of its own as with the first.
#[tokio::test(flavor = "multi_thread")]
async fn a_groups_rate_limit_is_one_bucket_at_every_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let idp = provider_with(json!({"resource": url}));
    let ci = json!({"servers": ["time"], "rateLimit": "3/min"});
    let configure = |h: &ConfigDirs| config_with(h, idp.issuer(), &url, ci.clone());
    let pair = Pair::configured(&redis, configure, &["--exposure", "direct"]);
    let _lb = Haproxy::start_on(root.path(), port, &[pair.a_port, pair.b_port]);
    let (a, b) = pair.urls();
    let machine = idp.client_credentials(CI.0, CI.1, &url, "mcp").await;
    let session = Wire::initialize_as(&url, Some(&machine)).await;
    for n in 0..3 {
        let out = session.call(&url, "time__get_current_time", utc()).await;
        let out = out.unwrap_or_else(|e| panic!("call {n}: {e}"));
        assert_ne!(out["isError"], true, "call {n}: {out}");
    }
    let limited = "rate limit reached: serve.oauth.groups.ci.rateLimit allows 3/min";
    let again = idp.client_credentials(CI.0, CI.1, &url, "mcp").await;
    for (at, token) in [(&a, &machine), (&b, &again)] {
        let other = Wire::initialize_as(at, Some(token)).await;
        let out = other
            .call(at, "time__get_current_time", utc())
            .await
            .unwrap();
        assert_eq!(out["isError"], true, "at {at}: {out}");
        assert!(text(&out).contains(limited), "at {at}: {out}");
    }
}
