//! Reading what issuers publish and what tokens claim, alike for JWTs and
//! introspected tokens.

use crate::config::{OAuthIssuer, ServeOAuth};
use serde_json::Value;
use std::collections::BTreeSet;

/// Clock skew allowed on `exp` and `nbf`.
pub(super) const LEEWAY_SECS: u64 = 5;

/// The JSON document at `url`; an error names the URL.
pub(super) async fn get_json(http: &reqwest::Client, url: String) -> Result<Value, String> {
    let response = http
        .get(&url)
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| format!("{url}: {e}"))?;
    let body = response.bytes().await.map_err(|e| format!("{url}: {e}"))?;
    serde_json::from_slice::<Value>(&body).map_err(|e| format!("{url}: {e}"))
}

/// The string `field` of `issuer`'s OpenID configuration (an endpoint it
/// publishes there).
pub(super) async fn published(
    http: &reqwest::Client,
    issuer: &str,
    field: &str,
) -> Result<String, String> {
    let url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let config = get_json(http, url).await?;
    config[field]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("the issuer's configuration names no {field}"))
}

/// A claim's words: a space-separated string, or a list of strings.
pub(super) fn words(value: Option<&Value>) -> BTreeSet<&str> {
    match value {
        Some(Value::String(s)) => s.split_whitespace().collect(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => BTreeSet::new(),
    }
}

/// The `aud` `issuer`'s tokens must name: its `audience`, else the
/// gateway's resource URI.
pub(super) fn audience<'a>(issuer: &'a OAuthIssuer, oauth: &'a ServeOAuth) -> &'a str {
    issuer.audience.as_deref().unwrap_or(&oauth.resource)
}
