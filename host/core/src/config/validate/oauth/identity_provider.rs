//! `oauth.identityProvider`: the enterprise identity provider of the
//! `id-jag` grant (cross-app access), each bad field reported as
//! `oauth.identityProvider.<field>`.

use super::super::{Reader, https_or_loopback, kind};
use crate::config::model::{GrantType, IdentityProvider, OAuthConfig};
use serde_json::Value;

const AT: &str = "oauth.identityProvider";

const FIELDS: &[&str] = &[
    "issuer",
    "tokenEndpoint",
    "clientId",
    "clientSecret",
    "idToken",
];

/// Reads the object; `None` (after saying why) when it cannot be used.
pub(super) fn read(r: &mut Reader<'_>, value: &Value) -> Option<IdentityProvider> {
    let Value::Object(obj) = value else {
        r.error(AT, format!("expected an object, found {}", kind(value)));
        return None;
    };
    let (mut issuer, mut token_endpoint, mut client_id) = (None, None, None);
    let (mut client_secret, mut id_token) = (None, None);
    for (key, value) in obj {
        let field = format!("{AT}.{key}");
        let text = match value {
            Value::String(s) => s.as_str(),
            _ if FIELDS.contains(&key.as_str()) => {
                r.error(&field, format!("expected a string, found {}", kind(value)));
                continue;
            }
            _ => "",
        };
        match key.as_str() {
            "issuer" => issuer = url(r, &field, text),
            "tokenEndpoint" => token_endpoint = url(r, &field, text),
            "clientId" => client_id = filled(r, &field, |r| r.expand(&field, text)),
            "clientSecret" => client_secret = filled(r, &field, |r| r.expand_secret(&field, text)),
            "idToken" => id_token = filled(r, &field, |r| r.expand_secret(&field, text)),
            _ => r.problem(
                crate::config::Severity::Warning,
                &field,
                format!("unknown field (known: {})", FIELDS.join(", ")),
            ),
        }
    }
    // A field written but refused has been reported already.
    let mut required = |value: Option<String>, name: &str, why: &str| {
        if value.is_none() && !obj.contains_key(name) {
            r.error(&format!("{AT}.{name}"), format!("is required: {why}"));
        }
        value
    };
    let issuer = required(issuer, "issuer", "the identity assertion must come from it");
    let client_id = required(client_id, "clientId", "the client mcpw is known as there");
    // Whether the ID token is needed depends on `perPerson` (see
    // `consistent`).
    Some(IdentityProvider {
        issuer: issuer?,
        token_endpoint,
        client_id: client_id?,
        client_secret,
        id_token,
    })
}

/// A value that is not empty (a reference to an empty variable is).
fn filled<'r>(
    r: &mut Reader<'r>,
    field: &str,
    read: impl FnOnce(&mut Reader<'r>) -> String,
) -> Option<String> {
    let value = read(r);
    if value.trim().is_empty() {
        r.error(field, "is empty");
        return None;
    }
    Some(value)
}

/// Whether `oauth.identityProvider.<name>` is written (a field written but
/// refused has been reported already).
fn wrote(r: &Reader<'_>, name: &str) -> bool {
    r.obj
        .get("oauth")
        .and_then(|o| o.get("identityProvider"))
        .is_some_and(|i| i.get(name).is_some())
}

/// An https URL (plain http only on loopback), as written: an issuer is
/// compared with what its tokens name exactly.
fn url(r: &mut Reader<'_>, field: &str, text: &str) -> Option<String> {
    let url = r.expand(field, text.trim());
    if https_or_loopback(&url) {
        Some(url)
    } else {
        r.error(
            field,
            format!("{url:?} is not an https URL (plain http only on loopback)"),
        );
        None
    }
}

/// The grant and its identity provider go together, with the client the
/// server's authorization server knows.
pub(super) fn consistent(r: &mut Reader<'_>, out: &OAuthConfig) {
    let written = r
        .obj
        .get("oauth")
        .is_some_and(|o| o.get("identityProvider").is_some());
    match (out.grant_type == GrantType::IdJag, written) {
        (true, false) => r.error(
            "oauth.grantType",
            "the id-jag grant needs `oauth.identityProvider` (its `issuer`, mcpw's `clientId` there and the person's `idToken`)",
        ),
        (false, true) => r.error(
            AT,
            "an identity provider is for cross-app access: set `oauth.grantType` to \"id-jag\"",
        ),
        _ => {}
    }
    let id_token = out.identity_provider.as_ref().map(|i| i.id_token.is_some());
    let id_token_field = &format!("{AT}.idToken");
    match (out.per_person, id_token) {
        (true, Some(true)) => r.error(
            id_token_field,
            "a per-person server signs each person in there for their own ID token: leave it out",
        ),
        (false, Some(false)) if !wrote(r, "idToken") => r.error(
            id_token_field,
            "is required: the person's ID token it issued (or set `oauth.perPerson` to sign each person in for their own)",
        ),
        _ => {}
    }
    if out.grant_type == GrantType::IdJag && out.client_id.is_none() {
        r.error(
            "oauth.clientId",
            "the id-jag grant needs the client the server's authorization server knows mcpw as (and usually `oauth.clientSecret`)",
        );
    }
}
