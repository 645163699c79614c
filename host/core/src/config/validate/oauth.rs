//! A server's `oauth`: `false`, or how mcpw logs in when the server asks.

use super::{Reader, kind};
use crate::config::model::{GrantType, OAuthConfig};
use serde_json::Value;

mod identity_provider;

pub(super) const FIELDS: &[&str] = &[
    "clientId",
    "clientSecret",
    "scope",
    "clientMetadataUrl",
    "callbackPort",
    "grantType",
    "privateKey",
    "signingAlgorithm",
    "identityProvider",
    "perPerson",
];

/// Algorithms an assertion can be signed with.
const SIGNING_ALGORITHMS: &[&str] = &["RS256", "RS384", "RS512", "ES256", "ES384"];

/// Reads `oauth`, reporting each bad field as `oauth.<field>`.
pub(super) fn oauth(r: &mut Reader<'_>) -> OAuthConfig {
    let obj = match r.obj.get("oauth") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => return OAuthConfig::default(),
        Some(Value::Bool(false)) => {
            return OAuthConfig {
                enabled: false,
                ..OAuthConfig::default()
            };
        }
        Some(Value::Object(obj)) => obj,
        Some(other) => {
            r.error(
                "oauth",
                format!("expected an object or false, found {}", kind(other)),
            );
            return OAuthConfig::default();
        }
    };
    let mut out = OAuthConfig::default();
    for (key, value) in obj {
        field(r, &mut out, key, value);
    }
    consistent(r, &out);
    out
}

/// Reads one field of `oauth` into `out`.
fn field(r: &mut Reader<'_>, out: &mut OAuthConfig, key: &str, value: &Value) {
    let field = format!("oauth.{key}");
    let text = match value {
        Value::String(s) => Some(s.as_str()),
        _ => None,
    };
    match (key, text) {
        ("clientId", Some(s)) => out.client_id = Some(r.expand(&field, s)),
        ("clientSecret", Some(s)) => out.client_secret = Some(r.expand_secret(&field, s)),
        ("scope", Some(s)) => out.scope = Some(r.expand(&field, s)),
        ("privateKey", Some(s)) => out.private_key = Some(r.expand_secret(&field, s)),
        ("signingAlgorithm", Some(s)) if SIGNING_ALGORITHMS.contains(&s) => {
            out.signing_algorithm = Some(s.to_string())
        }
        ("signingAlgorithm", _) => r.error(
            &field,
            format!(
                "expected one of {}, found {value}",
                SIGNING_ALGORITHMS.join(", ")
            ),
        ),
        ("clientMetadataUrl", Some(s)) => {
            let url = r.expand(&field, s);
            if !url.starts_with("https://") {
                r.error(&field, format!("{url} is not an https:// URL"));
            }
            out.client_metadata_url = Some(url);
        }
        ("grantType", Some("authorization_code")) => out.grant_type = GrantType::AuthorizationCode,
        ("grantType", Some("client_credentials")) => out.grant_type = GrantType::ClientCredentials,
        ("grantType", Some("id-jag")) => out.grant_type = GrantType::IdJag,
        ("grantType", Some("token-exchange")) => out.grant_type = GrantType::TokenExchange,
        ("grantType", _) => r.error(
            &field,
            format!(
                "expected \"authorization_code\", \"client_credentials\", \"id-jag\" or \"token-exchange\", found {value}"
            ),
        ),
        ("perPerson", _) => match value.as_bool() {
            Some(b) => out.per_person = b,
            None => r.error(&field, format!("expected true or false, found {value}")),
        },
        ("identityProvider", _) => out.identity_provider = identity_provider::read(r, value),
        ("callbackPort", _) => match value.as_u64() {
            Some(p @ 1..=65535) => out.callback_port = Some(p as u16),
            _ => r.error(
                &field,
                format!("expected a port number (1 to 65535), found {value}"),
            ),
        },
        (k, None) if FIELDS.contains(&k) => {
            r.error(&field, format!("expected a string, found {}", kind(value)))
        }
        _ => r.problem(
            crate::config::Severity::Warning,
            &field,
            format!("unknown field (known: {})", FIELDS.join(", ")),
        ),
    }
}

/// Fields that each look right but do not go together.
fn consistent(r: &mut Reader<'_>, out: &OAuthConfig) {
    if out.client_secret.is_some() && out.client_id.is_none() {
        r.error(
            "oauth.clientSecret",
            "a client secret belongs to a pre-registered client: set `oauth.clientId` too",
        );
    }
    if out.private_key.is_some() && out.grant_type != GrantType::ClientCredentials {
        r.error(
            "oauth.privateKey",
            "a private key signs client credentials: set `oauth.grantType` to \"client_credentials\"",
        );
    }
    if out.grant_type == GrantType::ClientCredentials && out.client_id.is_none() {
        r.error(
            "oauth.grantType",
            "the client_credentials grant needs `oauth.clientId` (and usually `oauth.clientSecret`)",
        );
    }
    if out.grant_type == GrantType::TokenExchange && out.client_id.is_none() {
        r.error(
            "oauth.grantType",
            "token exchange needs `oauth.clientId` (and usually `oauth.clientSecret`): the client mcpw is at the issuer that exchanges",
        );
    }
    // A person's own login: made in a browser, exchanged from their token,
    // or from the ID token they sign in for (cross-app access).
    if out.per_person && out.grant_type == GrantType::ClientCredentials {
        r.error(
            "oauth.perPerson",
            "the client_credentials grant is the client's own login, one for everyone: a person's own is made in a browser (authorization_code), exchanged (token-exchange) or from their ID token (id-jag)",
        );
    }
    identity_provider::consistent(r, out);
}

/// `perPerson` asks for one login per principal, which only an HTTP server
/// mcpw logs in to can take: a stdio or component server is one process for
/// everyone, and a static credential is one credential for everyone.
pub(super) fn per_person_fits(r: &mut Reader<'_>, server: &crate::config::ServerConfig) {
    if !server.oauth.per_person && !server.exchanges() {
        return;
    }
    let field = match server.oauth.per_person {
        true => "oauth.perPerson",
        false => "oauth.grantType",
    };
    let why = match server.transport {
        crate::config::Transport::Http { .. } if server.has_credentials() => {
            "a bearer token or Authorization header is one credential for everyone"
        }
        crate::config::Transport::Http { .. } => return,
        _ => "only an HTTP server takes a login per person: this one runs one process for everyone",
    };
    r.error(field, why);
}
