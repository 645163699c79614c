//! Every field a server definition may have, and what mcpw does with it: the
//! one table that validation, the metadata cache's identity, `mcpw config
//! show`'s masking and the property tests read.

/// The JSON a field takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `true` or `false`.
    Bool,
    /// A string.
    Text,
    /// A URL.
    Url,
    /// `stdio`, `http`, `sse` or `streamable-http`.
    TransportType,
    /// A list of strings.
    Strings,
    /// An object of strings.
    Map,
    /// `bearer`, `oauth` or `false`.
    Auth,
    /// `lazy`, `eager` or `keep-alive`.
    Lifecycle,
    /// A number.
    Number,
    /// `true`, `false` or a list of tool names.
    DirectTools,
    /// `true`, `false` or an object of OAuth client settings.
    OAuth,
    /// A mode, or an object of tool globs and modes.
    Approve,
    /// A rate (`"N/min"`), or an object of tool globs and rates.
    Rate,
    /// Tokens, or an object of tool globs and tokens.
    Budget,
    /// `json`, `toon` or `csv`, or an object of tool globs and those.
    Format,
    /// A component server's permissions (see [`super::permissions`]).
    Permissions,
}

/// How `mcpw config show` shows a field's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// As written.
    AsIs,
    /// Masked, unless it is a reference (`${VAR}`, `!command`).
    Secret,
    /// Each value of the object masked as a [`Shown::Secret`].
    Secrets,
    /// Its password and query values masked.
    Url,
    /// Its `clientSecret` and `privateKey` masked, and its identity
    /// provider's `clientSecret` and `idToken`.
    OAuth,
    /// Its `env` values masked as [`Shown::Secret`]s.
    Permissions,
}

/// One field of a server definition.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// Its name in the definition.
    pub name: &'static str,
    /// The JSON it takes.
    pub kind: Kind,
    /// Whether it decides what the server lists: changing it makes the
    /// server's cached listing stale.
    pub identity: bool,
    /// How `config show` shows it.
    pub shown: Shown,
    /// The `ServerConfig` field (as serialized) that holds what it says;
    /// `None` for a field kept only in the definition.
    pub stored_in: Option<&'static str>,
    /// Whether a project server's approval covers it: what runs, where it
    /// connects and what the user is asked. How long, how often and which
    /// tools change without a new approval.
    pub approved: bool,
}

const fn field(
    name: &'static str,
    kind: Kind,
    identity: bool,
    shown: Shown,
    stored_in: Option<&'static str>,
    approved: bool,
) -> Field {
    Field {
        name,
        kind,
        identity,
        shown,
        stored_in,
        approved,
    }
}

const TRANSPORT: Option<&str> = Some("transport");

/// Every field a server definition may have; others get a warning in mcpw's
/// own files.
pub const SERVER_FIELDS: &[Field] = &[
    field(
        "enabled",
        Kind::Bool,
        false,
        Shown::AsIs,
        Some("enabled"),
        false,
    ),
    field(
        "disabled",
        Kind::Bool,
        false,
        Shown::AsIs,
        Some("enabled"),
        false,
    ),
    field(
        "type",
        Kind::TransportType,
        false,
        Shown::AsIs,
        TRANSPORT,
        true,
    ),
    field("command", Kind::Text, true, Shown::AsIs, TRANSPORT, true),
    field("args", Kind::Strings, true, Shown::AsIs, TRANSPORT, true),
    field("env", Kind::Map, true, Shown::Secrets, TRANSPORT, true),
    field("cwd", Kind::Text, true, Shown::AsIs, TRANSPORT, true),
    field("url", Kind::Url, true, Shown::Url, TRANSPORT, true),
    field("component", Kind::Text, true, Shown::AsIs, TRANSPORT, true),
    field("sha256", Kind::Text, true, Shown::AsIs, TRANSPORT, true),
    field(
        "permissions",
        Kind::Permissions,
        true,
        Shown::Permissions,
        TRANSPORT,
        true,
    ),
    field("headers", Kind::Map, true, Shown::Secrets, TRANSPORT, true),
    field("auth", Kind::Auth, true, Shown::AsIs, Some("auth"), true),
    field(
        "oauth",
        Kind::OAuth,
        false,
        Shown::OAuth,
        Some("oauth"),
        true,
    ),
    field(
        "bearerToken",
        Kind::Text,
        true,
        Shown::Secret,
        Some("bearerToken"),
        true,
    ),
    field(
        "bearerTokenEnv",
        Kind::Text,
        true,
        Shown::AsIs,
        Some("bearerTokenEnv"),
        true,
    ),
    field(
        "lifecycle",
        Kind::Lifecycle,
        false,
        Shown::AsIs,
        Some("lifecycle"),
        false,
    ),
    field(
        "idleTimeout",
        Kind::Number,
        false,
        Shown::AsIs,
        Some("idleTimeout"),
        false,
    ),
    field(
        "startupTimeoutMs",
        Kind::Number,
        false,
        Shown::AsIs,
        Some("startupTimeoutMs"),
        false,
    ),
    field(
        "callTimeoutMs",
        Kind::Number,
        false,
        Shown::AsIs,
        Some("callTimeoutMs"),
        false,
    ),
    field(
        "exposeResources",
        Kind::Bool,
        true,
        Shown::AsIs,
        Some("exposeResources"),
        false,
    ),
    field(
        "directTools",
        Kind::DirectTools,
        false,
        Shown::AsIs,
        Some("directTools"),
        false,
    ),
    field(
        "excludeTools",
        Kind::Strings,
        true,
        Shown::AsIs,
        Some("excludeTools"),
        false,
    ),
    field(
        "includeTools",
        Kind::Strings,
        true,
        Shown::AsIs,
        Some("includeTools"),
        false,
    ),
    field(
        "debug",
        Kind::Bool,
        false,
        Shown::AsIs,
        Some("debug"),
        false,
    ),
    field(
        "searchKeywords",
        Kind::Strings,
        false,
        Shown::AsIs,
        Some("searchKeywords"),
        false,
    ),
    field(
        "approve",
        Kind::Approve,
        false,
        Shown::AsIs,
        Some("approve"),
        true,
    ),
    field(
        "rateLimit",
        Kind::Rate,
        false,
        Shown::AsIs,
        Some("rateLimit"),
        false,
    ),
    field(
        "resultBudget",
        Kind::Budget,
        false,
        Shown::AsIs,
        Some("resultBudget"),
        false,
    ),
    field(
        "resultFormat",
        Kind::Format,
        false,
        Shown::AsIs,
        Some("resultFormat"),
        false,
    ),
    // For people reading the file; mcpw keeps it in the definition only.
    field("description", Kind::Text, false, Shown::AsIs, None, false),
];

/// The field called `name`, if a definition may have it.
pub fn named(name: &str) -> Option<&'static Field> {
    SERVER_FIELDS.iter().find(|f| f.name == name)
}

/// Every field's name.
pub fn names() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| SERVER_FIELDS.iter().map(|f| f.name).collect())
}

/// The fields that decide what a server lists.
pub fn identity() -> impl Iterator<Item = &'static str> {
    SERVER_FIELDS.iter().filter(|f| f.identity).map(|f| f.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Environment;
    use serde_json::{Value, json};
    use std::collections::BTreeSet;

    /// The table and `ServerConfig` describe the same fields: each field the
    /// struct serializes is filled from a field of the table, and each field of
    /// the table lands in the struct (or is kept in the definition only).
    #[test]
    fn the_table_covers_the_server_config() {
        let parse = |v: Value| {
            let env = Environment::from_pairs([("HOME", "/nonexistent")]);
            let mut diags = Vec::new();
            let config = super::super::validate::server(
                "s",
                &v,
                "f.json".as_ref(),
                &env,
                crate::config::Provenance::User,
                &mut diags,
            );
            serde_json::to_value(config.expect("a valid definition")).unwrap()
        };
        let stdio = parse(json!({"command": "x"}));
        let stored: BTreeSet<&str> = SERVER_FIELDS.iter().filter_map(|f| f.stored_in).collect();
        let keys: BTreeSet<&str> = stdio
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(stored, keys, "table fields vs ServerConfig fields");
        // Each transport field lands in the transport.
        let http = parse(json!({"url": "https://h/mcp", "headers": {"A": "b"}}));
        let component =
            parse(json!({"component": "/s.wasm", "permissions": {}, "sha256": "ab".repeat(32)}));
        for f in SERVER_FIELDS.iter().filter(|f| f.stored_in == TRANSPORT) {
            let transport = match f.name {
                "url" | "headers" => &http,
                "component" | "permissions" | "sha256" => &component,
                _ => &stdio,
            };
            let known = f.name == "type" || transport["transport"].get(f.name).is_some();
            assert!(known, "{} is not in the transport: {transport}", f.name);
        }
    }

    #[test]
    fn names_are_unique_and_identity_is_a_subset() {
        let names: BTreeSet<&str> = names().iter().copied().collect();
        assert_eq!(names.len(), SERVER_FIELDS.len());
        assert!(identity().all(|f| names.contains(f)));
        assert!(named("command").is_some_and(|f| f.identity));
        assert!(named("nope").is_none());
    }
}
