//! Opaque access tokens, checked by asking their issuer (RFC 7662) as the
//! gateway's own client there. An answer is reused for at most the issuer's
//! `cacheSeconds` (and never past the token's `exp`), so a revoked token is
//! refused at most that long after its revocation; a token is held only as
//! its digest. An issuer that cannot be reached gets no answer cached.

use super::reading::{LEEWAY_SECS, published, words};
use crate::config::{OAuthIssuer, ServeOAuth};
use crate::paths::Environment;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Answers held at most: past them the expired go, then a tenth of the
/// rest, so that a flood of made-up tokens costs introspections, never
/// memory, and the cost of making room is spread over many answers.
const MAX_ANSWERS: usize = 10_000;

/// Introspections under way at most: a flood of made-up tokens waits
/// here rather than sending the issuer as many requests at once.
const MAX_ASKING: usize = 16;

/// The introspecting client's secret of each issuer that has one, resolved
/// when serving starts (a `!command` run, a variable read).
#[derive(Clone, Default)]
pub struct IntrospectionSecrets(HashMap<String, String>);

// Written by hand so that no secret reaches a log.
impl std::fmt::Debug for IntrospectionSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// The secrets of `oauth`'s introspecting clients; an error names the
/// issuer and why (never the value).
pub(crate) async fn introspection_secrets(
    oauth: Option<&ServeOAuth>,
    env: &Environment,
) -> Result<IntrospectionSecrets, (String, String)> {
    let mut out = HashMap::new();
    for issuer in oauth.into_iter().flat_map(|o| &o.issuers) {
        let Some(i) = &issuer.introspection else {
            continue;
        };
        let secret = crate::secrets::resolve_source(&i.secret, env)
            .await
            .map_err(|why| (issuer.issuer.clone(), why))?;
        out.insert(issuer.issuer.clone(), secret);
    }
    Ok(IntrospectionSecrets(out))
}

/// What an issuer said of a token, until when it may be reused.
#[derive(Clone)]
struct Answer {
    said: Result<Arc<Map<String, Value>>, String>,
    until: Instant,
}

/// Asks issuers about opaque tokens, and remembers their answers.
pub(super) struct Introspector {
    secrets: IntrospectionSecrets,
    asking: tokio::sync::Semaphore,
    endpoints: tokio::sync::Mutex<HashMap<String, String>>,
    answers: Mutex<HashMap<[u8; 32], Answer>>,
}

impl Introspector {
    pub(super) fn new(secrets: IntrospectionSecrets) -> Introspector {
        Introspector {
            secrets,
            asking: tokio::sync::Semaphore::new(MAX_ASKING),
            endpoints: Default::default(),
            answers: Default::default(),
        }
    }

    /// The claims `issuer` (the one that introspects) gives of `token`, an
    /// active token for `audience`; why not, else.
    pub(super) async fn claims(
        &self,
        http: &reqwest::Client,
        (issuer, audience): (&OAuthIssuer, &str),
        token: &str,
    ) -> Result<Arc<Map<String, Value>>, String> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(answer) = self.held(&key) {
            return answer.said;
        }
        let settings = issuer
            .introspection
            .as_ref()
            .expect("an introspecting issuer");
        match self.ask(http, issuer, token).await {
            // Nothing is kept: the next request asks again.
            Err(e) => Err(format!("cannot be checked now: {e}")),
            Ok(None) => {
                let inactive = "not active: expired, revoked or unknown to its issuer";
                self.keep(key, Err(inactive.into()), settings.cache_seconds);
                Err(inactive.into())
            }
            Ok(Some(claims)) => {
                let said = admissible(issuer, audience, &claims).map(|()| Arc::new(claims.clone()));
                let until = expiry(&claims).min(settings.cache_seconds);
                self.keep(key, said.clone(), until);
                said
            }
        }
    }

    fn held(&self, key: &[u8; 32]) -> Option<Answer> {
        let answers = self.answers.lock().expect("answers");
        answers
            .get(key)
            .filter(|a| a.until > Instant::now())
            .cloned()
    }

    fn keep(&self, key: [u8; 32], said: Result<Arc<Map<String, Value>>, String>, seconds: u64) {
        if seconds == 0 {
            return;
        }
        let now = Instant::now();
        let mut answers = self.answers.lock().expect("answers");
        if answers.len() >= MAX_ANSWERS {
            answers.retain(|_, a| a.until > now);
        }
        if answers.len() >= MAX_ANSWERS {
            let gone: Vec<[u8; 32]> = answers.keys().take(MAX_ANSWERS / 10).copied().collect();
            for key in gone {
                answers.remove(&key);
            }
        }
        let until = now + Duration::from_secs(seconds);
        answers.insert(key, Answer { said, until });
    }

    /// `issuer`'s answer: the claims of an active token, `None` for an
    /// inactive one, an error when it cannot be had.
    async fn ask(
        &self,
        http: &reqwest::Client,
        issuer: &OAuthIssuer,
        token: &str,
    ) -> Result<Option<Map<String, Value>>, String> {
        let settings = issuer
            .introspection
            .as_ref()
            .expect("an introspecting issuer");
        let _turn = self.asking.acquire().await.map_err(|e| e.to_string())?;
        // The detail goes to the log; whoever sent the token is told less.
        let unanswered = |e: String| {
            tracing::warn!(issuer = %issuer.issuer, "introspection: {e}");
            "its issuer does not answer".to_string()
        };
        let endpoint = self.endpoint(http, issuer).await.map_err(unanswered)?;
        let secret = self.secrets.0.get(&issuer.issuer).map(|s| form(s));
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let response = http
            .post(&endpoint)
            .basic_auth(form(&settings.client_id), secret)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| unanswered(e.to_string()))?;
        let answer: Value = response
            .json()
            .await
            .map_err(|e| unanswered(e.to_string()))?;
        match answer {
            Value::Object(claims) if claims.get("active") == Some(&Value::Bool(true)) => {
                Ok(access_token(claims))
            }
            Value::Object(_) => Ok(None),
            _ => Err(unanswered("the answer is not an object".into())),
        }
    }

    /// Where `issuer` introspects: as configured, else from its metadata.
    async fn endpoint(
        &self,
        http: &reqwest::Client,
        issuer: &OAuthIssuer,
    ) -> Result<String, String> {
        let settings = issuer
            .introspection
            .as_ref()
            .expect("an introspecting issuer");
        if let Some(endpoint) = &settings.endpoint {
            return Ok(endpoint.clone());
        }
        let mut known = self.endpoints.lock().await;
        if let Some(endpoint) = known.get(&issuer.issuer) {
            return Ok(endpoint.clone());
        }
        let endpoint = published(http, &issuer.issuer, "introspection_endpoint").await?;
        known.insert(issuer.issuer.clone(), endpoint.clone());
        Ok(endpoint)
    }
}

/// A client's id or secret as HTTP Basic takes it at a token endpoint:
/// form-encoded first (RFC 6749 §2.3.1), so `:` and `%` survive.
fn form(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// An active answer, unless it says the token is of another kind than an
/// access token (a refresh token, say).
fn access_token(claims: Map<String, Value>) -> Option<Map<String, Value>> {
    let kind = claims.get("token_type").and_then(Value::as_str);
    let access = kind.is_none_or(|k| {
        ["access_token", "bearer", "n_a"].contains(&k.to_ascii_lowercase().as_str())
    });
    access.then_some(claims)
}

/// An active token is for this gateway (its `aud` names the resource), from
/// the issuer asked (`iss`, when given), and in force (`exp`, `nbf`).
fn admissible(
    issuer: &OAuthIssuer,
    resource: &str,
    claims: &Map<String, Value>,
) -> Result<(), String> {
    if !words(claims.get("aud")).contains(resource) {
        return Err("for another resource than this gateway".into());
    }
    if claims
        .get("iss")
        .and_then(Value::as_str)
        .is_some_and(|iss| iss != issuer.issuer)
    {
        return Err("from another issuer".into());
    }
    let now = unix_now();
    let at = |k: &str| claims.get(k).and_then(Value::as_u64);
    if at("exp").is_some_and(|exp| exp + LEEWAY_SECS <= now) {
        return Err("expired".into());
    }
    if at("nbf").is_some_and(|nbf| nbf > now + LEEWAY_SECS) {
        return Err("not valid yet".into());
    }
    Ok(())
}

/// Seconds until the token's `exp` (none: no bound of its own).
fn expiry(claims: &Map<String, Value>) -> u64 {
    match claims.get("exp").and_then(Value::as_u64) {
        Some(exp) => exp.saturating_sub(unix_now()),
        None => u64::MAX,
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issuer() -> OAuthIssuer {
        OAuthIssuer {
            issuer: "https://idp.example.com".into(),
            jwks_uri: None,
            groups_claim: "groups".into(),
            audience: None,
            introspection: None,
            sign_in: None,
        }
    }

    #[test]
    fn an_active_token_must_name_this_gateway_come_from_its_issuer_and_be_in_force() {
        let check = |claims: Value| {
            admissible(
                &issuer(),
                "https://gw.example.com/mcp",
                claims.as_object().unwrap(),
            )
        };
        let now = unix_now();
        assert_eq!(
            check(json!({"aud": ["https://gw.example.com/mcp", "x"], "exp": now + 60})),
            Ok(())
        );
        assert_eq!(
            check(json!({"aud": "https://other.example.com/mcp"})),
            Err("for another resource than this gateway".into())
        );
        assert_eq!(
            check(json!({})),
            Err("for another resource than this gateway".into()),
            "an answer that names no audience is not for this gateway"
        );
        let ok_aud = "https://gw.example.com/mcp";
        assert_eq!(
            check(json!({"aud": ok_aud, "iss": "https://evil.example.com"})),
            Err("from another issuer".into())
        );
        assert_eq!(
            check(json!({"aud": ok_aud, "exp": now - 60})),
            Err("expired".into())
        );
        assert_eq!(
            check(json!({"aud": ok_aud, "nbf": now + 60})),
            Err("not valid yet".into())
        );
    }

    #[test]
    fn answers_are_held_for_their_time_at_most_and_never_beyond_the_bound() {
        let i = Introspector::new(IntrospectionSecrets::default());
        let key = |n: usize| -> [u8; 32] { Sha256::digest(n.to_string()).into() };
        i.keep(key(0), Err("not active".into()), 0);
        assert!(i.held(&key(0)).is_none(), "0 s: nothing is held");
        for n in 0..3 * MAX_ANSWERS {
            i.keep(key(n), Err("not active".into()), 60);
            assert!(i.answers.lock().unwrap().len() <= MAX_ANSWERS);
        }
        assert!(
            i.held(&key(3 * MAX_ANSWERS - 1)).is_some(),
            "the newest is held"
        );
    }
}
