//! Access tokens from identity providers (`serve.oauth`): a JWT that a
//! configured issuer signed for this gateway's resource URI (RFC 8707),
//! checked against the issuer's published keys (fetched, cached, and fetched
//! again for a key id not seen yet, so that a rotation is followed), its
//! `exp`, `nbf` and scopes; its claims name the principal and its groups,
//! and the groups decide what it sees. An opaque token is checked by asking
//! its issuer (`introspection`).

use crate::config::{GroupPolicy, OAuthIssuer, ServeOAuth};
use crate::gateway::ClientScope;
use crate::host::pipeline::{CallRule, ClientPolicy};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

mod introspection;
mod reading;

pub use introspection::IntrospectionSecrets;
pub(super) use introspection::introspection_secrets;
use reading::{LEEWAY_SECS, audience, get_json, published, words};

/// A key id not seen yet fetches an issuer's keys again at most this often:
/// a rotation is followed within it, and a flood of made-up ids costs one
/// fetch a second.
const REFETCH_AFTER: Duration = Duration::from_secs(1);
/// Keys held this long are fetched again anyway.
const KEYS_TTL: Duration = Duration::from_secs(3600);

/// Why a token is refused: the error of RFC 6750 §3.1 and a description.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// 401 `invalid_token`: expired, not yet valid, for another audience,
    /// from an issuer not configured, badly signed, or unreadable.
    Invalid(String),
    /// 403 `insufficient_scope`: a valid token without what it needs.
    Insufficient(String),
}

/// One issuer's keys, as last fetched, and those decoded so far by key id.
struct Keys {
    set: JwkSet,
    fetched: Instant,
    /// The last fetch tried, whether it brought keys or not.
    tried: Instant,
    decoded: HashMap<String, DecodingKey>,
}

/// What the keys held say of a key id.
enum Lookup {
    /// The key (or why it cannot be used); `due`: the keys are older than
    /// [`KEYS_TTL`] and may be fetched again, and serve while that fails.
    Found {
        key: Result<DecodingKey, Refusal>,
        due: bool,
    },
    /// Not among them; whether they may be fetched again for it.
    Absent { may_fetch: bool },
}

/// Checks access tokens against `serve.oauth`.
pub(super) struct Verifier {
    oauth: ServeOAuth,
    http: reqwest::Client,
    /// Never held across an await: a slow issuer delays only the tokens
    /// that wait for its keys.
    keys: std::sync::Mutex<HashMap<String, Keys>>,
    /// One fetch of an issuer's keys at a time: the requests that want the
    /// same new key wait for it rather than fetch it again, and another
    /// issuer's tokens do not wait at all.
    fetching: std::sync::Mutex<HashMap<String, Arc<Mutex<()>>>>,
    introspector: introspection::Introspector,
}

impl Verifier {
    pub(super) fn new(oauth: ServeOAuth, secrets: IntrospectionSecrets) -> Verifier {
        Verifier {
            oauth,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .expect("a plain HTTP client builds"),
            keys: Default::default(),
            fetching: Default::default(),
            introspector: introspection::Introspector::new(secrets),
        }
    }

    /// The settings it checks against.
    pub(super) fn oauth(&self) -> &ServeOAuth {
        &self.oauth
    }

    /// The client `token` admits: its principal, seeing what its groups
    /// see, with the token kept for servers that take it in exchange.
    pub(super) async fn verify(&self, token: &str) -> Result<ClientScope, Refusal> {
        let admitted = self.verified(token).await?;
        Ok(admitted.presenting(token))
    }

    /// The client `token` admits, when it does.
    async fn verified(&self, token: &str) -> Result<ClientScope, Refusal> {
        let invalid = |why: &str| Refusal::Invalid(why.to_string());
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            return self.verify_opaque(token).await;
        };
        if !asymmetric(header.alg) {
            return Err(invalid(
                "signed with an algorithm this gateway does not accept",
            ));
        }
        let iss = unverified_issuer(token).ok_or_else(|| invalid("no issuer"))?;
        let issuer = self
            .oauth
            .issuers
            .iter()
            .find(|i| i.issuer == iss)
            .ok_or_else(|| invalid("not from an issuer this gateway trusts"))?;
        let key = self.key(issuer, header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&issuer.issuer]);
        validation.set_audience(&[audience(issuer, &self.oauth)]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECS;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| Refusal::Invalid(refused(&e)))?
            .claims;
        if id_token(issuer, &claims) {
            return Err(invalid("an ID token, not an access token"));
        }
        self.check_scopes(&claims)?;
        self.scope_of(issuer, &claims)
    }

    /// A token that is not a JWT: admitted when an issuer that introspects
    /// says it is active, for this gateway, and with the scopes needed.
    async fn verify_opaque(&self, token: &str) -> Result<ClientScope, Refusal> {
        // One issuer at most introspects (the config says so).
        let introspecting = self
            .oauth
            .issuers
            .iter()
            .find(|i| i.introspection.is_some());
        let Some(issuer) = introspecting else {
            return Err(Refusal::Invalid("not a JWT".into()));
        };
        let claims = self
            .introspector
            .claims(&self.http, (issuer, audience(issuer, &self.oauth)), token)
            .await
            .map_err(Refusal::Invalid)?;
        self.check_scopes(&claims)?;
        self.scope_of(issuer, &claims)
    }

    /// Every configured scope is among the token's (`scope`, or `scp`).
    fn check_scopes(&self, claims: &Map<String, Value>) -> Result<(), Refusal> {
        let granted: BTreeSet<&str> = words(claims.get("scope").or(claims.get("scp")));
        let missing: Vec<&str> = self
            .oauth
            .scopes
            .iter()
            .map(String::as_str)
            .filter(|s| !granted.contains(s))
            .collect();
        match missing.is_empty() {
            true => Ok(()),
            false => Err(Refusal::Insufficient(format!(
                "needs scope {}",
                missing.join(" ")
            ))),
        }
    }

    /// The principal (`email`, else `sub`) and the servers its groups see.
    fn scope_of(
        &self,
        issuer: &OAuthIssuer,
        claims: &Map<String, Value>,
    ) -> Result<ClientScope, Refusal> {
        let text = |k: &str| {
            claims
                .get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        // Its sessions, tasks and buckets: a subject of its issuer, or a
        // machine's introspected token's client, never the two mixed.
        let owner = match (text("sub"), text("client_id")) {
            (Some(sub), _) => format!("oauth:{}#sub:{sub}", issuer.issuer),
            (None, Some(client)) => format!("oauth:{}#client:{client}", issuer.issuer),
            (None, None) => return Err(Refusal::Invalid("names no subject".into())),
        };
        let name = text("email")
            .or(text("sub"))
            .or(text("client_id"))
            .unwrap_or_default();
        let mut calls = ClientPolicy {
            owner,
            ..ClientPolicy::default()
        };
        if self.oauth.groups.is_empty() {
            return Ok(ClientScope::admitted_by(name, "oauth", calls));
        }
        let groups = words(claims.get(&issuer.groups_claim));
        let mine: Vec<&GroupPolicy> = self
            .oauth
            .groups
            .iter()
            .filter(|g| groups.contains(g.name.as_str()))
            // A group another issuer's tokens alone may name.
            .filter(|g| {
                g.issuers
                    .as_ref()
                    .is_none_or(|i| i.contains(&issuer.issuer))
            })
            .collect();
        if mine.is_empty() {
            return Err(Refusal::Insufficient(
                "in no group this gateway serves".into(),
            ));
        }
        let names: Vec<&str> = mine.iter().map(|g| g.name.as_str()).collect();
        calls.groups = names.join(",");
        calls.rules = mine.iter().map(|g| group_rule(g)).collect();
        let policy = format!("groups:{}", calls.groups);
        Ok(ClientScope::admitted_by(name, &policy, calls))
    }

    /// The key `kid` of `issuer`: from the keys held, else from its keys
    /// fetched again (not more often than [`REFETCH_AFTER`]); keys past
    /// [`KEYS_TTL`] are fetched again, and serve while their issuer does
    /// not answer.
    async fn key(&self, issuer: &OAuthIssuer, kid: Option<&str>) -> Result<DecodingKey, Refusal> {
        let unpublished =
            || Refusal::Invalid("signed with a key its issuer does not publish".into());
        match self.lookup(issuer, kid) {
            Lookup::Found { key, due: false } => return key,
            Lookup::Absent { may_fetch: false } => return Err(unpublished()),
            _ => {}
        }
        let turn = self.fetch_turn(issuer);
        let _turn = turn.lock().await;
        // A fetch finished while this one waited may have brought it.
        let stale = match self.lookup(issuer, kid) {
            Lookup::Found { key, due: false } => return key,
            Lookup::Absent { may_fetch: false } => return Err(unpublished()),
            Lookup::Found { key, due: true } => Some(key),
            Lookup::Absent { may_fetch: true } => None,
        };
        let fetched = self.fetch(issuer).await;
        self.hold(issuer, fetched.as_ref().ok().cloned());
        if let Err(e) = fetched {
            tracing::warn!(issuer = %issuer.issuer, "cannot fetch the issuer's keys: {e}");
            return stale.unwrap_or_else(|| {
                Err(Refusal::Invalid("its issuer's keys cannot be had".into()))
            });
        }
        match self.lookup(issuer, kid) {
            Lookup::Found { key, .. } => key,
            Lookup::Absent { .. } => Err(unpublished()),
        }
    }

    /// The lock a fetch of `issuer`'s keys takes.
    fn fetch_turn(&self, issuer: &OAuthIssuer) -> Arc<Mutex<()>> {
        let mut turns = self.fetching.lock().expect("fetching");
        turns.entry(issuer.issuer.clone()).or_default().clone()
    }

    /// Keeps `set` as `issuer`'s keys, or, when the fetch failed, that it
    /// was tried now (the keys held, if any, go on serving).
    fn hold(&self, issuer: &OAuthIssuer, set: Option<JwkSet>) {
        let now = Instant::now();
        let mut held = self.keys.lock().expect("keys");
        match (set, held.get_mut(&issuer.issuer)) {
            (None, Some(keys)) => keys.tried = now,
            (set, _) => {
                let fetched = set.is_some();
                let keys = Keys {
                    set: set.unwrap_or(JwkSet { keys: Vec::new() }),
                    fetched: if fetched { now } else { now - KEYS_TTL },
                    tried: now,
                    decoded: HashMap::new(),
                };
                held.insert(issuer.issuer.clone(), keys);
            }
        }
    }

    /// `kid` (none: the issuer's only key) among `issuer`'s keys held,
    /// decoded once.
    fn lookup(&self, issuer: &OAuthIssuer, kid: Option<&str>) -> Lookup {
        let mut held = self.keys.lock().expect("keys");
        let Some(keys) = held.get_mut(&issuer.issuer) else {
            return Lookup::Absent { may_fetch: true };
        };
        let may_fetch = keys.tried.elapsed() >= REFETCH_AFTER;
        let due = may_fetch && keys.fetched.elapsed() > KEYS_TTL;
        let name = kid.unwrap_or_default();
        if let Some(key) = keys.decoded.get(name) {
            let key = Ok(key.clone());
            return Lookup::Found { key, due };
        }
        let jwk = match kid {
            Some(kid) => keys.set.find(kid),
            None => (keys.set.keys.len() == 1).then(|| &keys.set.keys[0]),
        };
        let Some(jwk) = jwk else {
            return Lookup::Absent { may_fetch };
        };
        let key = DecodingKey::from_jwk(jwk)
            .map_err(|_| Refusal::Invalid("its issuer's key cannot be used".into()));
        if let Ok(key) = &key {
            keys.decoded.insert(name.to_string(), key.clone());
        }
        Lookup::Found { key, due }
    }

    /// `issuer`'s published keys (its `jwksUri`, else its OpenID
    /// configuration's `jwks_uri`).
    async fn fetch(&self, issuer: &OAuthIssuer) -> Result<JwkSet, String> {
        let uri = match &issuer.jwks_uri {
            Some(uri) => uri.clone(),
            None => published(&self.http, &issuer.issuer, "jwks_uri")
                .await
                .map_err(|e| format!("the issuer's keys cannot be had: {e}"))?,
        };
        let set = get_json(&self.http, uri)
            .await
            .map_err(|e| format!("the issuer's keys cannot be had: {e}"))?;
        tracing::debug!(issuer = %issuer.issuer, "fetched the issuer's signing keys");
        serde_json::from_value(set).map_err(|e| format!("the issuer's keys cannot be read: {e}"))
    }
}

/// Does a signed token read as an ID token? It carries a `nonce`; or,
/// where the issuer addresses the gateway by a client id (`audience`), an
/// ID token of that client would name it too: an access token then must
/// carry what it grants (`scope`, `scp` or `roles`).
fn id_token(issuer: &OAuthIssuer, claims: &Map<String, Value>) -> bool {
    let grants = ["scope", "scp", "roles"]
        .iter()
        .any(|k| claims.contains_key(*k));
    claims.contains_key("nonce") || (issuer.audience.is_some() && !grants)
}

/// What a group admits and says of its members' calls.
fn group_rule(group: &GroupPolicy) -> CallRule {
    CallRule {
        at: format!("serve.oauth.groups.{}", group.name),
        servers: group.servers.clone(),
        tools: group.tools.clone(),
        approve: group.approve.clone(),
        rate_limit: group.rate_limit,
    }
}

fn asymmetric(alg: Algorithm) -> bool {
    use Algorithm::*;
    matches!(
        alg,
        RS256 | RS384 | RS512 | PS256 | PS384 | PS512 | ES256 | ES384 | EdDSA
    )
}

/// The token's `iss`, read before its signature is checked: only to pick
/// the issuer whose keys then check it.
fn unverified_issuer(token: &str) -> Option<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Map<String, Value> = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(String::from)
}

/// What a client is told of a token that failed its checks.
fn refused(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind::*;
    match e.kind() {
        ExpiredSignature => "expired",
        ImmatureSignature => "not valid yet",
        InvalidAudience => "for another resource than this gateway",
        InvalidIssuer => "from another issuer",
        InvalidSignature => "its signature does not verify",
        MissingRequiredClaim(_) => "lacks a required claim",
        _ => "cannot be read",
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verifier(scopes: &[&str], groups: &[(&str, Option<&[&str]>)]) -> Verifier {
        let issuer = OAuthIssuer {
            issuer: "https://idp.example.com".into(),
            jwks_uri: None,
            groups_claim: "groups".into(),
            audience: None,
            introspection: None,
            sign_in: None,
        };
        Verifier::new(
            ServeOAuth {
                resource: "https://mcp.example.com/mcp".into(),
                issuers: vec![issuer],
                scopes: scopes.iter().map(|s| s.to_string()).collect(),
                groups: groups
                    .iter()
                    .map(|(name, servers)| GroupPolicy {
                        name: name.to_string(),
                        servers: servers.map(|s| s.iter().map(|x| x.to_string()).collect()),
                        tools: None,
                        approve: None,
                        rate_limit: None,
                        issuers: None,
                    })
                    .collect(),
            },
            IntrospectionSecrets::default(),
        )
    }

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_principal_sees_what_its_groups_see_together_and_is_named_by_email_else_sub() {
        let v = verifier(
            &[],
            &[
                ("ci", Some(&["time"])),
                ("dev", Some(&["git", "time"])),
                ("ops", None),
            ],
        );
        let issuer = &v.oauth.issuers[0];
        let scope = |c: Value| v.scope_of(issuer, &claims(c));
        let alice =
            scope(json!({"sub": "u1", "email": "alice@example.com", "groups": ["dev", "ci"]}))
                .unwrap();
        assert_eq!(alice.name(), "alice@example.com");
        let seen: Vec<&String> = alice.servers().unwrap().iter().collect();
        assert_eq!(seen, ["git", "time"]);
        let robot = scope(json!({"sub": "ci-runner", "groups": "ci"})).unwrap();
        assert_eq!((robot.name(), robot.allows("git")), ("ci-runner", false));
        assert!(
            !scope(json!({"sub": "o", "groups": ["ops", "ci"]}))
                .unwrap()
                .is_limited()
        );
        assert_eq!(
            scope(json!({"sub": "x", "groups": ["sales"]})).unwrap_err(),
            Refusal::Insufficient("in no group this gateway serves".into())
        );
        let open = verifier(&[], &[]);
        assert!(
            !open
                .scope_of(&open.oauth.issuers[0], &claims(json!({"sub": "x"})))
                .unwrap()
                .is_limited()
        );
    }

    #[test]
    fn a_principal_is_owned_by_its_issuer_and_subject_and_judged_by_its_groups_rules() {
        let v = verifier(&[], &[("ci", Some(&["time"])), ("dev", Some(&["git"]))]);
        let issuer = &v.oauth.issuers[0];
        let scope = |c: Value| v.scope_of(issuer, &claims(c));
        let robot = scope(json!({"sub": "ci", "groups": ["ci", "dev"]})).unwrap();
        assert_eq!(robot.owner(), "oauth:https://idp.example.com#sub:ci");
        let calls = robot.calls().unwrap();
        let at: Vec<&str> = calls.rules.iter().map(|r| r.at.as_str()).collect();
        assert_eq!(at, ["serve.oauth.groups.ci", "serve.oauth.groups.dev"]);
        assert_eq!(calls.groups, "ci,dev");
        let machine = scope(json!({"client_id": "ci", "groups": ["ci"]})).unwrap();
        assert_eq!(machine.owner(), "oauth:https://idp.example.com#client:ci");
        assert_eq!(
            scope(json!({"sub": 7, "groups": ["ci"]})).unwrap_err(),
            Refusal::Invalid("names no subject".into())
        );
        let open = verifier(&[], &[]);
        let anyone = open
            .scope_of(
                &open.oauth.issuers[0],
                &claims(json!({"sub": "x", "email": "x@y"})),
            )
            .unwrap();
        assert_eq!(
            anyone.calls().unwrap().owner,
            "oauth:https://idp.example.com#sub:x"
        );
    }

    /// A group that names its issuers admits no one by another issuer's
    /// token, whatever its groups claim says.
    #[test]
    fn a_group_of_some_issuers_is_not_named_into_by_another() {
        let mut v = verifier(&[], &[("admins", None), ("eng", Some(&["git"]))]);
        let mut partner = v.oauth.issuers[0].clone();
        partner.issuer = "https://partner.example.com".into();
        v.oauth.issuers.push(partner);
        v.oauth.groups[0].issuers = Some(vec!["https://idp.example.com".into()]);
        let (ours, theirs) = (&v.oauth.issuers[0], &v.oauth.issuers[1]);
        let both = || claims(json!({"sub": "x", "groups": ["admins", "eng"]}));
        let mine = v.scope_of(ours, &both()).unwrap();
        assert_eq!(mine.calls().unwrap().groups, "admins,eng");
        assert!(!mine.is_limited(), "admins see everything");
        let partners = v.scope_of(theirs, &both()).unwrap();
        assert_eq!(partners.calls().unwrap().groups, "eng");
        assert!(!partners.allows("time"), "eng's servers alone");
        let only_admins = claims(json!({"sub": "y", "groups": ["admins"]}));
        assert!(v.scope_of(theirs, &only_admins).is_err());
    }

    #[test]
    fn an_id_token_is_not_an_access_token() {
        let v = verifier(&[], &[]);
        let mut issuer = v.oauth.issuers[0].clone();
        assert!(id_token(
            &issuer,
            &claims(json!({"sub": "a", "nonce": "n"}))
        ));
        assert!(!id_token(&issuer, &claims(json!({"sub": "a"}))));
        issuer.audience = Some("client-id".into());
        assert!(id_token(&issuer, &claims(json!({"sub": "a"}))));
        assert!(!id_token(
            &issuer,
            &claims(json!({"sub": "a", "scp": "mcp"}))
        ));
        assert!(!id_token(
            &issuer,
            &claims(json!({"sub": "a", "roles": ["x"]}))
        ));
    }

    #[test]
    fn every_configured_scope_must_be_granted() {
        let v = verifier(&["mcp", "tools"], &[]);
        assert!(
            v.check_scopes(&claims(json!({"scope": "openid mcp tools"})))
                .is_ok()
        );
        assert!(
            v.check_scopes(&claims(json!({"scp": ["tools", "mcp"]})))
                .is_ok()
        );
        assert_eq!(
            v.check_scopes(&claims(json!({"scope": "mcp"})))
                .unwrap_err(),
            Refusal::Insufficient("needs scope tools".into())
        );
    }

    #[tokio::test]
    async fn a_token_not_signed_by_a_trusted_issuers_key_is_refused_before_any_fetch() {
        use base64::Engine;
        let b64 = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let v = verifier(&[], &[]);
        let token = |alg: &str, iss: &str| {
            format!(
                "{}.{}.c2ln",
                b64(json!({"alg": alg, "typ": "JWT"})),
                b64(json!({"iss": iss, "sub": "x"}))
            )
        };
        let invalid = |why: &str| Err(Refusal::Invalid(why.into()));
        let none = v
            .verify(&token("none", "https://idp.example.com"))
            .await
            .map(|_| ());
        assert!(none.is_err());
        let hs = v
            .verify(&token("HS256", "https://idp.example.com"))
            .await
            .map(|_| ());
        assert_eq!(
            hs,
            invalid("signed with an algorithm this gateway does not accept")
        );
        let other = v
            .verify(&token("RS256", "https://evil.example.com"))
            .await
            .map(|_| ());
        assert_eq!(other, invalid("not from an issuer this gateway trusts"));
        assert_eq!(
            v.verify("not a token").await.map(|_| ()),
            invalid("not a JWT")
        );
        assert!(v.keys.lock().unwrap().is_empty(), "nothing fetched");
    }
}
