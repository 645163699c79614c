//! `serve.oauth.issuers[i].introspection`: the gateway's own client at an
//! issuer, which asks it about opaque tokens (RFC 7662), and how long an
//! answer may be reused.

use super::Reader;
use crate::config::model::{GatewayClient, OAuthIntrospection, TokenSource};
use crate::config::validate::{kind, serve_secret};
use serde_json::Value;

const FIELDS: &[&str] = &[
    "clientId",
    "clientSecret",
    "clientSecretEnv",
    "endpoint",
    "cacheSeconds",
];

/// Reused this long unless told: a revoked token is refused within it.
const DEFAULT_CACHE_SECONDS: u64 = 30;

/// An answer reused longer would let a revoked token in for too long.
const MAX_CACHE_SECONDS: u64 = 3600;

impl Reader<'_> {
    /// `introspection`, or `None` with its problems reported.
    pub(super) fn introspection(&mut self, value: &Value, at: &str) -> Option<OAuthIntrospection> {
        let Some(obj) = value.as_object() else {
            self.error(at, format!("expected an object, found {}", kind(value)));
            return None;
        };
        self.unknown(obj, FIELDS, at);
        let client = self.client(obj, at);
        let endpoint = self.url(obj.get("endpoint"), &format!("{at}.endpoint"), false);
        let cache_seconds = self.cache_seconds(obj.get("cacheSeconds"), at);
        let GatewayClient { client_id, secret } = client?;
        Some(OAuthIntrospection {
            client_id,
            secret,
            endpoint,
            cache_seconds: cache_seconds?,
        })
    }

    /// The gateway's own client at the issuer, as `obj` (at `at`) names it:
    /// `clientId`, and `clientSecret` or `clientSecretEnv`.
    pub(super) fn client(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        at: &str,
    ) -> Option<GatewayClient> {
        let client_id = self.client_id(obj, at);
        let secret = self.client_secret(obj.get("clientSecret"), obj.get("clientSecretEnv"), at);
        Some(GatewayClient {
            client_id: client_id?,
            secret: secret?,
        })
    }

    /// `clientId`: the gateway's client at the issuer, required.
    fn client_id(&mut self, obj: &serde_json::Map<String, Value>, at: &str) -> Option<String> {
        match obj.get("clientId") {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
            _ => {
                self.error(
                    &format!("{at}.clientId"),
                    "is required: the gateway's client at the issuer".into(),
                );
                None
            }
        }
    }

    /// `clientSecret` (interpolated; a `!command` runs when it is used)
    /// or `clientSecretEnv`: exactly one.
    fn client_secret(
        &mut self,
        value: Option<&Value>,
        var: Option<&Value>,
        at: &str,
    ) -> Option<TokenSource> {
        match (value, var) {
            (Some(Value::String(text)), None) => {
                let (secret, missing) = serve_secret(text, self.env);
                for name in missing {
                    self.error(
                        &format!("{at}.clientSecret"),
                        format!("environment variable {name} is not set; set it, or use `clientSecretEnv`"),
                    );
                }
                if secret.trim().is_empty() {
                    self.error(&format!("{at}.clientSecret"), "is empty".into());
                }
                (!self.failed).then_some(TokenSource::Value(secret))
            }
            (None, Some(Value::String(name))) if valid_variable(name) => {
                Some(TokenSource::Env(name.clone()))
            }
            (None, Some(Value::String(name))) => {
                self.error(
                    &format!("{at}.clientSecretEnv"),
                    format!("{name:?} is not the name of an environment variable"),
                );
                None
            }
            (Some(_), Some(_)) => {
                self.error(
                    &format!("{at}.clientSecretEnv"),
                    "both `clientSecret` and `clientSecretEnv` are set: give one of them".into(),
                );
                None
            }
            (None, None) => {
                self.error(
                    &format!("{at}.clientSecret"),
                    "is required (or `clientSecretEnv`): the issuer authenticates who introspects"
                        .into(),
                );
                None
            }
            (Some(other), None) | (None, Some(other)) => {
                let field = if value.is_some() {
                    "clientSecret"
                } else {
                    "clientSecretEnv"
                };
                self.error(
                    &format!("{at}.{field}"),
                    format!("expected a string, found {other}"),
                );
                None
            }
        }
    }

    fn cache_seconds(&mut self, value: Option<&Value>, at: &str) -> Option<u64> {
        let n = match value {
            None | Some(Value::Null) => return Some(DEFAULT_CACHE_SECONDS),
            Some(v) => v.as_u64(),
        };
        match n.filter(|n| *n <= MAX_CACHE_SECONDS) {
            Some(n) => Some(n),
            None => {
                self.error(
                    &format!("{at}.cacheSeconds"),
                    format!(
                        "expected whole seconds from 0 to {MAX_CACHE_SECONDS}, found {}",
                        value.unwrap_or(&Value::Null)
                    ),
                );
                None
            }
        }
    }
}

fn valid_variable(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
