//! `serve.oauth`: the gateway as an OAuth 2.1 protected resource. A problem
//! names the file and the field (`serve.oauth.issuers[0].issuer`); any error
//! marks `serve` broken, so that serving refuses to start rather than admit
//! clients otherwise than written.

use super::kind;
use crate::config::model::{GroupPolicy, OAuthIssuer, ServeOAuth};
use crate::config::{Diagnostic, Severity};
use crate::paths::Environment;
use serde_json::{Map, Value};
use std::path::Path;

mod introspection;
mod sign_in;

const FIELDS: &[&str] = &["resource", "issuers", "scopes", "groups"];
const ISSUER_FIELDS: &[&str] = &[
    "issuer",
    "jwksUri",
    "groupsClaim",
    "audience",
    "introspection",
    "signIn",
];

/// Reads `serve.oauth`, collecting problems; `None` when it has errors.
pub(super) fn oauth(
    value: &Value,
    (file, env): (&Path, &Environment),
    diags: &mut Vec<Diagnostic>,
) -> Option<ServeOAuth> {
    let mut r = Reader {
        file,
        env,
        diags,
        failed: false,
    };
    let Some(obj) = value.as_object() else {
        r.error(
            "serve.oauth",
            format!("expected an object, found {}", kind(value)),
        );
        return None;
    };
    r.unknown(obj, FIELDS, "serve.oauth");
    let resource = r
        .url(obj.get("resource"), "serve.oauth.resource", true)
        .map(|u| u.trim_end_matches('/').to_string());
    let issuers = r.issuers(obj.get("issuers"));
    if issuers.iter().filter(|i| i.introspection.is_some()).count() > 1 {
        // An opaque token does not say whose it is: asking several issuers
        // would send one's tokens to another.
        r.error(
            "serve.oauth.issuers",
            "more than one issuer has `introspection`: an opaque token does not say whose it is, so give it to one".into(),
        );
    }
    let scopes = r
        .strings(obj.get("scopes"), "serve.oauth.scopes")
        .unwrap_or_default();
    let groups = r.groups(obj.get("groups"), &issuers);
    match (r.failed, resource) {
        (false, Some(resource)) => Some(ServeOAuth {
            resource,
            issuers,
            scopes,
            groups,
        }),
        _ => None,
    }
}

struct Reader<'a> {
    file: &'a Path,
    env: &'a Environment,
    diags: &'a mut Vec<Diagnostic>,
    failed: bool,
}

impl Reader<'_> {
    fn error(&mut self, field: &str, message: String) {
        self.failed = true;
        self.diags.push(Diagnostic::field(
            Severity::Error,
            self.file,
            field.into(),
            message,
        ));
    }

    fn unknown(&mut self, obj: &Map<String, Value>, known: &[&str], at: &str) {
        for key in obj.keys().filter(|k| !known.contains(&k.as_str())) {
            self.diags.push(Diagnostic::field(
                Severity::Warning,
                self.file,
                format!("{at}.{key}"),
                "unknown field, ignored".into(),
            ));
        }
    }

    /// An `https` URL (plain `http` only on this machine's loopback).
    fn url(&mut self, value: Option<&Value>, field: &str, required: bool) -> Option<String> {
        let text = match value {
            Some(Value::String(s)) => s.trim(),
            None | Some(Value::Null) if !required => return None,
            None | Some(Value::Null) => {
                self.error(field, "is required: the URL clients reach it at".into());
                return None;
            }
            Some(other) => {
                self.error(field, format!("expected a URL, found {}", kind(other)));
                return None;
            }
        };
        if !super::https_or_loopback(text) {
            self.error(
                field,
                format!("{text:?} is not an https URL (plain http only on loopback)"),
            );
            return None;
        }
        // As written: an issuer is compared with its tokens' `iss` exactly.
        Some(text.to_string())
    }

    fn strings(&mut self, value: Option<&Value>, field: &str) -> Option<Vec<String>> {
        let items = match value {
            None | Some(Value::Null) => return None,
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.error(
                    field,
                    format!("expected a list of strings, found {}", kind(other)),
                );
                return None;
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item.as_str().filter(|s| !s.trim().is_empty()) {
                Some(s) => out.push(s.to_string()),
                None => self.error(
                    &format!("{field}[{i}]"),
                    format!("expected a string, found {item}"),
                ),
            }
        }
        Some(out)
    }

    fn issuers(&mut self, value: Option<&Value>) -> Vec<OAuthIssuer> {
        let field = "serve.oauth.issuers";
        let items = match value {
            Some(Value::Array(items)) if !items.is_empty() => items,
            _ => {
                self.error(
                    field,
                    "needs at least one issuer: `[{\"issuer\": \"https://…\"}]`".into(),
                );
                return Vec::new();
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let at = format!("{field}[{i}]");
            let Some(obj) = item.as_object() else {
                self.error(&at, format!("expected an object, found {}", kind(item)));
                continue;
            };
            self.unknown(obj, ISSUER_FIELDS, &at);
            let issuer = self.url(obj.get("issuer"), &format!("{at}.issuer"), true);
            let jwks_uri = self.url(obj.get("jwksUri"), &format!("{at}.jwksUri"), false);
            let groups_claim = match obj.get("groupsClaim") {
                None | Some(Value::Null) => "groups".to_string(),
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(other) => {
                    self.error(
                        &format!("{at}.groupsClaim"),
                        format!("expected a claim name, found {other}"),
                    );
                    continue;
                }
            };
            let audience = match obj.get("audience") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
                Some(other) => {
                    self.error(
                        &format!("{at}.audience"),
                        format!("expected the audience its tokens name, found {other}"),
                    );
                    None
                }
            };
            let introspection = obj
                .get("introspection")
                .filter(|v| !v.is_null())
                .and_then(|v| self.introspection(v, &format!("{at}.introspection")));
            let sign_in = obj
                .get("signIn")
                .filter(|v| !v.is_null())
                .and_then(|v| self.sign_in(v, &format!("{at}.signIn")));
            if let Some(issuer) = issuer {
                out.push(OAuthIssuer {
                    issuer,
                    jwks_uri,
                    groups_claim,
                    audience,
                    introspection,
                    sign_in,
                });
            }
        }
        out
    }

    /// A group's `issuers`, each one of `serve.oauth.issuers`. Without it,
    /// and with several issuers, each of them can put anyone in the group:
    /// a warning says so.
    fn group_issuers(
        &mut self,
        value: Option<&Value>,
        at: &str,
        issuers: &[OAuthIssuer],
    ) -> Option<Vec<String>> {
        let field = format!("{at}.issuers");
        let Some(listed) = self.strings(value, &field) else {
            if issuers.len() > 1 {
                self.diags.push(Diagnostic::field(
                    Severity::Warning,
                    self.file,
                    at.into(),
                    "every issuer of `serve.oauth.issuers` can put a principal in this group by naming it: list in `issuers` those trusted to".into(),
                ));
            }
            return None;
        };
        if listed.is_empty() {
            self.error(
                &field,
                "lists no issuer, so admits no one: name those trusted, or leave it out for any"
                    .into(),
            );
        }
        for (i, issuer) in listed.iter().enumerate() {
            if !issuers.iter().any(|known| known.issuer == *issuer) {
                self.error(
                    &format!("{field}[{i}]"),
                    format!("{issuer:?} is not an issuer of `serve.oauth.issuers` (written exactly as there)"),
                );
            }
        }
        Some(listed)
    }

    /// `value` read by `parse`, its error reported at `field`.
    fn rule<T>(
        &mut self,
        value: Option<&Value>,
        field: &str,
        parse: impl Fn(&Value) -> Result<T, String>,
    ) -> Option<T> {
        match parse(value.filter(|v| !v.is_null())?) {
            Ok(rule) => Some(rule),
            Err(why) => {
                self.error(field, why);
                None
            }
        }
    }

    fn groups(&mut self, value: Option<&Value>, issuers: &[OAuthIssuer]) -> Vec<GroupPolicy> {
        let obj = match value {
            None | Some(Value::Null) => return Vec::new(),
            Some(Value::Object(obj)) => obj,
            Some(other) => {
                self.error(
                    "serve.oauth.groups",
                    format!("expected an object of groups, found {}", kind(other)),
                );
                return Vec::new();
            }
        };
        let mut out = Vec::with_capacity(obj.len());
        for (name, policy) in obj {
            let at = format!("serve.oauth.groups.{name}");
            if name.is_empty() || name.contains(',') {
                self.error(&at, "a group's name is not empty and has no `,`".into());
                continue;
            }
            let Some(p) = policy.as_object() else {
                self.error(&at, format!("expected an object, found {}", kind(policy)));
                continue;
            };
            self.unknown(
                p,
                &["servers", "tools", "approve", "rateLimit", "issuers"],
                &at,
            );
            let servers = self.strings(p.get("servers"), &format!("{at}.servers"));
            let tools = self.strings(p.get("tools"), &format!("{at}.tools"));
            for (i, glob) in tools.iter().flatten().enumerate() {
                if let Some(why) = crate::config::approve::tool_glob_problem(glob) {
                    self.error(&format!("{at}.tools[{i}]"), why);
                }
            }
            let approve = self.rule(
                p.get("approve"),
                &format!("{at}.approve"),
                crate::config::ApproveRule::parse,
            );
            let rate_limit = self.rule(
                p.get("rateLimit"),
                &format!("{at}.rateLimit"),
                crate::config::rate::Rate::from_value,
            );
            let trusted = self.group_issuers(p.get("issuers"), &at, issuers);
            out.push(GroupPolicy {
                name: name.clone(),
                servers,
                tools,
                approve,
                rate_limit,
                issuers: trusted,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::config::validate::serve;
    use crate::config::{Diagnostic, Severity};
    use crate::paths::Environment;
    use serde_json::{Value, json};
    use std::path::Path;

    fn check(oauth: Value) -> (crate::config::Serve, Vec<Diagnostic>) {
        let mut diags = Vec::new();
        let file = Path::new("/home/me/mcp.json");
        let s = serve(
            &json!({"oauth": oauth}),
            file,
            &Environment::from_pairs([("IDP_SECRET", "s3cr3t")]),
            &mut diags,
        );
        (s, diags)
    }

    #[test]
    fn a_valid_oauth_keeps_its_resource_issuers_scopes_and_groups() {
        let (serve, diags) = check(json!({
            "resource": "https://mcp.example.com/mcp/",
            "issuers": [{"issuer": "https://idp.example.com", "groupsClaim": "roles"},
                        {"issuer": "http://127.0.0.1:9000", "jwksUri": "http://127.0.0.1:9000/jwks"},
                        {"issuer": "https://sts.windows.net/tenant/", "audience": "api-client-id"}],
            "scopes": ["mcp"],
            "groups": {"ci": {"servers": ["time"]},
                       "admins": {"issuers": ["https://idp.example.com"]}},
        }));
        // `ci` may be named by any of the three issuers: a warning says so.
        let fields: Vec<_> = diags
            .iter()
            .map(|d| (d.severity, d.field.as_deref()))
            .collect();
        assert_eq!(
            fields,
            [(Severity::Warning, Some("serve.oauth.groups.ci"))],
            "{diags:?}"
        );
        let oauth = serve.oauth.unwrap();
        assert_eq!(oauth.resource, "https://mcp.example.com/mcp");
        assert_eq!(
            oauth.issuers[2].issuer, "https://sts.windows.net/tenant/",
            "as written"
        );
        assert_eq!(oauth.issuers[2].audience.as_deref(), Some("api-client-id"));
        assert_eq!(oauth.issuers[0].groups_claim, "roles");
        assert_eq!(oauth.issuers[1].groups_claim, "groups");
        assert_eq!(
            oauth.issuers[1].jwks_uri.as_deref(),
            Some("http://127.0.0.1:9000/jwks")
        );
        assert_eq!(oauth.scopes, ["mcp"]);
        let groups: Vec<_> = oauth
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.servers.clone()))
            .collect();
        assert_eq!(
            groups,
            [("ci", Some(vec!["time".to_string()])), ("admins", None)]
        );
        let trusted = oauth.groups[1].issuers.clone();
        assert_eq!(trusted, Some(vec!["https://idp.example.com".to_string()]));
        assert!(!serve.broken);
        // An issuer a group names must be one of them, written as there.
        let (elsewhere, diags) = check(json!({
            "resource": "https://mcp.example.com/mcp",
            "issuers": [{"issuer": "https://idp.example.com"}],
            "groups": {"admins": {"issuers": ["https://idp.example.com/"]}},
        }));
        let fields: Vec<_> = diags.iter().map(|d| d.field.as_deref()).collect();
        assert_eq!(
            fields,
            [Some("serve.oauth.groups.admins.issuers[0]")],
            "{diags:?}"
        );
        assert!(elsewhere.broken && elsewhere.oauth.is_none());
        let (nobody, diags) = check(json!({
            "resource": "https://mcp.example.com/mcp",
            "issuers": [{"issuer": "https://idp.example.com"}],
            "groups": {"admins": {"issuers": []}},
        }));
        let fields: Vec<_> = diags.iter().map(|d| d.field.as_deref()).collect();
        assert_eq!(
            fields,
            [Some("serve.oauth.groups.admins.issuers")],
            "{diags:?}"
        );
        assert!(nobody.broken);
    }

    #[test]
    fn a_broken_oauth_names_each_field_and_breaks_serve() {
        let (serve, diags) = check(json!({
            "resource": "http://mcp.example.com/mcp",
            "issuers": [{"issuer": 7}],
            "groups": {"ci": {"servers": "time"}},
        }));
        let errors: Vec<(String, String)> = diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| (d.field.clone().unwrap_or_default(), d.message.clone()))
            .collect();
        let fields: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "serve.oauth.resource",
                "serve.oauth.issuers[0].issuer",
                "serve.oauth.groups.ci.servers"
            ],
            "{errors:?}"
        );
        assert!(errors[0].1.contains("not an https URL"), "{errors:?}");
        assert!(serve.broken && serve.oauth.is_none());
        let (serve, diags) = check(json!({"resource": "https://m.example.com/mcp"}));
        assert!(serve.broken);
        assert!(
            diags
                .iter()
                .any(|d| d.field.as_deref() == Some("serve.oauth.issuers")),
            "{diags:?}"
        );
    }

    /// The gateway's own client for checking whose browser signs in:
    /// read with its secret, each mistake named under `signIn`.
    #[test]
    fn an_issuers_sign_in_client_keeps_its_id_and_secret_and_names_each_bad_field() {
        use crate::config::TokenSource;
        let issuer = |sign_in: Value| {
            json!({"resource": "https://m.example.com/mcp",
                   "issuers": [{"issuer": "https://idp.example.com", "signIn": sign_in}]})
        };
        let (serve, diags) = check(issuer(json!({"clientId": "gw", "clientSecretEnv": "GW"})));
        assert!(diags.is_empty(), "{diags:?}");
        let client = serve.oauth.unwrap().issuers[0].sign_in.clone().unwrap();
        assert_eq!(client.client_id, "gw");
        assert_eq!(client.secret, TokenSource::Env("GW".into()));
        let at = "serve.oauth.issuers[0].signIn";
        for (bad, field) in [
            (json!({"clientSecret": "x"}), format!("{at}.clientId")),
            (json!({"clientId": "gw"}), format!("{at}.clientSecret")),
            (json!("gw"), at.to_string()),
        ] {
            let (serve, diags) = check(issuer(bad.clone()));
            let fields: Vec<&str> = diags
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .map(|d| d.field.as_deref().unwrap_or_default())
                .collect();
            assert_eq!(fields, [field.as_str()], "{bad}: {diags:?}");
            assert!(serve.broken, "{bad}");
        }
    }

    #[test]
    fn an_issuers_introspection_keeps_its_client_endpoint_and_cache_and_names_each_bad_field() {
        use crate::config::TokenSource;
        let issuer = |introspection: Value| {
            json!({"resource": "https://m.example.com/mcp",
                   "issuers": [{"issuer": "https://idp.example.com", "introspection": introspection}]})
        };
        let (serve, diags) = check(issuer(
            json!({"clientId": "gw", "clientSecret": "${IDP_SECRET}"}),
        ));
        assert!(diags.is_empty(), "{diags:?}");
        let i = serve.oauth.unwrap().issuers[0]
            .introspection
            .clone()
            .unwrap();
        assert_eq!(
            (i.client_id.as_str(), i.endpoint, i.cache_seconds),
            ("gw", None, 30)
        );
        assert_eq!(i.secret, TokenSource::Value("s3cr3t".into()));
        let (serve, diags) = check(issuer(
            json!({"clientId": "gw", "clientSecretEnv": "GW_SECRET",
            "endpoint": "https://idp.example.com/introspect", "cacheSeconds": 0}),
        ));
        assert!(diags.is_empty(), "{diags:?}");
        let i = serve.oauth.unwrap().issuers[0]
            .introspection
            .clone()
            .unwrap();
        assert_eq!(i.secret, TokenSource::Env("GW_SECRET".into()));
        assert_eq!(
            i.endpoint.as_deref(),
            Some("https://idp.example.com/introspect")
        );
        assert_eq!(i.cache_seconds, 0, "0: every request asks");
        let (serve, diags) = check(issuer(json!({"clientSecret": "x", "clientSecretEnv": "Y",
            "endpoint": "http://idp.example.com/i", "cacheSeconds": 86400})));
        let fields: Vec<&str> = diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.field.as_deref().unwrap_or_default())
            .collect();
        let at = "serve.oauth.issuers[0].introspection";
        assert_eq!(
            fields,
            [
                format!("{at}.clientId"),
                format!("{at}.clientSecretEnv"),
                format!("{at}.endpoint"),
                format!("{at}.cacheSeconds")
            ],
            "{diags:?}"
        );
        assert!(serve.broken && serve.oauth.is_none());
    }

    #[test]
    fn a_groups_tools_are_globs_over_server_and_tool() {
        let (serve, diags) = check(json!({
            "resource": "https://m.example.com/mcp",
            "issuers": [{"issuer": "https://idp.example.com"}],
            "groups": {"ci": {"servers": ["git"], "tools": ["time/get_*"]},
                       "bad": {"tools": ["get_*", "/x", 3], "rateLimit": "fast", "approve": "some"}},
        }));
        let errors: Vec<&str> = diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.field.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(
            errors,
            [
                "serve.oauth.groups.bad.tools[2]",
                "serve.oauth.groups.bad.tools[0]",
                "serve.oauth.groups.bad.tools[1]",
                "serve.oauth.groups.bad.approve",
                "serve.oauth.groups.bad.rateLimit"
            ],
            "{diags:?}"
        );
        assert!(
            diags
                .iter()
                .any(|d| d.message.contains("write `server/tool`"))
        );
        assert!(serve.broken);
        let (serve, diags) = check(json!({
            "resource": "https://m.example.com/mcp",
            "issuers": [{"issuer": "https://idp.example.com"}],
            "groups": {"ci": {"servers": ["git"], "tools": ["time/get_*"],
                              "rateLimit": "30/min", "approve": {"git/*": "writes"}}},
        }));
        assert!(diags.is_empty(), "{diags:?}");
        let ci = &serve.oauth.unwrap().groups[0];
        assert_eq!(ci.tools, Some(vec!["time/get_*".to_string()]));
        assert_eq!(ci.rate_limit.unwrap().text(), "30/min");
        assert!(ci.approve.is_some());
    }
}
