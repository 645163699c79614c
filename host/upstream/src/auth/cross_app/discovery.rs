//! What cross-app access needs beyond what rmcp's discovery hands back: the
//! resource the server's protected resource metadata names, and the
//! identity provider's token endpoint.

use super::super::fetch;
use rmcp::transport::auth::{AuthorizationMetadata, WWWAuthenticateParams};
use url::Url;

/// The fields of protected resource metadata (RFC 9728) read here.
#[derive(serde::Deserialize)]
struct ResourceMetadata {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
}

/// The resource identifier the server's protected resource metadata names:
/// what the identity assertion is bound to. rmcp reads that document to find
/// the authorization server but keeps the resource to itself, so it is read
/// again: where the challenge points (else where a request without a token
/// is pointed), then at the well-known locations. The first document that
/// names `issuer` among its authorization servers, and a resource that is
/// the server's URL or a parent of it (what rmcp accepts), gives it. A
/// server that publishes none (the 2025-03-26 layout) is its own resource.
pub(in crate::auth) async fn protected_resource(
    url: &str,
    challenge: Option<&str>,
    issuer: &str,
) -> String {
    match named_resource(url, challenge, issuer).await {
        Some(resource) => resource,
        None => url.to_string(),
    }
}

/// The resource of the server at `url`, when protected resource metadata
/// it publishes names `issuer` among its authorization servers (see
/// [`protected_resource`]); `None` when none does.
pub(in crate::auth) async fn named_resource(
    url: &str,
    challenge: Option<&str>,
    issuer: &str,
) -> Option<String> {
    let base = Url::parse(url).ok()?;
    for at in candidates(&base, challenge).await {
        let Ok(metadata) = fetch::json::<ResourceMetadata>(&at).await else {
            continue;
        };
        let names_issuer = metadata
            .authorization_servers
            .iter()
            .any(|s| s.trim_end_matches('/') == issuer.trim_end_matches('/'));
        match metadata.resource {
            Some(resource) if names_issuer && covers(&resource, &base) => return Some(resource),
            _ => {}
        }
    }
    None
}

/// Where the metadata may be, in the order rmcp looks.
async fn candidates(base: &Url, challenge: Option<&str>) -> Vec<Url> {
    let challenge = match challenge {
        Some(c) => Some(c.to_string()),
        None => fetch::challenge(base).await,
    };
    let pointed =
        challenge.and_then(|c| WWWAuthenticateParams::parse(&c, base).resource_metadata_url);
    let path = base.path().trim_end_matches('/');
    let mut out: Vec<Url> = pointed.into_iter().collect();
    for at in [
        format!("/.well-known/oauth-protected-resource{path}"),
        "/.well-known/oauth-protected-resource".to_string(),
    ] {
        if let Ok(url) = base.join(&at)
            && !out.contains(&url)
        {
            out.push(url);
        }
    }
    out
}

/// Is `resource` the server at `base`, or a parent of it on the same origin?
fn covers(resource: &str, base: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    let (parent, path) = (resource.path(), base.path());
    resource.origin() == base.origin()
        && (path == parent
            || path.starts_with(parent)
                && (parent.ends_with('/') || path[parent.len()..].starts_with('/')))
}

/// The identity provider's metadata: its OpenID configuration under its
/// issuer, which must name that same issuer (OpenID Connect Discovery 4.3).
pub(in crate::auth) async fn identity_provider(
    issuer: &str,
) -> Result<AuthorizationMetadata, String> {
    let at = Url::parse(&format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    ))
    .map_err(|e| format!("the identity provider's issuer {issuer:?}: {e}"))?;
    let metadata: AuthorizationMetadata = fetch::json(&at)
        .await
        .map_err(|e| format!("the identity provider's metadata could not be read ({e})"))?;
    if metadata.issuer.as_deref() != Some(issuer) {
        return Err(format!(
            "the identity provider's metadata at {at} names the issuer {:?}, not {issuer:?}",
            metadata.issuer.as_deref().unwrap_or("")
        ));
    }
    Ok(metadata)
}

/// The token endpoint of the identity provider `idp`: as configured, else
/// from its metadata, given too.
pub(in crate::auth) async fn token_endpoint(
    idp: &crate::config::IdentityProvider,
) -> Result<(String, Option<AuthorizationMetadata>), String> {
    if let Some(endpoint) = &idp.token_endpoint {
        return Ok((endpoint.clone(), None));
    }
    let found = identity_provider(&idp.issuer).await?;
    Ok((found.token_endpoint.clone(), Some(found)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_covers_its_own_url_and_those_under_it_alone() {
        let base = Url::parse("https://h.example/api/mcp").unwrap();
        for (resource, covered) in [
            ("https://h.example/api/mcp", true),
            ("https://h.example/api", true),
            ("https://h.example/", true),
            ("https://h.example/ap", false),
            ("https://h.example/api/mcp/more", false),
            ("http://h.example/api/mcp", false),
            ("https://other.example/api/mcp", false),
            ("not a url", false),
        ] {
            assert_eq!(covers(resource, &base), covered, "{resource}");
        }
    }

    /// Where the challenge points first, then the path-based well-known
    /// location, then the root one (once, for a server at the root).
    #[tokio::test]
    async fn the_metadata_is_looked_for_where_the_challenge_points_then_at_the_well_known_uris() {
        let challenge = r#"Bearer resource_metadata="https://h.example/meta/prm.json", scope="a""#;
        let found = |url: &str, challenge: Option<&'static str>| {
            let base = Url::parse(url).unwrap();
            async move {
                let at = candidates(&base, challenge).await;
                at.iter().map(Url::to_string).collect::<Vec<_>>()
            }
        };
        assert_eq!(
            found("https://h.example/api/mcp/?x=1", Some(challenge)).await,
            [
                "https://h.example/meta/prm.json",
                "https://h.example/.well-known/oauth-protected-resource/api/mcp",
                "https://h.example/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            found("https://h.example/", Some("Bearer")).await,
            ["https://h.example/.well-known/oauth-protected-resource"]
        );
    }
}
