//! A sign-in link checked at the person's identity provider
//! (`serve.oauth.issuers[i].signIn`): the gateway, an OpenID client of the
//! issuer its people sign in through, signs the browser in there before it
//! sends it to a per-person server's authorization page, so that the login
//! made there is kept only when the browser is the principal's the link
//! was given to. Two replicas sharing a real Redis, the real OpenID
//! provider (`oidc-provider` 9) and our OAuth server, whose `whoami`
//! answers with the client of the token it was called with
//! (`tests/servers/oauth-server.mjs`).

use crate::gateway::tokens::{call, session, text};
use crate::servers::{Background, MCPW, mcpw_in, servers};
use mcpw_test_support::free_port;
use mcpw_test_support::oidc::{OidcProvider, browse, browse_until};
use mcpw_test_support::team::{Redis, replica_on};
use serde_json::json;

const RESOURCE: &str = "https://gateway.test/mcp";
const GATEWAY: (&str, &str) = ("mcpw", "gateway-secret-0123456789");
const REDIRECT: &str = "http://127.0.0.1:8934/callback";
const KEY: &str = "a team secret only the replicas know";

#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_link_makes_a_login_only_for_the_person_it_was_given_to() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let server = Background::node(&[&servers().oauth_server()], &[]);
    let (idp_port, a_port, b_port) = (free_port(), free_port(), free_port());
    let issuer = format!("http://127.0.0.1:{idp_port}");
    let public = format!("http://127.0.0.1:{b_port}");
    let callback = format!("{public}/oauth/callback");
    let idp = OidcProvider::start(
        servers(),
        json!({
            "port": idp_port, "resource": RESOURCE, "scopes": ["mcp"],
            "clients": [
                {"client_id": "cli", "token_endpoint_auth_method": "none",
                 "grant_types": ["authorization_code"], "redirect_uris": [REDIRECT]},
                {"client_id": GATEWAY.0, "client_secret": GATEWAY.1,
                 "grant_types": ["authorization_code"], "redirect_uris": [&callback]},
            ],
            "accounts": [{"sub": "ada"}, {"sub": "bob"}],
        }),
    );
    let config = json!({
        "mcpServers": {"o": {"url": server.url("/mcp"), "oauth": {"perPerson": true}}},
        "serve": {"publicUrl": public,
                  "oauth": {"resource": RESOURCE, "scopes": ["mcp"], "issuers": [
                      {"issuer": issuer, "signIn": {"clientId": GATEWAY.0,
                                                    "clientSecret": GATEWAY.1}}]}},
        "settings": {"sharedStateKey": KEY}
    })
    .to_string();
    let homes = super::three_homes(&config);
    let direct = ["--exposure", "direct"];
    let _a = replica_on(MCPW, &homes[1].home(), &redis.url(), a_port, &direct);
    let _b = replica_on(MCPW, &homes[2].home(), &redis.url(), b_port, &direct);
    let token = |who: &'static str| idp.user_token("cli", REDIRECT, who, RESOURCE, "openid mcp");
    let ada = token("ada").await;
    let ada_key = format!("oauth:{issuer}#sub:ada");

    // Nobody could list the server: Ada's call of its tool gets a link, to
    // her identity provider first.
    let ada_a = session(&format!("http://127.0.0.1:{a_port}/mcp"), &ada).await;
    let got = call(&ada_a, "o__whoami", json!({})).await;
    let said = text(&got);
    assert_eq!(got.is_error, Some(true), "{said}");
    let link = super::link_in(&said);
    assert!(link.starts_with(&format!("{issuer}/auth?")), "{link}");

    // Forwarded to Bob: he signs in as himself there, and no login is made.
    let (status, page, _) = browse(&link, "bob").await.unwrap();
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("no login was made"), "{page}");
    assert!(super::logged_in(&homes[0], &redis, "o").is_empty());

    // A sign-in begun before Ada is forgotten cannot make a login after.
    let said = text(&call(&ada_a, "o__whoami", json!({})).await);
    let pending = super::link_in(&said);
    let forgot = mcpw_in(&homes[0].home())
        .args(["--shared-state", &redis.url(), "auth", "forget", &ada_key])
        .output()
        .unwrap();
    assert!(forgot.status.success(), "{forgot:?}");
    let (status, page, _) = browse(&pending, "ada").await.unwrap();
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("lapsed"), "{page}");
    assert!(super::logged_in(&homes[0], &redis, "o").is_empty());

    // Ada's own sign-in at her provider, its way on to the server's page
    // passed to Bob: the server's sign-in is finished only in the browser
    // that signed in, and Bob's makes no login.
    let said = text(&call(&ada_a, "o__whoami", json!({})).await);
    let link = super::link_in(&said);
    let onward = browse_until(&link, "ada", &server.url("/authorize"))
        .await
        .unwrap();
    let (status, page, at_page) = browse(&onward, "bob").await.unwrap();
    assert!(at_page.starts_with(&callback), "{at_page}");
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("only in the browser"), "{page}");
    assert!(super::logged_in(&homes[0], &redis, "o").is_empty());

    // Ada's own: her identity provider, then the server's page, then the
    // callback at the other replica keeps the login as hers.
    let said = text(&call(&ada_a, "o__whoami", json!({})).await);
    let link = super::link_in(&said);
    let (status, page, at_page) = browse(&link, "ada").await.unwrap();
    assert!(at_page.starts_with(&callback), "{at_page}");
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!("signed in to o as {ada_key}")),
        "{page}"
    );
    assert_eq!(
        super::logged_in(&homes[0], &redis, "o"),
        std::slice::from_ref(&ada_key)
    );
    let got = call(&ada_a, "o__whoami", json!({})).await;
    assert!(text(&got).starts_with("client "), "{}", text(&got));
    ada_a.cancel().await.unwrap();
}
