//! Turns a server definition (JSON) into a [`ServerConfig`], reporting every
//! problem with the file, the server and the field; and checks `settings`.

use super::interpolate::interpolate;
use super::model::{
    DEFAULT_STARTUP_TIMEOUT_MS, DirectTools, HttpKind, Lifecycle, Provenance, ServerConfig,
    Transport,
};
use super::{Diagnostic, Severity};
use crate::paths::Environment;
use serde_json::{Map, Value};
use std::path::Path;

mod oauth;
mod serve;
mod serve_oauth;
mod settings;

pub use serve::serve;
pub use settings::settings;

/// Is this a valid server name (`[A-Za-z0-9_.-]`, 1 to 100 characters)?
pub fn valid_server_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// Is `text` an `https` URL, or a plain `http` one to this machine's loopback?
pub fn https_or_loopback(text: &str) -> bool {
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|p| {
            text.strip_prefix(p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/']))
        });
    text.starts_with("https://") || loopback
}

/// Reads the fields of one server, collecting problems.
struct Reader<'a> {
    obj: &'a Map<String, Value>,
    file: &'a Path,
    server: &'a str,
    env: &'a Environment,
    diags: &'a mut Vec<Diagnostic>,
    failed: bool,
    /// What the definition's provenance may do: `!command`s run only from
    /// mcpw's own format (in another client's file a leading `!` is a
    /// character), and a project's `${vault:…}` names only its own secrets.
    rights: &'static super::settings::Rights,
}

impl Reader<'_> {
    fn problem(&mut self, severity: Severity, field: &str, message: String) {
        if severity == Severity::Error {
            self.failed = true;
        }
        self.diags.push(Diagnostic::server(
            severity,
            self.file,
            self.server,
            Some(field),
            message,
        ));
    }

    /// `field` read by `parse` when present (and not null); a value it
    /// refuses is reported.
    fn rule<T>(&mut self, field: &str, parse: impl Fn(&Value) -> Result<T, String>) -> Option<T> {
        match self.obj.get(field) {
            None | Some(Value::Null) => None,
            Some(v) => match parse(v) {
                Ok(rule) => Some(rule),
                Err(e) => {
                    self.error(field, e);
                    None
                }
            },
        }
    }

    fn error(&mut self, field: &str, message: impl Into<String>) {
        self.problem(Severity::Error, field, message.into());
    }

    /// Interpolates `${VAR}` references in a value that may name a secret
    /// command (`env`, `headers`, `bearerToken`). Only the config text decides
    /// what runs: a `!command` is kept as written (the shell expands its own
    /// variables), and a variable whose value starts with `!` stays a literal.
    fn expand_secret(&mut self, field: &str, text: &str) -> String {
        self.own_vault_only(field, text);
        let commands = self.rights.commands;
        secret_text(text, commands, |t| self.expand(field, t))
    }

    /// A definition that may name only its own secrets in the vault names
    /// another's: an error of the server, so that no secret of another
    /// server is sent where this one connects.
    fn own_vault_only(&mut self, field: &str, text: &str) {
        if self.rights.any_vault {
            return;
        }
        let own = format!("{}/", self.server);
        let foreign = text
            .match_indices("${vault:")
            .map(|(at, m)| &text[at + m.len()..])
            .find(|name| !name.starts_with(&own));
        if let Some(name) = foreign {
            let name = name.split('}').next().unwrap_or(name);
            let message = format!(
                "names the vault's secret {name:?}, which is not this server's own: {} may name only ${{vault:{}/…}}; define the server in your own file to use another",
                self.rights.what, self.server
            );
            self.error(field, message);
        }
    }

    /// Interpolates `${VAR}` references; an unset one (without a default) is
    /// an error of the server.
    fn expand(&mut self, field: &str, text: &str) -> String {
        if !self.rights.variables {
            return text.to_string();
        }
        if text
            .match_indices("${")
            .any(|(at, _)| !text[at..].contains('}'))
        {
            self.problem(
                Severity::Warning,
                field,
                "`${` without a closing `}`: kept as written".to_string(),
            );
        }
        let r = interpolate(text, self.env);
        // Started with the literal `${NAME}` instead, a server would fail in
        // ways that hide the cause (a token that is not one, a path that is not there).
        for name in r.missing {
            self.error(
                field,
                format!(
                    "environment variable {name} is not set, so this server is not started; set it, or write ${{{name}:-default}}"
                ),
            );
        }
        r.value
    }

    fn string(&mut self, key: &str) -> Option<String> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(self.expand(key, s)),
            Some(other) => {
                self.error(key, format!("expected a string, found {}", kind(other)));
                None
            }
        }
    }

    fn secret_string(&mut self, key: &str) -> Option<String> {
        match self.obj.get(key) {
            Some(Value::String(s)) => Some(self.expand_secret(key, s)),
            _ => self.string(key),
        }
    }

    fn raw_string(&mut self, key: &str) -> Option<String> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.error(key, format!("expected a string, found {}", kind(other)));
                None
            }
        }
    }

    fn strings(&mut self, key: &str, expand: bool) -> Vec<String> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let field = format!("{key}[{i}]");
                    match item {
                        Value::String(s) if expand => out.push(self.expand(&field, s)),
                        Value::String(s) => out.push(s.clone()),
                        other => {
                            self.error(&field, format!("expected a string, found {}", kind(other)))
                        }
                    }
                }
                out
            }
            Some(other) => {
                self.error(
                    key,
                    format!("expected an array of strings, found {}", kind(other)),
                );
                Vec::new()
            }
        }
    }

    /// A string map of values that may be secret commands; numbers and
    /// booleans are accepted and written as text.
    fn string_map(&mut self, key: &str) -> Vec<(String, String)> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => {
                let mut out = Vec::with_capacity(map.len());
                for (k, v) in map {
                    let field = format!("{key}.{k}");
                    let text = match v {
                        Value::String(s) => self.expand_secret(&field, s),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        other => {
                            self.error(&field, format!("expected a string, found {}", kind(other)));
                            continue;
                        }
                    };
                    out.push((k.clone(), text));
                }
                out
            }
            Some(other) => {
                self.error(
                    key,
                    format!("expected an object of strings, found {}", kind(other)),
                );
                Vec::new()
            }
        }
    }

    fn bool(&mut self, key: &str) -> Option<bool> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.error(
                    key,
                    format!("expected true or false, found {}", kind(other)),
                );
                None
            }
        }
    }

    fn number(&mut self, key: &str, min: f64) -> Option<f64> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_f64() {
                Some(v) if v >= min && v.is_finite() => Some(v),
                _ => {
                    self.error(
                        key,
                        format!("must be a number of at least {min}, found {n}"),
                    );
                    None
                }
            },
            Some(other) => {
                self.error(key, format!("expected a number, found {}", kind(other)));
                None
            }
        }
    }
}

/// A secret of the user's `serve` settings, `${VAR}`s from `env` (a
/// `!command` kept to run when serving starts), and the variables that are
/// not set.
pub(super) fn serve_secret(text: &str, env: &Environment) -> (String, Vec<String>) {
    let mut missing = Vec::new();
    let value = secret_text(text, true, |t| {
        let r = interpolate(t, env);
        missing.extend(r.missing);
        r.value
    });
    (value, missing)
}

/// A secret's text with `${VAR}` references replaced by `expand`. Only the
/// config text decides what runs: a `!command` is kept as written (the shell
/// expands its own variables) when `commands` allows them, and a value that
/// starts with `!` only through a variable stays a literal (`!!`).
fn secret_text(text: &str, commands: bool, mut expand: impl FnMut(&str) -> String) -> String {
    let literal = |value: String| {
        if value.starts_with('!') {
            format!("!{value}")
        } else {
            value
        }
    };
    if !commands {
        return literal(expand(text));
    }
    if let Some(rest) = text.strip_prefix("!!") {
        return format!("!!{}", expand(rest));
    }
    if text.starts_with('!') {
        return text.to_string();
    }
    literal(expand(text))
}

pub use super::jsonc::kind;

/// Validates one server definition. Returns `None` (after reporting why) when
/// the server cannot be used. What it may do is its provenance's
/// ([`super::settings::PROVENANCE`]); mcpw's own format (the user's file, a
/// project's) adds warnings for unknown fields.
pub fn server(
    name: &str,
    value: &Value,
    file: &Path,
    env: &Environment,
    from: Provenance,
    diags: &mut Vec<Diagnostic>,
) -> Option<ServerConfig> {
    let obj = definition(name, value, file, diags)?;
    let mut r = Reader {
        obj,
        file,
        server: name,
        env,
        diags,
        failed: false,
        rights: super::settings::rights(from),
    };
    if matches!(from, Provenance::User | Provenance::Project) {
        for key in obj.keys().filter(|k| super::fields::named(k).is_none()) {
            r.problem(Severity::Warning, key, "unknown field, ignored".into());
        }
    }
    let transport = transport(&mut r);
    rest(&mut r, transport)
}

/// The definition as an object, once its name is valid; else why not.
fn definition<'a>(
    name: &str,
    value: &'a Value,
    file: &Path,
    diags: &mut Vec<Diagnostic>,
) -> Option<&'a Map<String, Value>> {
    if !valid_server_name(name) {
        diags.push(Diagnostic::server(
            Severity::Error,
            file,
            name,
            None,
            "invalid server name: use 1 to 100 characters from A-Z a-z 0-9 _ . -".into(),
        ));
        return None;
    }
    let Some(obj) = value.as_object() else {
        diags.push(Diagnostic::server(
            Severity::Error,
            file,
            name,
            None,
            format!("expected an object, found {}", kind(value)),
        ));
        return None;
    };
    Some(obj)
}

/// How mcpw reaches the server: `type`, `command` and `url` (a server is
/// either stdio or HTTP), then the fields of that transport.
fn transport(r: &mut Reader<'_>) -> Option<Transport> {
    // `"component": null` is no component, as a null field is absent
    // elsewhere: the server then needs `command` or `url`.
    if r.obj.get("component").is_some_and(|c| !c.is_null()) {
        return component(r);
    }
    let ty = r.raw_string("type");
    let command = r.string("command");
    let url = r.string("url");
    match (ty.as_deref(), command, url) {
        (_, Some(_), Some(_)) => {
            r.error("url", "both `command` and `url` are set: a server is either stdio (`command`) or HTTP (`url`)");
            None
        }
        (None | Some("stdio"), Some(command), None) => Some(Transport::Stdio {
            command,
            args: r.strings("args", true),
            env: r.string_map("env"),
            cwd: r.string("cwd"),
        }),
        (Some("stdio"), None, _) => {
            r.error("command", "a stdio server needs `command`");
            None
        }
        (Some(t @ ("http" | "sse" | "streamable-http" | "streamableHttp")), _, url) => {
            let kind = if t == "sse" {
                HttpKind::Sse
            } else {
                HttpKind::Auto
            };
            match url {
                Some(url) => http(r, url, kind),
                None => {
                    r.error("url", format!("a {t} server needs `url`"));
                    None
                }
            }
        }
        (None, None, Some(url)) => http(r, url, HttpKind::Auto),
        (None, None, None) => {
            r.error(
                "command",
                "needs `command` (a stdio server) or `url` (an HTTP server)",
            );
            None
        }
        (Some(other), _, _) => {
            r.error(
                "type",
                format!("unknown type {other:?}: use \"stdio\", \"http\" or \"sse\""),
            );
            None
        }
    }
}

/// Reads the fields besides the transport and builds the server's config. They
/// are read even when the transport is bad, so that every problem of the
/// server is reported at once.
fn rest(r: &mut Reader<'_>, transport: Option<Transport>) -> Option<ServerConfig> {
    let enabled = match (r.bool("enabled"), r.bool("disabled")) {
        (Some(e), _) => e,
        (None, Some(d)) => !d,
        (None, None) => true,
    };
    let auth = auth(r);
    let bearer_token = r.secret_string("bearerToken");
    let bearer_token_env = r.raw_string("bearerTokenEnv");
    let lifecycle = lifecycle(r);
    let idle_timeout = r.number("idleTimeout", 0.0);
    let startup_timeout_ms = r
        .number("startupTimeoutMs", 1.0)
        .map(|v| v as u64)
        .unwrap_or(DEFAULT_STARTUP_TIMEOUT_MS);
    let call_timeout_ms = r.number("callTimeoutMs", 1.0).map(|v| v as u64);
    let expose_resources = r.bool("exposeResources").unwrap_or(true);
    let direct_tools = direct_tools(r);
    let exclude_tools = r.strings("excludeTools", false);
    let include_tools = r.strings("includeTools", false);
    let debug = r.bool("debug").unwrap_or(false);
    let search_keywords = r.strings("searchKeywords", false);
    let oauth = oauth::oauth(r);
    let approve = r.rule("approve", super::ApproveRule::parse);
    let rate_limit = r.rule("rateLimit", super::rate::RateRule::parse);
    let result_budget = r.rule("resultBudget", super::results::server_budget);
    let result_format = r.rule("resultFormat", super::results::server_format);

    let config = ServerConfig {
        enabled,
        transport: transport?,
        auth,
        bearer_token,
        bearer_token_env,
        lifecycle,
        idle_timeout,
        startup_timeout_ms,
        call_timeout_ms,
        expose_resources,
        direct_tools,
        exclude_tools,
        include_tools,
        debug,
        search_keywords,
        oauth,
        approve,
        rate_limit,
        result_budget,
        result_format,
    };
    oauth::per_person_fits(r, &config);
    (!r.failed).then_some(config)
}

/// `auth`: `"bearer"`, `"oauth"`, or nothing (`false` or absent).
fn auth(r: &mut Reader<'_>) -> Option<String> {
    match r.obj.get("auth") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => None,
        Some(Value::String(s)) if s == "bearer" || s == "oauth" => Some(s.clone()),
        Some(other) => {
            r.error(
                "auth",
                format!("expected \"bearer\", \"oauth\" or false, found {other}"),
            );
            None
        }
    }
}

/// `lifecycle`: when the server starts and stops; the default when absent or unknown.
fn lifecycle(r: &mut Reader<'_>) -> Lifecycle {
    match r.raw_string("lifecycle") {
        None => Lifecycle::default(),
        Some(s) => Lifecycle::parse(&s).unwrap_or_else(|| {
            r.error(
                "lifecycle",
                format!("unknown lifecycle {s:?}: use \"lazy\", \"eager\" or \"keep-alive\""),
            );
            Lifecycle::default()
        }),
    }
}

/// `directTools`: all of the server's tools, none, or those named.
fn direct_tools(r: &mut Reader<'_>) -> DirectTools {
    match r.obj.get("directTools") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => DirectTools::None,
        Some(Value::Bool(true)) => DirectTools::All,
        Some(Value::Array(_)) => DirectTools::Only(r.strings("directTools", false)),
        Some(other) => {
            r.error(
                "directTools",
                format!(
                    "expected true, false or a list of tool names, found {}",
                    kind(other)
                ),
            );
            DirectTools::None
        }
    }
}

/// A component server: its file (relative to the config file's folder) and
/// its permissions.
fn component(r: &mut Reader<'_>) -> Option<Transport> {
    for other in ["command", "url"] {
        if r.obj.contains_key(other) {
            r.error(other, format!("both `component` and `{other}` are set: a server is a component, a command or a URL"));
            return None;
        }
    }
    let (source, sha256) = component_source(r)?;
    let mut problems = Vec::new();
    let granted = r.obj.get("permissions");
    let mut expand = |field: &str, text: &str, secret: bool| match secret {
        true => r.expand_secret(field, text),
        false => r.expand(field, text),
    };
    let permissions = super::permissions::parse(granted, &mut expand, &mut problems);
    for (field, why) in problems {
        r.error(&field, why);
    }
    Some(Transport::Component {
        component: source,
        sha256,
        permissions,
    })
}

/// Whether an OCI reference names its manifest's digest.
fn pinned_by_digest(reference: &str) -> bool {
    reference
        .rsplit_once("@sha256:")
        .is_some_and(|(_, d)| d.len() == 64 && d.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Where a component comes from: a file (relative to the config file's
/// folder), an `https://` URL with its `sha256`, or an `oci://` reference
/// pinned by digest.
fn component_source(r: &mut Reader<'_>) -> Option<(String, Option<String>)> {
    let file = r.string("component")?;
    let sha256 = r.string("sha256");
    let hex = |d: &str| d.len() == 64 && d.chars().all(|c| c.is_ascii_hexdigit());
    if sha256.as_deref().is_some_and(|d| !hex(d)) {
        r.error("sha256", "expected the 64 hex digits of a sha256 digest");
        return None;
    }
    match file.split_once("://") {
        Some(("https", _)) if sha256.is_none() => {
            let why = format!("{file} is fetched: name its `sha256`, so that nothing else runs");
            r.error("sha256", why);
            None
        }
        Some(("https", _)) => Some((file, sha256)),
        Some(("oci", reference)) if !pinned_by_digest(reference) => {
            let why =
                format!("{file}: pin it by the digest of its manifest (…@sha256:<64 hex digits>)");
            r.error("component", why);
            None
        }
        Some(("oci", _)) => Some((file, None)),
        Some(_) => {
            let why =
                format!("{file}: a component is a file, an https:// URL or an oci:// reference");
            r.error("component", why);
            None
        }
        None => {
            let folder = r.file.parent().unwrap_or(std::path::Path::new("."));
            Some((folder.join(&file).display().to_string(), sha256))
        }
    }
}

fn http(r: &mut Reader<'_>, url: String, kind: HttpKind) -> Option<Transport> {
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    if !scheme_ok {
        r.error(
            "url",
            format!(
                "{} is not an http:// or https:// URL",
                super::show::mask_url(&url)
            ),
        );
        return None;
    }
    Some(Transport::Http {
        url,
        headers: r.string_map("headers"),
        kind,
    })
}

#[cfg(test)]
mod properties {
    //! Property tests: arbitrary server definitions and settings.

    use super::*;
    use proptest::prelude::*;

    use crate::test_props::config;

    const SETTINGS: &[&str] = &[
        "toolPrefix",
        "idleTimeout",
        "exposure",
        "callTimeoutMs",
        "maxRequestsInFlight",
        "toolSearchBudget",
        "autoExposureBudget",
        "codeMode",
        "scriptLimits",
        "searchProfile",
        "credentialStore",
        "sharedState",
        "sharedStateKey",
        "captureStats",
        "toonEncode",
        "resultBudget",
        "resultFormat",
        "resultStore",
        "approve",
        "approveWithoutClient",
        "audit",
        "rateLimit",
        "guards",
        "guardFailure",
        "projectServers",
        "plugins",
        "bogus",
    ];

    const PLUGIN_KEYS: &[&str] = &[
        "naming",
        "directTools",
        "ranking",
        "grants",
        "limits",
        "memoryMiB",
        "deadlineMs",
        "catalog",
        "calls",
        "bogus",
    ];

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "",
                "stdio",
                "http",
                "sse",
                "streamable-http",
                "streamableHttp",
                "bearer",
                "oauth",
                "lazy",
                "eager",
                "keep-alive",
                "server",
                "short",
                "none",
                "proxy",
                "direct",
                "keyring",
                "file",
                "authorization_code",
                "client_credentials",
                "RS256",
                "npx",
                "http://h",
                "https://u:p@h:1/p?k=v&t=${A}",
                "https://h?",
                "ftp://u:p@h/x?a=b",
                "://@/?=&",
                "?@",
                "${A}",
                "${NOPE}",
                "${A:-d}",
                "${NOPE:-}",
                "$env:A",
                "$env:NOPE",
                "${",
                "${A",
                "!cmd ${A}",
                "!!${A}",
                "!",
                "é",
            ])
            .prop_map(String::from),
            "[a-z${}:!/@?=&\\-]{0,10}",
            any::<String>(),
        ]
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            prop::sample::select(vec![0i64, 1, -1, 80, 65535, 65536, 4096, 600_000])
                .prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |f| f.is_finite())
                .prop_map(Value::from),
            text().prop_map(Value::String),
        ]
    }

    /// A value for a field, or any JSON up to a small depth, keys drawn from `keys`.
    fn value(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
        let key = prop_oneof![3 => prop::sample::select(keys).prop_map(String::from), 1 => text()];
        scalar().prop_recursive(3, 24, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Strings without references to unset variables.
    fn good_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9 ./_-]{0,10}",
            prop::sample::select(vec![
                "${A}",
                "${NOPE:-d}",
                "!cmd",
                "!!x",
                "$env:A",
                "${EMPTY}"
            ])
            .prop_map(String::from),
        ]
    }

    fn good_strings() -> impl Strategy<Value = Value> {
        prop::collection::vec(good_text().prop_map(Value::String), 0..4).prop_map(Value::Array)
    }

    fn good_map() -> impl Strategy<Value = Value> {
        prop::collection::vec(
            (
                "[A-Z_]{1,6}",
                prop_oneof![
                    good_text().prop_map(Value::String),
                    any::<i32>().prop_map(Value::from),
                    any::<bool>().prop_map(Value::Bool),
                ],
            ),
            0..4,
        )
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
    }

    fn one_of(values: &[Value]) -> BoxedStrategy<Value> {
        prop::sample::select(values.to_vec()).boxed()
    }

    /// A value of the right type for a field (mostly valid).
    fn typed(field: &str) -> BoxedStrategy<Value> {
        use super::super::fields::{Kind, named};
        use serde_json::json;
        match named(field).map(|f| f.kind).expect("a field of the table") {
            Kind::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
            Kind::Text => good_text().prop_map(Value::String).boxed(),
            Kind::Url => one_of(&[
                json!("https://h/mcp"),
                json!("http://u:p@h:1/?k=v"),
                json!("https://${A}/"),
            ]),
            Kind::TransportType => one_of(&[
                json!("stdio"),
                json!("http"),
                json!("sse"),
                json!("streamable-http"),
            ]),
            Kind::Strings => good_strings().boxed(),
            Kind::Map => good_map().boxed(),
            Kind::Auth => one_of(&[json!("bearer"), json!("oauth"), json!(false)]),
            Kind::Lifecycle => one_of(&[json!("lazy"), json!("eager"), json!("keep-alive")]),
            Kind::Number => (1u32..100_000).prop_map(Value::from).boxed(),
            Kind::DirectTools => {
                prop_oneof![any::<bool>().prop_map(Value::Bool), good_strings()].boxed()
            }
            Kind::OAuth => prop_oneof![
                Just(json!(false)),
                Just(json!(true)),
                Just(json!({"clientId": "c", "clientSecret": "${A}", "scope": "s"})),
                Just(
                    json!({"clientId": "c", "grantType": "client_credentials", "privateKey": "!k",
                    "signingAlgorithm": "ES256"})
                ),
                Just(json!({"clientMetadataUrl": "https://h/m", "callbackPort": 8080})),
                Just(
                    json!({"clientId": "c", "grantType": "id-jag", "identityProvider":
                    {"issuer": "https://i", "clientId": "i", "idToken": "!t"}})
                ),
            ]
            .boxed(),
            Kind::Rate => one_of(&[json!("10/min"), json!({"create_*": "1/s"})]),
            Kind::Budget => one_of(&[json!(0), json!(2000), json!({"read_*": 500})]),
            Kind::Format => one_of(&[json!("toon"), json!({"list_*": "csv"})]),
            Kind::Permissions => one_of(&[
                json!({}),
                json!({"files": {"/tmp": "read"}, "network": ["h:1"], "env": {"A": "${A}"}}),
                json!({"memoryMiB": 64, "timeoutMs": 2000}),
            ]),
            Kind::Approve => one_of(&[
                json!("writes"),
                json!("none"),
                json!({"delete_*": "all", "*": "destructive"}),
            ]),
        }
    }

    /// A definition that is mostly right: a transport and fields of the right
    /// type, sometimes one of them replaced by anything.
    fn good_definition() -> impl Strategy<Value = Value> {
        let transport = prop_oneof![
            Just(serde_json::json!({"command": "x"})),
            Just(serde_json::json!({"url": "https://h"})),
            Just(serde_json::json!({"type": "sse", "url": "http://h"})),
        ];
        let fields = prop::collection::vec(
            prop::sample::select(super::super::fields::names())
                .prop_flat_map(|f| (Just(f.to_string()), typed(f))),
            0..6,
        );
        let spoil = proptest::option::weighted(
            0.3,
            (
                prop::sample::select(super::super::fields::names()),
                value(super::oauth::FIELDS),
            ),
        );
        (transport, fields, spoil).prop_map(|(mut base, fields, spoil)| {
            let obj = base.as_object_mut().unwrap();
            for (k, v) in fields {
                obj.insert(k, v);
            }
            if let Some((k, v)) = spoil {
                obj.insert(k.to_string(), v);
            }
            base
        })
    }

    /// A server definition: mostly objects of known fields.
    fn definition() -> impl Strategy<Value = Value> {
        let field = prop_oneof![
            4 => prop::sample::select(super::super::fields::names()).prop_map(String::from),
            1 => text(),
        ];
        let object = prop::collection::vec((field, value(super::oauth::FIELDS)), 0..10)
            .prop_map(|kv| Value::Object(kv.into_iter().collect()));
        prop_oneof![4 => good_definition(), 3 => object, 1 => value(super::super::fields::names())]
    }

    fn server_name() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => "[A-Za-z0-9_.-]{1,12}",
            1 => any::<String>(),
            1 => prop::sample::select(vec!["", "a b", "x/y", "é"]).prop_map(String::from),
            1 => Just("a".repeat(101)),
        ]
    }

    fn environment() -> Environment {
        Environment::from_pairs([("A", "value"), ("EMPTY", ""), ("BANG", "!rm -rf /")])
    }

    /// A null `component` is no component: the server is not usable, and
    /// says why, from any source.
    #[test]
    fn a_null_component_is_an_error_that_names_the_server() {
        let file = Path::new("/nonexistent/mcp.json");
        let value = serde_json::json!({"component": null});
        for from in [Provenance::User, Provenance::UserClient] {
            let mut diags = Vec::new();
            let result = server("a", &value, file, &environment(), from, &mut diags);
            assert!(result.is_none());
            let errors: Vec<_> = diags
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .collect();
            assert!(!errors.is_empty(), "{from:?}: {diags:?}");
            assert!(errors.iter().all(|d| d.server.as_deref() == Some("a")));
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn every_server_diagnostic_names_the_server(
            name in server_name(),
            value in definition(),
            strict in any::<bool>(),
        ) {
            let file = Path::new("/nonexistent/mcp.json");
            let mut diags = Vec::new();
            let from = if strict { Provenance::User } else { Provenance::UserClient };
            let result = server(&name, &value, file, &environment(), from, &mut diags);
            for d in &diags {
                prop_assert_eq!(d.server.as_deref(), Some(name.as_str()), "{:?}", d);
                prop_assert_eq!(&d.file, file);
                prop_assert_eq!((d.line, d.column), (None, None));
                if valid_server_name(&name) && value.is_object() {
                    prop_assert!(d.field.is_some(), "{:?}", d);
                }
            }
            // A server is usable exactly when nothing about it is an error.
            let errors = diags.iter().filter(|d| d.severity == Severity::Error).count();
            prop_assert_eq!(result.is_some(), errors == 0, "{:?}", diags);
            if !valid_server_name(&name) || !value.is_object() {
                prop_assert_eq!(errors, 1);
            }
        }

        #[test]
        fn settings_diagnostics_name_a_setting(
            settings in prop_oneof![
                4 => prop::collection::vec(
                    (
                        prop::sample::select(SETTINGS).prop_map(String::from),
                        value(PLUGIN_KEYS),
                    ),
                    0..8,
                )
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                1 => value(SETTINGS),
            ],
        ) {
            let file = Path::new("/nonexistent/mcp.json");
            let mut diags = Vec::new();
            let kept = super::settings(&settings, file, &mut diags);
            for d in &diags {
                prop_assert_eq!(d.server.as_deref(), None);
                prop_assert_eq!(&d.file, file);
                let field = d.field.as_deref().unwrap_or_default();
                prop_assert!(field.starts_with("settings"), "{:?}", d);
            }
            // Only keys that were there are kept.
            let given = settings.as_object().cloned().unwrap_or_default();
            for key in kept.keys() {
                prop_assert!(given.contains_key(key));
            }
        }
    }
}
