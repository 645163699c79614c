//! What the gateway's sign-in callback finished, and reading what the
//! browser brought back to it: shared by a sign-in at a server and one at
//! a person's identity provider.

use crate::config::{GatewayClient, OAuthConfig};
use crate::paths::Environment;

/// A step of a sign-in finished at the callback: whose, to what.
#[derive(Clone, Debug)]
pub struct SignedIn {
    /// The server's name.
    pub server: String,
    /// The principal.
    pub owner: String,
    /// Where the browser goes on to, now that the identity provider said
    /// it is the principal's; `None`: the login is made.
    pub onward: Option<Onward>,
}

/// The browser's way on from its identity provider to a server's
/// authorization page, and the cookie it takes along: the callback finishes
/// that server's sign-in only in a browser that brings it back, so that the
/// page's address, passed on to someone else, makes no login.
#[derive(Clone, Debug)]
pub struct Onward {
    /// The server's authorization page.
    pub address: String,
    /// The cookie's name (one per sign-in) and its random value.
    pub cookie: (String, String),
}

impl Onward {
    /// The way on to `address`, with a new cookie for its sign-in.
    pub(super) fn to(address: String) -> Onward {
        let state = query(&address, "state").unwrap_or_default();
        let value = oauth2::CsrfToken::new_random().secret().clone();
        Onward {
            address,
            cookie: (browser_cookie(&state), value),
        }
    }
}

/// The name of the cookie that binds the browser to the sign-in of
/// OAuth state `state`.
pub(super) fn browser_cookie(state: &str) -> String {
    format!("mcpw-sign-in-{}", &digest(state)[..16])
}

/// The hex SHA-256 of `text` (what is kept of a cookie's value).
pub(super) fn digest(text: &str) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of cookie `name` in a `Cookie` header.
pub(super) fn cookie<'h>(header: &'h str, name: &str) -> Option<&'h str> {
    header.split(';').find_map(|pair| {
        let (n, v) = pair.trim().split_once('=')?;
        (n == name).then_some(v)
    })
}

/// The config as it is when a sign-in comes back: what it began with is
/// checked against it (a server renamed, moved or changed meanwhile is not
/// signed in to), and the secrets are read from it then.
pub struct Configured<'a> {
    /// A per-person HTTP server's URL and `oauth`, by name.
    pub servers: &'a (dyn Fn(&str) -> Option<(String, OAuthConfig)> + Sync),
    /// The gateway's own client at an issuer (`serve.oauth.issuers[i].signIn`).
    pub gateway_clients: &'a (dyn Fn(&str) -> Option<GatewayClient> + Sync),
    /// Where a `clientSecretEnv` is read.
    pub env: &'a Environment,
}

/// What the party that sent the browser back to `redirect` said, when it
/// refused: its `error_description`, else its `error`.
pub(super) fn refused_in(redirect: &str) -> Option<String> {
    let error = query(redirect, "error")?;
    Some(query(redirect, "error_description").unwrap_or(error))
}

/// The query parameter `name` of `address`, decoded.
pub(super) fn query(address: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(address).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}
