//! The official SDKs' clients (TypeScript `@modelcontextprotocol/sdk`,
//! Python `mcp`) signing in to `mcpw serve --http` with their own OAuth
//! machinery, against a real OpenID provider (`oidc-provider` 9): each meets
//! the gateway's 401, discovers its protected resource metadata and the
//! provider's, registers itself dynamically or uses a pre-registered client,
//! and is sent to the provider's own login and consent pages (driven by the
//! client scripts as a browser would); with the code back, it connects and
//! sees, and calls, only its person's group's servers.

use crate::common::ConfigDirs;
use crate::servers::{MCPW, Serving, python_script, said, servers};
use mcpw_test_support::free_port;
use mcpw_test_support::oidc::OidcProvider;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Where the provider sends the browser back: nothing listens there, the
/// clients read the redirect instead of following it.
const REDIRECT: &str = "http://127.0.0.1:8932/callback";

/// A gateway serving time and everything to the people of a provider that
/// lets clients register: ada (group `eng`, every server) and bob (group
/// `sales`, time alone); the provider, and the home, kept with it.
struct Gateway {
    _idp: OidcProvider,
    dirs: ConfigDirs,
    _serving: Serving,
    url: String,
}

impl Gateway {
    /// The gateway's resource URI is the address the clients connect to,
    /// as the SDKs require: its port is chosen before it starts (as the
    /// team replicas' are), so that the provider and `serve.oauth` can
    /// name it.
    fn start() -> Gateway {
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}/mcp");
        let idp = OidcProvider::start(
            servers(),
            json!({
                "resource": url,
                "scopes": ["mcp"],
                "registration": true,
                "clients": [{"client_id": "cli", "token_endpoint_auth_method": "none",
                             "grant_types": ["authorization_code", "refresh_token"],
                             "redirect_uris": [REDIRECT]}],
                "accounts": [
                    {"sub": "ada", "email": "ada@example.com", "groups": ["eng"]},
                    {"sub": "bob", "email": "bob@example.com", "groups": ["sales"]},
                ],
            }),
        );
        let dirs = ConfigDirs::new();
        dirs.user(
            &json!({
                "mcpServers": super::signin::time_and_everything(),
                "serve": {"oauth": {
                    "resource": url,
                    "issuers": [{"issuer": idp.issuer()}],
                    "scopes": ["mcp"],
                    "groups": {"eng": {}, "sales": {"servers": ["time"]}},
                }},
            })
            .to_string(),
        );
        let listen = format!("127.0.0.1:{port}");
        let serving = Serving::start(
            MCPW,
            &dirs.home(),
            &["--exposure", "direct", "--http", &listen],
        );
        Gateway {
            _idp: idp,
            dirs,
            _serving: serving,
            url,
        }
    }

    /// What a client script makes of `login`'s sign-in (see
    /// `tests/servers/oauth-client.mjs`): a new client registered for it,
    /// or the pre-registered `cli` when `pre_registered`; it calls
    /// everything's echo and time's clock.
    fn plan(&self, login: &str, pre_registered: bool) -> Value {
        let mut plan = json!({
            "url": self.url, "login": login, "redirect": REDIRECT,
            "calls": [["everything__echo", {"message": "hi"}],
                      ["time__get_current_time", {"timezone": "UTC"}]],
        });
        if pre_registered {
            plan["clientId"] = json!("cli");
        }
        plan
    }

    /// Asserts what `run` (one SDK's client script, given a plan) saw: ada,
    /// through a client it registered, signed in for this resource and sees
    /// and calls both servers; bob, through the pre-registered client, sees
    /// time alone, and everything's tool is not his to call.
    fn check_sign_ins(&self, run: impl Fn(&Value) -> Value) {
        let ada = run(&self.plan("ada", false));
        let sign_in = &ada["signIn"];
        assert_eq!(sign_in["resource"], self.url.as_str(), "{ada:#}");
        assert!(
            sign_in["scope"]
                .as_str()
                .is_some_and(|s| s.split(' ').any(|w| w == "mcp")),
            "{ada:#}"
        );
        assert_eq!(sign_in["registered"], true, "{ada:#}");
        assert_ne!(sign_in["clientId"], "cli", "{ada:#}");
        assert_eq!(seen(&ada), ["everything", "time"], "{ada:#}");
        assert_eq!(ada["calls"][0]["text"], "Echo: hi", "{ada:#}");
        assert_clock(&ada["calls"][1], &ada);

        let bob = run(&self.plan("bob", true));
        let sign_in = &bob["signIn"];
        assert_eq!(sign_in["resource"], self.url.as_str(), "{bob:#}");
        assert_eq!(sign_in["registered"], false, "{bob:#}");
        assert_eq!(sign_in["clientId"], "cli", "{bob:#}");
        assert_eq!(seen(&bob), ["time"], "{bob:#}");
        // Not bob's to call: the gateway knows no such tool for him.
        let echo = &bob["calls"][0];
        assert_eq!(echo["isError"], true, "{bob:#}");
        assert_eq!(
            echo["text"], "tool \"everything__echo\" not found",
            "{bob:#}"
        );
        assert_clock(&bob["calls"][1], &bob);
    }
}

/// The servers whose tools a run listed, by name.
fn seen(run: &Value) -> Vec<String> {
    let tools = run["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools listed: {run:#}"));
    let servers: BTreeSet<String> = tools
        .iter()
        .filter_map(|t| Some(t.as_str()?.split_once("__")?.0.to_string()))
        .collect();
    servers.into_iter().collect()
}

/// Time's clock answered `call`, in UTC.
fn assert_clock(call: &Value, run: &Value) {
    assert_eq!(call["isError"], false, "{run:#}");
    assert!(
        call["text"]
            .as_str()
            .is_some_and(|t| t.contains("\"timezone\": \"UTC\"")),
        "{run:#}"
    );
}

/// The JSON object a client script printed last, or the test fails with
/// what it said.
fn report(out: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let parsed = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok());
    match parsed {
        Some(v) if v.get("error").is_none() => v,
        _ => panic!("the client failed:\n{}", said(out)),
    }
}

#[test]
fn the_typescript_sdk_client_signs_in_with_its_own_flow() {
    let gateway = Gateway::start();
    gateway.check_sign_ins(|plan| {
        let out = mcpw_test_support::bounded("node")
            .arg(servers().oauth_client())
            .arg(plan.to_string())
            .output()
            .unwrap();
        report(&out)
    });
}

#[test]
fn the_python_sdk_client_signs_in_with_its_own_flow() {
    let gateway = Gateway::start();
    let home = gateway.dirs.home();
    gateway.check_sign_ins(|plan| {
        report(&python_script(
            &home,
            "oauth_client.py",
            &[&plan.to_string()],
        ))
    });
}
