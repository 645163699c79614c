//! The team sign-in tests' OpenID provider (`oidc-provider` 9 on loopback):
//! its tokens are JWTs that its own JWKS verifies, with the claims the
//! gateway maps to principals, and its signing key rotates while it serves.

use crate::servers::servers;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use mcpw_test_support::oidc::OidcProvider;
use serde_json::{Value, json};

/// The gateway's resource URI, the audience of its tokens.
const RESOURCE: &str = "http://127.0.0.1:8931/mcp";
/// A second resource, whose tokens are opaque.
const OPAQUE: &str = "urn:mcpw:test:opaque";
const REDIRECT: &str = "http://127.0.0.1:8932/callback";
const CI: (&str, &str) = ("ci", "ci-secret");
const TTL: i64 = 90;

fn provider() -> OidcProvider {
    provider_with(json!({}))
}

/// The tests' provider with `extra` keys over its config.
fn provider_with(extra: Value) -> OidcProvider {
    let mut config = json!({
        "resource": RESOURCE,
        "opaque_resource": OPAQUE,
        "scopes": ["mcp", "mcp:admin"],
        "ttl": TTL,
        "clients": [
            {"client_id": CI.0, "client_secret": CI.1, "grant_types": ["client_credentials"],
             "claims": {"groups": ["ci", "deployers"]}},
            {"client_id": "cli", "token_endpoint_auth_method": "none",
             "grant_types": ["authorization_code", "refresh_token"], "redirect_uris": [REDIRECT]},
        ],
        "accounts": [
            {"sub": "ada", "email": "ada@example.com", "groups": ["eng", "ops"]},
        ],
    });
    for (key, value) in extra.as_object().unwrap() {
        config[key] = value.clone();
    }
    OidcProvider::start(servers(), config)
}

/// `token`'s claims, verified as a resource server would: its `kid` found
/// in the provider's JWKS as served now, RS256, the issuer, the audience
/// [`RESOURCE`], and `exp`, `nbf` and `sub` present and in force.
async fn verified(provider: &OidcProvider, token: &str) -> Result<Value, String> {
    let header = decode_header(token).map_err(|e| e.to_string())?;
    assert_eq!(header.typ.as_deref(), Some("at+jwt"), "{header:?}");
    let kid = header.kid.ok_or("no kid in the header")?;
    let jwks: JwkSet = serde_json::from_value(provider.jwks().await).unwrap();
    let jwk = jwks
        .find(&kid)
        .ok_or(format!("kid {kid} is not in the JWKS"))?;
    let key = DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[provider.issuer()]);
    validation.set_audience(&[RESOURCE]);
    validation.set_required_spec_claims(&["exp", "nbf", "iss", "aud", "sub"]);
    validation.validate_nbf = true;
    let data = decode::<Value>(token, &key, &validation).map_err(|e| e.to_string())?;
    Ok(data.claims)
}

fn kid(token: &str) -> String {
    decode_header(token).unwrap().kid.unwrap()
}

/// The endpoints the provider prints when ready are those its discovery
/// document names, where a relying party would find them.
#[tokio::test]
async fn the_endpoints_it_prints_are_its_discovery_documents() {
    let provider = provider();
    let discovery: Value = reqwest::get(provider.discovery_uri())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(discovery["issuer"], provider.issuer());
    assert!(provider.issuer().starts_with("http://127.0.0.1:"));
    for (name, printed) in [
        ("jwks_uri", provider.jwks_uri()),
        ("authorization_endpoint", provider.authorization_endpoint()),
        ("token_endpoint", provider.token_endpoint()),
        ("introspection_endpoint", provider.introspection_endpoint()),
        ("revocation_endpoint", provider.revocation_endpoint()),
    ] {
        assert_eq!(discovery[name], printed, "{name}");
    }
    let methods = discovery["code_challenge_methods_supported"].to_string();
    assert!(methods.contains("S256"), "{methods}");
}

/// A machine's token by client credentials, and a user's by the code flow
/// with PKCE through the provider's own login and consent pages: both JWTs
/// for the resource that its JWKS verifies, each with its principal's claims.
#[tokio::test]
async fn a_machines_and_a_users_tokens_are_jwts_its_jwks_verifies() {
    let provider = provider();
    let machine = provider
        .client_credentials(CI.0, CI.1, RESOURCE, "mcp")
        .await;
    let claims = verified(&provider, &machine).await.unwrap();
    assert_eq!(claims["sub"], "ci", "{claims}");
    assert_eq!(claims["client_id"], "ci", "{claims}");
    assert_eq!(claims["scope"], "mcp", "{claims}");
    assert_eq!(claims["groups"], json!(["ci", "deployers"]), "{claims}");
    assert_eq!(claims["aud"], RESOURCE, "one audience, a string: {claims}");
    let at = |name: &str| claims[name].as_i64().unwrap();
    assert_eq!(at("exp") - at("iat"), TTL, "{claims}");
    assert_eq!(at("nbf"), at("iat"), "{claims}");

    let user = provider
        .user_token("cli", REDIRECT, "ada", RESOURCE, "openid email mcp")
        .await;
    let claims = verified(&provider, &user).await.unwrap();
    assert_eq!(claims["sub"], "ada", "{claims}");
    assert_eq!(claims["client_id"], "cli", "{claims}");
    assert_eq!(claims["email"], "ada@example.com", "{claims}");
    assert_eq!(claims["groups"], json!(["eng", "ops"]), "{claims}");
    assert_eq!(
        claims["scope"], "mcp",
        "only the resource's scopes: {claims}"
    );

    // Signed for the resource, it is no token for another audience.
    let mut elsewhere = Validation::new(Algorithm::RS256);
    elsewhere.set_audience(&["http://127.0.0.1:1/mcp"]);
    let jwks: JwkSet = serde_json::from_value(provider.jwks().await).unwrap();
    let key = DecodingKey::from_jwk(jwks.find(&kid(&user)).unwrap()).unwrap();
    assert!(decode::<Value>(&user, &key, &elsewhere).is_err());
}

/// Someone the provider has no account for is refused at sign-in; a
/// resource it does not know gets no token; a scope it does not allow is
/// not granted.
#[tokio::test]
async fn the_provider_refuses_strangers_unknown_resources_and_scopes() {
    let provider = provider();
    let login = mcpw_test_support::oidc::Login {
        client_id: "cli",
        redirect_uri: REDIRECT,
        login: "mallory",
        resource: RESOURCE,
        scope: "openid mcp",
    };
    let refused = provider.sign_in(&login).await.unwrap_err();
    assert!(refused.contains("refused"), "{refused}");
    let unknown = provider
        .client_credentials_response(CI, "http://127.0.0.1:1/mcp", "mcp")
        .await
        .unwrap_err();
    assert!(unknown.contains("invalid_target"), "{unknown}");
    // A scope the resource does not allow is left out, not refused.
    let token = provider
        .client_credentials(CI.0, CI.1, RESOURCE, "mcp:root mcp:admin")
        .await;
    let claims = verified(&provider, &token).await.unwrap();
    assert_eq!(claims["scope"], "mcp:admin", "{claims}");
}

/// A token issued with `not_before` is not valid yet: a resource server
/// refuses it for its `nbf`.
#[tokio::test]
async fn a_token_may_be_issued_not_yet_valid() {
    let provider = provider_with(json!({"not_before": 600}));
    let token = provider
        .client_credentials(CI.0, CI.1, RESOURCE, "mcp")
        .await;
    let err = verified(&provider, &token).await.unwrap_err();
    assert!(err.contains("ImmatureSignature"), "{err}");
}

/// A rotation signs new tokens with a new key the JWKS lists beside the
/// old, so tokens signed before still verify; a rotation dropping the old
/// keys leaves those tokens with a `kid` the JWKS no longer has.
#[tokio::test]
async fn a_rotated_key_signs_new_tokens_and_the_jwks_follows() {
    let provider = provider();
    let first = provider
        .client_credentials(CI.0, CI.1, RESOURCE, "mcp")
        .await;
    assert_eq!(provider.kids().await, [kid(&first)]);

    let second_kid = provider.rotate().await;
    let second = provider
        .client_credentials(CI.0, CI.1, RESOURCE, "mcp")
        .await;
    assert_eq!(kid(&second), second_kid);
    assert_ne!(second_kid, kid(&first));
    assert_eq!(provider.kids().await, [second_kid.clone(), kid(&first)]);
    verified(&provider, &first).await.unwrap();
    verified(&provider, &second).await.unwrap();
    let user = provider
        .user_token("cli", REDIRECT, "ada", RESOURCE, "openid mcp")
        .await;
    assert_eq!(kid(&user), second_kid, "users' tokens too");

    let third_kid = provider.rotate_dropping_old().await;
    assert_eq!(provider.kids().await, [third_kid.as_str()]);
    for old in [&first, &second] {
        let err = verified(&provider, old).await.unwrap_err();
        assert!(err.contains("is not in the JWKS"), "{err}");
    }
    let third = provider
        .client_credentials(CI.0, CI.1, RESOURCE, "mcp")
        .await;
    assert_eq!(kid(&third), third_kid);
    verified(&provider, &third).await.unwrap();
}

/// Tokens for the second resource are opaque: the provider's introspection
/// tells what they carry until they are revoked.
#[tokio::test]
async fn an_opaque_token_is_introspected_until_revoked() {
    let provider = provider();
    let token = provider.client_credentials(CI.0, CI.1, OPAQUE, "mcp").await;
    assert!(decode_header(&token).is_err(), "not a JWT: {token}");
    let seen = provider.introspect(CI, &token).await;
    assert_eq!(seen["active"], true, "{seen}");
    assert_eq!(seen["aud"], OPAQUE, "{seen}");
    assert_eq!(seen["client_id"], "ci", "{seen}");
    assert_eq!(seen["groups"], json!(["ci", "deployers"]), "{seen}");
    provider.revoke(CI, &token).await;
    let seen = provider.introspect(CI, &token).await;
    assert_eq!(seen, json!({"active": false}));
}
