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
    /// The server's authorization page the browser goes on to, now that
    /// the identity provider said it is the principal's; `None`: the login
    /// is made.
    pub onward: Option<String>,
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

/// The query parameter `name` of `address`, decoded.
pub(super) fn query(address: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(address).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}
