//! `mcpw serve --http` as an OAuth protected resource (`serve.oauth`), with
//! a real OpenID provider (`oidc-provider` 9) on loopback: its metadata and
//! challenge; a machine principal (client credentials) and a person (the
//! code flow through the provider's own pages) each seeing their groups'
//! servers, beside a static token; tokens that are expired, for another
//! audience, from an issuer not trusted, badly signed or short of a scope
//! refused with the spec's errors; the signing key rotated while serving.

use crate::common::ConfigDirs;
use crate::servers::{MCPW, Serving, servers};
use mcpw_test_support::oidc::OidcProvider;
use rmcp::ServiceExt;
use rmcp::model::{ClientConfig, Implementation};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

/// The gateway's public resource URI (behind a load balancer, not the
/// address it binds): the audience its tokens must name.
const RESOURCE: &str = "https://gateway.test/mcp";
pub(super) const CI: (&str, &str) = ("ci", "ci-secret");
const DEV_BOT: (&str, &str) = ("dev-bot", "dev-secret");
const SALES: (&str, &str) = ("sales-bot", "sales-secret");
const ADMIN: &str = "admin-static-token-0123456789";
pub(super) const REDIRECT: &str = "http://127.0.0.1:8932/callback";

/// The gateway's own client at the provider, which introspects.
const GATEWAY: (&str, &str) = ("gateway", "gateway-secret");

fn provider(resource: &str, ttl: u64) -> OidcProvider {
    provider_with(json!({"resource": resource, "ttl": ttl}))
}

/// The tests' provider, its `resource`, `ttl` (and any other setting) from
/// `settings`.
pub(super) fn provider_with(settings: Value) -> OidcProvider {
    let machine = |(id, secret): (&str, &str), groups: Value| {
        json!({"client_id": id, "client_secret": secret, "grant_types": ["client_credentials"],
               "claims": {"groups": groups}})
    };
    let mut config = json!({
            "scopes": ["mcp"],
            "clients": [
                machine(CI, json!(["ci"])),
                machine(DEV_BOT, json!(["dev"])),
                machine(SALES, json!(["sales"])),
                {"client_id": "cli", "token_endpoint_auth_method": "none",
                 "grant_types": ["authorization_code"], "redirect_uris": [REDIRECT]},
                {"client_id": GATEWAY.0, "client_secret": GATEWAY.1,
                 "grant_types": ["client_credentials"]},
            ],
            "accounts": [{"sub": "ada", "email": "ada@example.com", "groups": ["eng"]}],
    });
    for (key, value) in settings.as_object().unwrap() {
        config[key] = value.clone();
    }
    OidcProvider::start(servers(), config)
}

/// mcpw serving time and everything to the principals of `trusted`'s
/// issuers (group `ci`: time; `dev`: everything; `eng`: every server) and
/// to a static token that sees every server.
fn serve(trusted: &[&OidcProvider]) -> (ConfigDirs, Serving) {
    let issuers = trusted
        .iter()
        .map(|p| json!({"issuer": p.issuer()}))
        .collect();
    serve_issuers(issuers)
}

/// [`serve`], with `serve.oauth.issuers` as given.
fn serve_issuers(issuers: Vec<Value>) -> (ConfigDirs, Serving) {
    let dirs = ConfigDirs::new();
    let audit = dirs.root.path().join("audit.jsonl");
    dirs.user(
        &json!({
            "mcpServers": time_and_everything(),
            "settings": {"audit": {"path": audit.display().to_string()}},
            "serve": {
                "tokens": [{"name": "admin", "token": ADMIN}],
                "oauth": {
                    "resource": RESOURCE,
                    "issuers": issuers,
                    "scopes": ["mcp"],
                    "groups": {"ci": {"servers": ["time"], "rateLimit": "2/min"}, "eng": {},
                               "dev": {"servers": ["everything"], "tools": ["everything/echo", "everything/get-sum"],
                                       "approve": {"everything/get-*": "all"}}},
                },
            },
        })
        .to_string(),
    );
    let serving = Serving::start(MCPW, &dirs.home(), &["--exposure", "direct"]);
    (dirs, serving)
}

/// `mcpServers` of two real servers: time (Python) and everything (Node).
pub(super) fn time_and_everything() -> Value {
    let s = servers();
    json!({
        "time": {"command": s.python_bin("mcp-server-time")},
        "everything": {"command": "node", "args": [s.everything(), "stdio"]},
    })
}

/// A session of `token`'s at the gateway.
async fn session(
    serving: &Serving,
    token: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ClientConfig> {
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            serving.url(),
        )
        .auth_header(token);
    let client = ClientConfig::new(Default::default(), Implementation::new("test", "1"));
    client
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("a session")
}

/// What a call of `tool` with `args` by `token` answers: whether it is an
/// error, and its text.
async fn called(serving: &Serving, token: &str, tool: &str, args: Value) -> (bool, String) {
    let session = session(serving, token).await;
    let Value::Object(args) = args else {
        unreachable!()
    };
    let request = rmcp::model::CallToolRequestParams::new(tool.to_string()).with_arguments(args);
    let result = session.call_tool(request).await.expect("an answer");
    session.cancel().await.unwrap();
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    (result.is_error == Some(true), text.join("\n"))
}

/// The tools `token`'s session lists.
async fn tools_seen(serving: &Serving, token: &str) -> Vec<String> {
    let session = session(serving, token).await;
    let tools = session.list_all_tools().await.unwrap();
    session.cancel().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

/// The servers whose tools `token`'s session lists, by name.
async fn servers_seen(serving: &Serving, token: &str) -> Vec<String> {
    let seen: std::collections::BTreeSet<String> = tools_seen(serving, token)
        .await
        .iter()
        .filter_map(|t| t.split_once("__").map(|(s, _)| s.to_string()))
        .collect();
    seen.into_iter().collect()
}

/// An `initialize` with `token` (none: no header): its status and
/// `WWW-Authenticate`.
async fn refusal(serving: &Serving, token: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(serving.url())
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        );
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (response.status().as_u16(), challenge)
}

/// Asserts that an `initialize` with `token` is refused with `status`, its
/// challenge saying each of `said`.
async fn refused(serving: &Serving, token: &str, status: u16, said: &[&str]) {
    let (got, challenge) = refusal(serving, Some(token)).await;
    assert_eq!(got, status, "{challenge}");
    for part in said {
        assert!(challenge.contains(part), "{part:?} in {challenge}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn principals_see_their_groups_servers_and_every_bad_token_is_refused() {
    let idp = provider(RESOURCE, 3600);
    let (_dirs, serving) = serve(&[&idp]);
    // The metadata, at the resource's well-known URI and at the root.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let meta: Value = reqwest::get(serving.at(path))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(meta["resource"], RESOURCE, "{meta}");
        assert_eq!(
            meta["authorization_servers"],
            json!([idp.issuer()]),
            "{meta}"
        );
    }
    let (status, challenge) = refusal(&serving, None).await;
    assert_eq!(status, 401);
    let metadata =
        "resource_metadata=\"https://gateway.test/.well-known/oauth-protected-resource/mcp\"";
    assert!(
        challenge.starts_with("Bearer ") && challenge.contains(metadata),
        "{challenge}"
    );

    let ci = idp.client_credentials(CI.0, CI.1, RESOURCE, "mcp").await;
    assert_eq!(servers_seen(&serving, &ci).await, ["time"]);
    let dev = idp
        .client_credentials(DEV_BOT.0, DEV_BOT.1, RESOURCE, "mcp")
        .await;
    assert_eq!(servers_seen(&serving, &dev).await, ["everything"]);
    // Of everything, the tools its group's globs name.
    assert_eq!(
        tools_seen(&serving, &dev).await,
        ["everything__echo", "everything__get-sum"]
    );
    let ada = idp
        .user_token("cli", REDIRECT, "ada", RESOURCE, "openid mcp")
        .await;
    assert_eq!(servers_seen(&serving, &ada).await, ["everything", "time"]);
    assert_eq!(servers_seen(&serving, ADMIN).await, ["everything", "time"]);

    // A group the gateway does not serve, and a token without the scope.
    let sales = idp
        .client_credentials(SALES.0, SALES.1, RESOURCE, "mcp")
        .await;
    refused(&serving, &sales, 403, &["error=\"insufficient_scope\""]).await;
    let unscoped = idp.client_credentials(CI.0, CI.1, RESOURCE, "").await;
    refused(&serving, &unscoped, 403, &["needs scope mcp", metadata]).await;

    // Badly signed: the signature of another token.
    let (head, _) = ci.rsplit_once('.').unwrap();
    let (_, signature) = dev.rsplit_once('.').unwrap();
    let forged = format!("{head}.{signature}");
    let invalid = |why: &str| format!("error=\"invalid_token\", error_description=\"{why}\"");
    refused(
        &serving,
        &forged,
        401,
        &[&invalid("its signature does not verify")],
    )
    .await;

    // Another audience from a trusted issuer, and this audience from an
    // issuer not trusted.
    let elsewhere = provider("https://elsewhere.test/mcp", 3600);
    let stranger = provider(RESOURCE, 3600);
    let (_dirs2, both) = serve(&[&idp, &elsewhere]);
    let other_audience = elsewhere
        .client_credentials(CI.0, CI.1, "https://elsewhere.test/mcp", "mcp")
        .await;
    refused(
        &both,
        &other_audience,
        401,
        &[&invalid("for another resource than this gateway")],
    )
    .await;
    let untrusted = stranger
        .client_credentials(CI.0, CI.1, RESOURCE, "mcp")
        .await;
    refused(
        &serving,
        &untrusted,
        401,
        &[&invalid("not from an issuer this gateway trusts")],
    )
    .await;
    drop(both);

    // The key rotated while serving: a token of the new key is admitted (the
    // keys fetched again for its new key id), one of the dropped key is not.
    idp.rotate_dropping_old().await;
    // The gateway fetches an issuer's keys again at most once a second.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let fresh = idp.client_credentials(CI.0, CI.1, RESOURCE, "mcp").await;
    assert_eq!(servers_seen(&serving, &fresh).await, ["time"]);
    refused(
        &serving,
        &ci,
        401,
        &[&invalid("signed with a key its issuer does not publish")],
    )
    .await;
}

/// A token past its `exp` (a provider whose tokens live one second) is
/// refused as expired, and nothing runs for it.
#[tokio::test(flavor = "multi_thread")]
async fn an_expired_token_is_refused() {
    let idp = provider(RESOURCE, 1);
    let (_dirs, serving) = serve(&[&idp]);
    let token = idp.client_credentials(CI.0, CI.1, RESOURCE, "mcp").await;
    assert_eq!(servers_seen(&serving, &token).await, ["time"]);
    // Time is what is tested: past `exp` and the gateway's 5 s of leeway.
    tokio::time::sleep(std::time::Duration::from_millis(6500)).await;
    refused(
        &serving,
        &token,
        401,
        &["error=\"invalid_token\", error_description=\"expired\""],
    )
    .await;
}

/// An opaque token for the gateway is admitted by asking its issuer (RFC
/// 7662) as the gateway's own client there, and seen as its principal's
/// groups; once revoked, it is refused within the answers' cache time; a
/// made-up one is refused without running anything.
#[tokio::test(flavor = "multi_thread")]
async fn an_opaque_token_is_introspected_and_refused_soon_after_its_revocation() {
    const CACHE_SECONDS: u64 = 2;
    let idp = provider_with(
        json!({"resource": "https://jwt.test/mcp", "opaque_resource": RESOURCE, "ttl": 3600}),
    );
    let (_dirs, serving) = serve_issuers(vec![json!({
        "issuer": idp.issuer(),
        "introspection": {"clientId": GATEWAY.0, "clientSecret": GATEWAY.1,
                          "cacheSeconds": CACHE_SECONDS},
    })]);
    let ci = idp.client_credentials(CI.0, CI.1, RESOURCE, "mcp").await;
    assert!(!ci.contains('.'), "opaque, not a JWT: {ci}");
    assert_eq!(servers_seen(&serving, &ci).await, ["time"]);
    let dev = idp
        .client_credentials(DEV_BOT.0, DEV_BOT.1, RESOURCE, "mcp")
        .await;
    assert_eq!(servers_seen(&serving, &dev).await, ["everything"]);
    let inactive = "error=\"invalid_token\", error_description=\"not active";
    refused(&serving, "made-up-opaque-token", 401, &[inactive]).await;
    let unscoped = idp.client_credentials(CI.0, CI.1, RESOURCE, "").await;
    refused(&serving, &unscoped, 403, &["needs scope mcp"]).await;

    // Revoked: refused once the answer held for it is older than its cache
    // time. Time is what is tested, so the test polls against a deadline.
    idp.revoke(CI, &ci).await;
    let revoked = std::time::Instant::now();
    loop {
        let (status, challenge) = refusal(&serving, Some(&ci)).await;
        if status == 401 {
            assert!(challenge.contains(inactive), "{challenge}");
            break;
        }
        assert!(
            revoked.elapsed().as_millis() < (CACHE_SECONDS * 1000 + 1500) as u128,
            "still admitted {:?} after its revocation",
            revoked.elapsed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(servers_seen(&serving, &dev).await, ["everything"]);
}

/// An issuer whose tokens name another audience for this gateway than its
/// resource URI (Entra ID's name the API's client id) is given it as its
/// `audience`, and its tokens are admitted by it.
#[tokio::test(flavor = "multi_thread")]
async fn an_issuers_own_audience_is_the_one_its_tokens_must_name() {
    const API: &str = "https://api-client-id.test";
    let idp = provider(API, 3600);
    let token = idp.client_credentials(CI.0, CI.1, API, "mcp").await;
    let (_dirs, by_resource) = serve(&[&idp]);
    let (status, _) = refusal(&by_resource, Some(&token)).await;
    assert_eq!(status, 401, "the resource URI is not its audience");
    drop(by_resource);
    let (_dirs, serving) = serve_issuers(vec![json!({"issuer": idp.issuer(), "audience": API})]);
    assert_eq!(servers_seen(&serving, &token).await, ["time"]);
}

/// A group's `rateLimit` is each member's own, counted by principal (a new
/// token of the same machine draws from the same bucket); a group's
/// `approve` asks about its members' calls beside the servers' rules; and
/// `/metrics` counts calls by token name and by groups, never by person.
#[tokio::test(flavor = "multi_thread")]
async fn a_groups_rate_limit_and_approve_hold_for_its_members_and_metrics_name_groups() {
    let idp = provider(RESOURCE, 3600);
    let (dirs, serving) = serve(&[&idp]);
    let clock = ("time__get_current_time", json!({"timezone": "UTC"}));
    let ci = idp.client_credentials(CI.0, CI.1, RESOURCE, "mcp").await;
    for _ in 0..2 {
        let (failed, text) = called(&serving, &ci, clock.0, clock.1.clone()).await;
        assert!(!failed, "{text}");
    }
    let again = idp.client_credentials(CI.0, CI.1, RESOURCE, "mcp").await;
    assert_ne!(again, ci, "a token of its own");
    let (failed, text) = called(&serving, &again, clock.0, clock.1.clone()).await;
    assert!(failed, "{text}");
    assert!(
        text.contains("rate limit reached: serve.oauth.groups.ci.rateLimit allows 2/min"),
        "{text}"
    );
    let ada = idp
        .user_token("cli", REDIRECT, "ada", RESOURCE, "openid mcp")
        .await;
    let (failed, text) = called(&serving, &ada, clock.0, clock.1.clone()).await;
    assert!(!failed, "another principal's bucket: {text}");

    let dev = idp
        .client_credentials(DEV_BOT.0, DEV_BOT.1, RESOURCE, "mcp")
        .await;
    let (failed, text) = called(&serving, &dev, "everything__echo", json!({"message": "hi"})).await;
    assert!(!failed && text == "Echo: hi", "{text}");
    let sum = json!({"a": 1, "b": 2});
    let (failed, text) = called(&serving, &dev, "everything__get-sum", sum.clone()).await;
    assert!(failed, "asked about, and nobody to ask: {text}");
    assert!(text.contains("serve.oauth.groups.dev.approve"), "{text}");
    let (failed, text) = called(&serving, ADMIN, "everything__get-sum", sum).await;
    assert!(
        !failed,
        "the admin token's calls are not asked about: {text}"
    );

    let metrics = reqwest::Client::new()
        .get(serving.at("/metrics"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = |token: &str, groups: &str, server: &str, tool: &str| {
        format!(
            r#"mcpw_client_tool_calls_total{{token="{token}",groups="{groups}",server="{server}",tool="{tool}"}}"#
        )
    };
    for (token, groups, server, tool, n) in [
        ("", "ci", "time", "get_current_time", 2),
        ("", "eng", "time", "get_current_time", 1),
        ("", "dev", "everything", "echo", 1),
        ("admin", "", "everything", "get-sum", 1),
    ] {
        let expected = format!("{} {n}", line(token, groups, server, tool));
        assert!(metrics.contains(&expected), "{expected} in {metrics}");
    }
    assert!(!metrics.contains("ada"), "no person in a label: {metrics}");

    // The audit names each call's principal (a person by email), never a
    // token.
    let trail = std::fs::read_to_string(dirs.root.path().join("audit.jsonl")).unwrap();
    let clients: Vec<String> = trail
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["client"].to_string())
        .collect();
    for who in ["\"ci\"", "\"ada@example.com\"", "\"dev-bot\"", "\"admin\""] {
        assert!(clients.iter().any(|c| c == who), "{who} in {clients:?}");
    }
    for token in [&ci, &again, &ada, &dev] {
        assert!(!trail.contains(token.as_str()), "no token in the audit");
    }
}
