//! Token exchange (RFC 8693) toward an upstream that trusts the gateway's
//! own identity provider (`"grantType": "token-exchange"`): two replicas
//! sharing a real Redis, people signed in at the real OpenID provider
//! (`oidc-provider` 9, its token-exchange grant registered with
//! `registerGrantType`), and an upstream that takes only that provider's
//! JWTs for its own resource and says whose token reached it
//! (`tests/servers/jwt-upstream.mjs`). Each person's calls reach it with a
//! token of its own audience issued for that person, never with the token
//! the person gave the gateway; one exchanged token serves both replicas
//! until it expires; a caller with a token of the gateway's own is told it
//! cannot be exchanged; and `mcpw auth forget` leaves no token of theirs.

use crate::gateway::tokens::{Client, call, session, text};
use crate::servers::{Background, MCPW, mcpw_in, servers};
use mcpw_test_support::free_port;
use mcpw_test_support::oidc::OidcProvider;
use mcpw_test_support::team::{Redis, replica};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const RESOURCE: &str = "https://gateway.test/mcp";
const GATEWAY: (&str, &str) = ("gateway", "gateway-secret-0123456789");
const REDIRECT: &str = "http://127.0.0.1:8932/callback";
const CAROL: &str = "carol-static-token-0123456789";
const KEY: &str = "a team secret only the replicas know";
const EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// What the upstream said of the token a call reached it with.
async fn whoami(client: &Client) -> Value {
    let got = call(client, "up__whoami", json!({})).await;
    let said = text(&got);
    assert_ne!(got.is_error, Some(true), "{said}");
    serde_json::from_str(&said).unwrap_or_else(|_| panic!("JSON: {said}"))
}

fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_callers_token_is_exchanged_for_the_upstreams_own_at_every_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let provider_port = free_port();
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let upstream = Background::node(&[&servers().jwt_upstream()], &[("ISSUER", &issuer)]);
    // A server that trusts another issuer, though the provider would issue
    // tokens for it: no caller's token is exchanged for it.
    let elsewhere = "http://127.0.0.1:9";
    let other = Background::node(&[&servers().jwt_upstream()], &[("ISSUER", elsewhere)]);
    let provider = OidcProvider::start(
        servers(),
        json!({
            "port": provider_port, "resource": RESOURCE, "resources": [upstream.url("/mcp"), other.url("/mcp")],
            "exchange": true, "scopes": ["mcp"],
            "clients": [
                {"client_id": "cli", "token_endpoint_auth_method": "none",
                 "grant_types": ["authorization_code"], "redirect_uris": [REDIRECT]},
                {"client_id": GATEWAY.0, "client_secret": GATEWAY.1, "grant_types": [EXCHANGE]},
            ],
            "accounts": [{"sub": "ada", "email": "ada@example.com"},
                         {"sub": "bob", "email": "bob@example.com"}],
        }),
    );
    let exchange = json!({"grantType": "token-exchange", "clientId": GATEWAY.0,
                          "clientSecret": GATEWAY.1});
    let config = json!({
        "mcpServers": {
            "up": {"url": upstream.url("/mcp"), "oauth": exchange.clone()},
            "other": {"url": other.url("/mcp"), "oauth": exchange}},
        "serve": {"tokens": [{"name": "carol", "token": CAROL}],
                  "oauth": {"resource": RESOURCE, "issuers": [{"issuer": issuer}], "scopes": ["mcp"]}},
        "settings": {"sharedStateKey": KEY}
    })
    .to_string();
    let homes = super::three_homes(&config);
    let direct = ["--exposure", "direct"];
    let (_a, a_port) = replica(MCPW, &homes[1].home(), &redis.url(), &direct);
    let (_b, b_port) = replica(MCPW, &homes[2].home(), &redis.url(), &direct);
    let at = |port: u16| format!("http://127.0.0.1:{port}/mcp");
    let token =
        |who: &'static str| provider.user_token("cli", REDIRECT, who, RESOURCE, "openid email mcp");
    let (ada, bob) = (token("ada").await, token("bob").await);

    // Nobody could list the server (no shared login): Ada's list lists it as hers.
    let ada_a = session(&at(a_port), &ada).await;
    let names: Vec<String> = ada_a
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"up__whoami".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("other__")), "{names:?}");

    let first = whoami(&ada_a).await;
    assert_eq!(first["sub"], "ada", "{first}");
    assert_eq!(first["aud"], upstream.url("/mcp"), "{first}");
    assert_eq!(
        first["act"]["sub"], GATEWAY.0,
        "the gateway acts for Ada: {first}"
    );
    assert_ne!(
        first["token"],
        digest(&ada),
        "Ada's own token never goes upstream"
    );
    for port in [a_port, b_port] {
        let bob_here = session(&at(port), &bob).await;
        let said = whoami(&bob_here).await;
        assert_eq!(said["sub"], "bob", "at {port}: {said}");
        assert_ne!(said["token"], digest(&bob));
        assert_ne!(said["token"], first["token"]);
        bob_here.cancel().await.unwrap();
    }
    // The other replica uses the token exchanged at the first while it lasts.
    let ada_b = session(&at(b_port), &ada).await;
    let again = whoami(&ada_b).await;
    assert_eq!(again["token"], first["token"], "{again}");

    // Carol came with a token of the gateway's own: nothing to exchange.
    let carol = session(&at(a_port), CAROL).await;
    let got = call(&carol, "up__whoami", json!({})).await;
    let said = text(&got);
    assert!(
        got.is_error == Some(true) && said.contains("no issuer exchanges"),
        "{said}"
    );

    let ada_key = format!("oauth:{issuer}#sub:ada");
    let mut held = super::logged_in(&homes[0], &redis, "up");
    held.sort();
    assert_eq!(held, [ada_key.clone(), format!("oauth:{issuer}#sub:bob")]);
    let forgot = mcpw_in(&homes[0].home())
        .args(["--shared-state", &redis.url(), "auth", "forget", &ada_key])
        .output()
        .unwrap();
    assert!(
        forgot.status.success(),
        "{}",
        String::from_utf8_lossy(&forgot.stderr)
    );
    assert_eq!(
        super::logged_in(&homes[0], &redis, "up"),
        [format!("oauth:{issuer}#sub:bob")]
    );
    for client in [ada_a, ada_b, carol] {
        client.cancel().await.unwrap();
    }
}
