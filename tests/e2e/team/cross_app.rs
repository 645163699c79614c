//! Cross-app access for each person (`"grantType": "id-jag"` with
//! `perPerson`): two replicas sharing a real Redis; the enterprise identity
//! provider a real OpenID provider (`oidc-provider` 9) that signs people in
//! to the gateway and, by token exchange, issues identity assertions
//! (ID-JAG); the upstream's authorization server a second one, which takes
//! an assertion of the first as a JWT bearer grant; and an upstream that
//! takes only the second's JWTs and says whose token reached it
//! (`tests/servers/jwt-upstream.mjs`). The gateway is given access tokens,
//! so it gets each person's ID token by signing them in through its own
//! callback: the sign-in link begins there, and it finishes at the other
//! replica only for the person it was given to.

use crate::gateway::tokens::{Client, call, session, session_with, text};
use crate::servers::{Background, MCPW, servers};
use mcpw_test_support::free_port;
use mcpw_test_support::oidc::{OidcProvider, browse};
use mcpw_test_support::team::{Redis, replica_on};
use serde_json::{Value, json};

const RESOURCE: &str = "https://gateway.test/mcp";
/// The gateway's client at the identity provider: it signs people in, and
/// exchanges their ID tokens.
const GATEWAY: (&str, &str) = ("mcpw", "gateway-secret-0123456789");
/// The gateway's client at the upstream's authorization server.
const AT_CRM: (&str, &str) = ("mcpw-at-crm", "crm-secret-0123456789");
const REDIRECT: &str = "http://127.0.0.1:8933/callback";
const CAROL: &str = "carol-static-token-0123456789";
const KEY: &str = "a team secret only the replicas know";
const EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// A call of the upstream's `whoami`, as `client`: the upstream's answer,
/// or the error's text.
async fn whoami(client: &Client) -> Result<Value, String> {
    let got = call(client, "crm__whoami", json!({})).await;
    let said = text(&got);
    match got.is_error {
        Some(true) => Err(said),
        _ => Ok(serde_json::from_str(&said).unwrap_or_else(|_| panic!("JSON: {said}"))),
    }
}

/// The identity provider, with the gateway's client coming back to
/// `callback`, and assertions for the authorization server `crm_issuer`.
fn identity_provider(port: u16, callback: &str, crm_issuer: &str) -> OidcProvider {
    OidcProvider::start(
        servers(),
        json!({
            "port": port, "resource": RESOURCE, "scopes": ["mcp"],
            "id_jag": {crm_issuer: AT_CRM.0},
            "clients": [
                {"client_id": "cli", "token_endpoint_auth_method": "none",
                 "grant_types": ["authorization_code"], "redirect_uris": [REDIRECT]},
                {"client_id": GATEWAY.0, "client_secret": GATEWAY.1,
                 "grant_types": ["authorization_code", "refresh_token", EXCHANGE],
                 "redirect_uris": [callback]},
            ],
            "accounts": [{"sub": "ada"}, {"sub": "bob"}],
        }),
    )
}

/// Two replicas sharing a Redis, the identity provider, the upstream's
/// authorization server (its tokens living `ttl` seconds) and the upstream,
/// all running while it lives.
struct Team {
    _root: tempfile::TempDir,
    redis: Redis,
    idp: OidcProvider,
    _crm_as: OidcProvider,
    upstream: Background,
    homes: Vec<crate::common::ConfigDirs>,
    replicas: [(mcpw_test_support::serving::Serving, u16); 2],
    idp_issuer: String,
    callback: String,
}

impl Team {
    fn start(ttl: u64) -> Team {
        let root = tempfile::tempdir().unwrap();
        let redis = Redis::start(&root.path().join("redis"));
        let (idp_port, crm_port, a_port, b_port) =
            (free_port(), free_port(), free_port(), free_port());
        let idp_issuer = format!("http://127.0.0.1:{idp_port}");
        let crm_issuer = format!("http://127.0.0.1:{crm_port}");
        let public = format!("http://127.0.0.1:{b_port}");
        let callback = format!("{public}/oauth/callback");
        let upstream = Background::node(&[&servers().jwt_upstream()], &[("ISSUER", &crm_issuer)]);
        let idp = identity_provider(idp_port, &callback, &crm_issuer);
        let crm_as = OidcProvider::start(
            servers(),
            json!({
                "port": crm_port, "resource": upstream.url("/mcp"), "scopes": ["mcp"], "ttl": ttl,
                "jwt_bearer": {"issuer": idp_issuer, "jwks_uri": idp.jwks_uri()},
                "clients": [{"client_id": AT_CRM.0, "client_secret": AT_CRM.1,
                             "grant_types": [JWT_BEARER]}],
            }),
        );
        let config = json!({
            "mcpServers": {"crm": {"url": upstream.url("/mcp"), "oauth": {
                "grantType": "id-jag", "perPerson": true,
                "clientId": AT_CRM.0, "clientSecret": AT_CRM.1,
                "identityProvider": {"issuer": idp_issuer, "clientId": GATEWAY.0,
                                     "clientSecret": GATEWAY.1}}}},
            "serve": {"tokens": [{"name": "carol", "token": CAROL}], "publicUrl": public,
                      "oauth": {"resource": RESOURCE, "issuers": [{"issuer": idp_issuer}],
                                "scopes": ["mcp"]}},
            "settings": {"sharedStateKey": KEY}
        })
        .to_string();
        let homes = super::three_homes(&config);
        let direct = ["--exposure", "direct"];
        let a = replica_on(MCPW, &homes[1].home(), &redis.url(), a_port, &direct);
        let b = replica_on(MCPW, &homes[2].home(), &redis.url(), b_port, &direct);
        Team {
            _root: root,
            redis,
            idp,
            _crm_as: crm_as,
            upstream,
            homes,
            replicas: [(a, a_port), (b, b_port)],
            idp_issuer,
            callback,
        }
    }

    /// The MCP endpoint of replica `i`.
    fn at(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}/mcp", self.replicas[i].1)
    }

    /// `who`'s access token for the gateway.
    async fn token(&self, who: &str) -> String {
        self.idp
            .user_token("cli", REDIRECT, who, RESOURCE, "openid mcp")
            .await
    }

    /// Who is logged in to `crm`.
    fn logged_in(&self) -> Vec<String> {
        super::logged_in(&self.homes[0], &self.redis, "crm")
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_person_signs_in_for_their_own_id_token_and_reaches_the_upstream_as_themselves() {
    let team = Team::start(3600);
    let (idp_issuer, callback, upstream) = (&team.idp_issuer, &team.callback, &team.upstream);
    let (ada, bob) = (team.token("ada").await, team.token("bob").await);
    let ada_key = format!("oauth:{idp_issuer}#sub:ada");

    // Nobody could list the server yet: Ada's call is answered with a link
    // to sign in at the identity provider, as the gateway's client there.
    let ada_a = session(&team.at(0), &ada).await;
    let said = whoami(&ada_a).await.unwrap_err();
    let link = super::link_in(&said);
    let expected = format!("{idp_issuer}/auth?");
    assert!(link.starts_with(&expected), "{link}");
    assert!(link.contains("client_id=mcpw&"), "{link}");

    // Forwarded to Bob, the link makes no login: he is not Ada.
    let (status, page, at_page) = browse(&link, "bob").await.unwrap();
    assert!(at_page.starts_with(callback.as_str()), "{at_page}");
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("no login was made"), "{page}");
    assert!(team.logged_in().is_empty());

    // Ada's own sign-in, finished at the other replica.
    let said = whoami(&ada_a).await.unwrap_err();
    let link = super::link_in(&said);
    let (status, page, _) = browse(&link, "ada").await.unwrap();
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!("signed in to crm as {ada_key}")),
        "{page}"
    );
    assert_eq!(team.logged_in(), std::slice::from_ref(&ada_key));
    // Her next call reaches the upstream as her, with its own
    // authorization server's token for the gateway's client there.
    let first = whoami(&ada_a).await.unwrap();
    assert_eq!(first["sub"], "ada", "{first}");
    assert_eq!(first["aud"], upstream.url("/mcp"), "{first}");
    assert_eq!(first["client_id"], AT_CRM.0, "{first}");
    // The other replica uses the same login.
    let ada_b = session(&team.at(1), &ada).await;
    assert_eq!(whoami(&ada_b).await.unwrap()["token"], first["token"]);

    // Bob's client takes URLs: his link comes by URL elicitation, and his
    // calls, at either replica, reach the upstream as him.
    let bob_b = session_with(&team.at(1), &bob, json!({"elicitation": {"url": {}}})).await;
    let request = rmcp::model::CallToolRequestParams::new("crm__whoami")
        .with_arguments(serde_json::Map::new());
    let refused = bob_b.call_tool(request).await.unwrap_err();
    let rmcp::ServiceError::McpError(error) = refused else {
        panic!("a JSON-RPC error: {refused:?}")
    };
    assert_eq!(error.code.0, -32042, "{error:?}");
    let link = error.data.as_ref().unwrap()["elicitations"][0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, page, _) = browse(&link, "bob").await.unwrap();
    assert_eq!(status, 200, "{page}");
    for i in [0, 1] {
        let bob_here = session(&team.at(i), &bob).await;
        let said = whoami(&bob_here).await.unwrap();
        assert_eq!(said["sub"], "bob", "at replica {i}: {said}");
        assert_ne!(said["token"], first["token"]);
        bob_here.cancel().await.unwrap();
    }

    // Carol came with a token of the gateway's own: the identity provider
    // knows no such person, and she is told so rather than given a link.
    let carol = session(&team.at(0), CAROL).await;
    let said = whoami(&carol).await.unwrap_err();
    assert!(
        said.contains("did not sign in to the gateway there"),
        "{said}"
    );

    let mut both = vec![ada_key.clone(), format!("oauth:{idp_issuer}#sub:bob")];
    both.sort();
    assert_eq!(team.logged_in(), both);
    for client in [ada_a, ada_b, bob_b, carol] {
        client.cancel().await.unwrap();
    }
}

/// The upstream's tokens live a minute, within the margin a kept token
/// must have left: each call of Ada's renews her login, her ID token
/// renewed with the identity provider's refresh token she signed in with
/// and exchanged again, with no new link, at either replica; once she is
/// logged out of the server (`mcpw auth logout crm --principal …`), her
/// next call gives a link.
#[tokio::test(flavor = "multi_thread")]
async fn a_persons_cross_app_login_is_renewed_from_their_identity_providers_refresh_token() {
    let team = Team::start(60);
    let ada = team.token("ada").await;
    let ada_a = session(&team.at(0), &ada).await;
    let said = whoami(&ada_a).await.unwrap_err();
    let link = super::link_in(&said);
    // The provider offers it: the sign-in asks to stay signed in.
    let asks = link.contains("offline_access") && link.contains("prompt=consent");
    assert!(asks, "{link}");
    let (status, page, _) = browse(&link, "ada").await.unwrap();
    assert_eq!(status, 200, "{page}");

    let mut tokens = Vec::new();
    for i in [0, 1, 0] {
        let ada_here = session(&team.at(i), &ada).await;
        let said = whoami(&ada_here)
            .await
            .unwrap_or_else(|e| panic!("at replica {i}: {e}"));
        assert_eq!(said["sub"], "ada", "{said}");
        tokens.push(said["token"].clone());
        ada_here.cancel().await.unwrap();
    }
    assert!(
        tokens[0] != tokens[1] && tokens[1] != tokens[2],
        "renewed each time: {tokens:?}"
    );

    // Logged out of the server, her standing login at the provider goes
    // too: nothing renews behind her back.
    let ada_key = format!("oauth:{}#sub:ada", team.idp_issuer);
    let out = crate::servers::mcpw_in(&team.homes[0].home())
        .args(["--shared-state", &team.redis.url(), "auth", "logout", "crm"])
        .args(["--principal", &ada_key])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = whoami(&ada_a).await.unwrap_err();
    assert!(said.contains("Sign in at "), "{said}");
    ada_a.cancel().await.unwrap();
}
