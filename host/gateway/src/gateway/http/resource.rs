//! The gateway as an OAuth 2.1 protected resource (MCP authorization, RFC
//! 9728): its metadata, at the well-known URI of its resource (and at the
//! root), which names the issuers clients sign in with; and the challenge a
//! request without a valid token gets, which points at that metadata.

use crate::config::ServeOAuth;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use std::sync::Arc;

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The path of the resource URI (`/mcp` for `https://host/mcp`), empty for
/// none.
fn resource_path(resource: &str) -> String {
    url::Url::parse(resource)
        .map(|u| u.path().trim_end_matches('/').to_string())
        .unwrap_or_default()
}

/// Where the metadata of `resource` is: its well-known URI (RFC 9728 §3.1).
fn metadata_url(resource: &str) -> String {
    match url::Url::parse(resource) {
        Ok(u) => format!(
            "{}{WELL_KNOWN}{}",
            u.origin().ascii_serialization(),
            resource_path(resource)
        ),
        Err(_) => format!("{resource}{WELL_KNOWN}"),
    }
}

/// `router` with the metadata routes, which need no token (none without
/// `serve.oauth`).
pub(super) fn routes(router: axum::Router, oauth: Option<Arc<ServeOAuth>>) -> axum::Router {
    let Some(oauth) = oauth else {
        return router;
    };
    let document = json!({
        "resource": oauth.resource,
        "authorization_servers": oauth.issuers.iter().map(|i| i.issuer.clone()).collect::<Vec<_>>(),
        "bearer_methods_supported": ["header"],
        "scopes_supported": oauth.scopes,
        "resource_name": "mcpw",
    });
    let body = document.to_string();
    let serve = move || {
        let body = body.clone();
        async move { ([(header::CONTENT_TYPE, "application/json")], body).into_response() }
    };
    let at = format!("{WELL_KNOWN}{}", resource_path(&oauth.resource));
    let router = router.route(&at, get(serve.clone()));
    match at == WELL_KNOWN {
        true => router,
        false => router.route(WELL_KNOWN, get(serve)),
    }
}

/// The answer to a request without a valid token: 401, or 403 for a token
/// without what it needs, with the challenge of RFC 6750 §3 that names the
/// metadata (`refused`: the error and its description, when a token came).
pub(super) fn challenge(oauth: Option<&ServeOAuth>, refused: Option<(&str, &str)>) -> Response {
    let status = match refused {
        Some(("insufficient_scope", _)) => StatusCode::FORBIDDEN,
        _ => StatusCode::UNAUTHORIZED,
    };
    let mut value = "Bearer".to_string();
    let mut parts = Vec::new();
    if let Some(oauth) = oauth {
        parts.push(format!(
            "resource_metadata=\"{}\"",
            metadata_url(&oauth.resource)
        ));
        if !oauth.scopes.is_empty() {
            parts.push(format!("scope=\"{}\"", oauth.scopes.join(" ")));
        }
    }
    if let Some((error, description)) = refused {
        parts.push(format!("error=\"{error}\""));
        parts.push(format!(
            "error_description=\"{}\"",
            description.replace('"', "'")
        ));
    }
    if !parts.is_empty() {
        value = format!("{value} {}", parts.join(", "));
    }
    let body = match refused {
        Some((_, description)) => format!("the bearer token is refused: {description}"),
        None => "a valid bearer token is required".to_string(),
    };
    let mut response = (status, body).into_response();
    if let Ok(v) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_is_at_the_well_known_uri_of_the_resource() {
        assert_eq!(
            metadata_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
    }
}
