//! The `sharedState` setting's URL: which ones mcpw can use, and how one is
//! shown without its password.

/// Whether `url` names a Redis server mcpw can reach: `redis://`,
/// `redis+unix://` or `unix://`, and well formed.
pub fn is_usable(url: &str) -> bool {
    ["redis://", "redis+unix://", "unix://"]
        .iter()
        .any(|s| url.starts_with(s))
        && well_formed(url)
}

/// Parses as a URL with a host (`redis://`) or a path (the unix socket
/// forms), as the Redis client needs.
fn well_formed(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| u.has_host() || !u.path().is_empty())
}

/// `url` with its password replaced: what logs, errors and `/readyz` show.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("****"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => "(an unreadable URL)".into(),
    }
}
