//! `serve`: the bearer tokens of `mcpw serve --http`, each naming its client
//! and the servers that client sees (and `oauth`, in `serve_oauth`). A problem names the file, the entry
//! (`serve.tokens[1].tokenEnv`) and the token's name; never its value.

use super::{kind, serve_secret, valid_server_name};
use crate::config::model::{Serve, ServeToken, TokenSource};
use crate::config::{Diagnostic, Severity};
use crate::paths::Environment;
use serde_json::{Map, Value};
use std::path::Path;

/// Fields a token entry may have.
const TOKEN_FIELDS: &[&str] = &[
    "name",
    "token",
    "tokenEnv",
    "servers",
    "tools",
    "approve",
    "rateLimit",
    "description",
];

/// Reads one entry of `serve.tokens`, collecting its problems.
struct Entry<'a> {
    obj: &'a Map<String, Value>,
    index: usize,
    /// The name, once known, to say which token a problem is about.
    name: Option<String>,
    file: &'a Path,
    env: &'a Environment,
    diags: &'a mut Vec<Diagnostic>,
    failed: bool,
}

impl<'a> Entry<'a> {
    fn problem(&mut self, severity: Severity, field: &str, message: String) {
        if severity == Severity::Error {
            self.failed = true;
        }
        let message = match &self.name {
            Some(name) => format!("token \"{name}\": {message}"),
            None => message,
        };
        let field = format!("serve.tokens[{}].{field}", self.index);
        self.diags
            .push(Diagnostic::field(severity, self.file, field, message));
    }

    fn error(&mut self, field: &str, message: impl Into<String>) {
        self.problem(Severity::Error, field, message.into());
    }

    /// A string field, if present.
    fn string(&mut self, key: &str) -> Option<&'a str> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(other) => {
                let message = format!("expected a string, found {}", kind(other));
                self.error(key, message);
                None
            }
        }
    }

    fn name(&mut self, seen: &mut Vec<String>) {
        let Some(name) = self.string("name").map(str::to_string) else {
            if !self.obj.contains_key("name") {
                self.error(
                    "name",
                    "a token needs a `name` (unique) that says whose it is",
                );
            }
            return;
        };
        if !valid_server_name(&name) {
            self.error(
                "name",
                format!("invalid name {name:?}: use 1 to 100 characters from A-Z a-z 0-9 _ . -"),
            );
            return;
        }
        self.name = Some(name.clone());
        if seen.contains(&name) {
            self.error("name", "another token has this name: each needs its own");
        } else {
            seen.push(name);
        }
    }

    /// `token` or `tokenEnv`: exactly one.
    fn source(&mut self) -> Option<TokenSource> {
        let value = self.string("token").map(str::to_string);
        let var = self.string("tokenEnv").map(str::to_string);
        match (value, var) {
            (Some(_), Some(_)) => {
                self.error(
                    "tokenEnv",
                    "both `token` and `tokenEnv` are set: give one of them",
                );
                None
            }
            (None, None) => {
                if !self.obj.contains_key("token") && !self.obj.contains_key("tokenEnv") {
                    self.error(
                        "token",
                        "needs `token` (the value, `${VAR}`, or `!command`) or `tokenEnv` (a variable's name)",
                    );
                }
                None
            }
            (Some(text), None) => self.value(&text).map(TokenSource::Value),
            (None, Some(var)) => self.variable(&var).then_some(TokenSource::Env(var)),
        }
    }

    /// `token`: interpolated; a `!command` runs when serving starts.
    fn value(&mut self, text: &str) -> Option<String> {
        let (value, missing) = serve_secret(text, self.env);
        for name in missing {
            self.error(
                "token",
                format!("environment variable {name} is not set; set it, or use `tokenEnv`"),
            );
        }
        if value.trim().is_empty() {
            self.error("token", "is empty");
        }
        (!self.failed).then_some(value)
    }

    /// `tokenEnv`: a variable's name, set now (serving reads it at start).
    fn variable(&mut self, var: &str) -> bool {
        let valid = var.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            self.error(
                "tokenEnv",
                format!("{var:?} is not the name of an environment variable"),
            );
            return false;
        }
        if self.env.get(var).is_none_or(|v| v.trim().is_empty()) {
            self.error(
                "tokenEnv",
                format!("environment variable {var} is not set (or empty)"),
            );
            return false;
        }
        true
    }

    /// `servers`: absent for every server.
    fn servers(&mut self) -> Option<Vec<String>> {
        let items = match self.obj.get("servers") {
            None | Some(Value::Null) => return None,
            Some(Value::Array(items)) => items,
            Some(other) => {
                let message = format!("expected a list of server names, found {}", kind(other));
                self.error("servers", message);
                return None;
            }
        };
        let mut names = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) if !s.is_empty() => names.push(s.to_string()),
                _ => self.error(
                    &format!("servers[{i}]"),
                    format!("expected a server name, found {item}"),
                ),
            }
        }
        if items.is_empty() {
            self.problem(
                Severity::Warning,
                "servers",
                "an empty list: this client sees no server (leave `servers` out for every server)"
                    .into(),
            );
        }
        Some(names)
    }

    /// The field `key` read by `parse`, its error reported.
    fn rule<T>(&mut self, key: &str, parse: impl Fn(&Value) -> Result<T, String>) -> Option<T> {
        let value = self.obj.get(key).filter(|v| !v.is_null())?;
        match parse(value) {
            Ok(rule) => Some(rule),
            Err(why) => {
                self.error(key, why);
                None
            }
        }
    }

    /// `tools`: globs over `server/tool`; absent for every tool.
    fn tools(&mut self) -> Option<Vec<String>> {
        let items = match self.obj.get("tools") {
            None | Some(Value::Null) => return None,
            Some(Value::Array(items)) => items,
            Some(other) => {
                let message = format!("expected a list of tool globs, found {}", kind(other));
                self.error("tools", message);
                return None;
            }
        };
        let mut globs = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item
                .as_str()
                .map(|g| (g, crate::config::approve::tool_glob_problem(g)))
            {
                Some((g, None)) => globs.push(g.to_string()),
                Some((_, Some(why))) => self.error(&format!("tools[{i}]"), why),
                None => self.error(
                    &format!("tools[{i}]"),
                    format!("expected a glob, found {item}"),
                ),
            }
        }
        Some(globs)
    }
}

/// `serve.oauth`, and a warning for each field `serve` does not have.
fn besides_tokens(
    obj: &Map<String, Value>,
    (file, env): (&Path, &Environment),
    diags: &mut Vec<Diagnostic>,
    out: &mut Serve,
) {
    if let Some(oauth) = obj.get("oauth").filter(|v| !v.is_null()) {
        out.oauth = super::serve_oauth::oauth(oauth, (file, env), diags);
        out.broken |= out.oauth.is_none();
    }
    match obj.get("publicUrl") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if super::https_or_loopback(s.trim()) => {
            out.public_url = Some(s.trim().trim_end_matches('/').to_string());
        }
        Some(other) => {
            let message = match other {
                Value::String(s) => {
                    format!("{s:?} is not an https URL (plain http only on loopback)")
                }
                other => format!("expected a URL, found {}", kind(other)),
            };
            diags.push(Diagnostic::field(
                Severity::Error,
                file,
                "serve.publicUrl".into(),
                message,
            ));
            out.broken = true;
        }
    }
    for key in obj
        .keys()
        .filter(|k| !["tokens", "oauth", "publicUrl"].contains(&k.as_str()))
    {
        let unknown = "unknown field, ignored".into();
        diags.push(Diagnostic::field(
            Severity::Warning,
            file,
            format!("serve.{key}"),
            unknown,
        ));
    }
}

/// Checks the user file's `serve`. Invalid entries are reported and left
/// out, and mark the result [`Serve::broken`].
pub fn serve(value: &Value, file: &Path, env: &Environment, diags: &mut Vec<Diagnostic>) -> Serve {
    let mut out = Serve {
        raw: Some(value.clone()),
        ..Serve::default()
    };
    let fail = |diags: &mut Vec<Diagnostic>, field: &str, message: String| {
        diags.push(Diagnostic::field(
            Severity::Error,
            file,
            field.into(),
            message,
        ));
    };
    let Some(obj) = value.as_object() else {
        fail(
            diags,
            "serve",
            format!("expected an object, found {}", kind(value)),
        );
        out.broken = true;
        return out;
    };
    besides_tokens(obj, (file, env), diags, &mut out);
    let items = match obj.get("tokens") {
        None | Some(Value::Null) => return out,
        Some(Value::Array(items)) => items,
        Some(other) => {
            let message = format!("expected a list of tokens, found {}", kind(other));
            fail(diags, "serve.tokens", message);
            out.broken = true;
            return out;
        }
    };
    let mut seen = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let Some(obj) = item.as_object() else {
            let message = format!("expected an object, found {}", kind(item));
            fail(diags, &format!("serve.tokens[{index}]"), message);
            out.broken = true;
            continue;
        };
        let mut entry = Entry {
            obj,
            index,
            name: None,
            file,
            env,
            diags,
            failed: false,
        };
        entry.name(&mut seen);
        for key in obj.keys().filter(|k| !TOKEN_FIELDS.contains(&k.as_str())) {
            entry.problem(Severity::Warning, key, "unknown field, ignored".into());
        }
        let source = entry.source();
        let servers = entry.servers();
        let tools = entry.tools();
        let approve = entry.rule("approve", crate::config::ApproveRule::parse);
        let rate_limit = entry.rule("rateLimit", crate::config::rate::Rate::from_value);
        match (entry.failed, entry.name, source) {
            (false, Some(name), Some(source)) => out.tokens.push(ServeToken {
                name,
                index,
                source,
                servers,
                tools,
                approve,
                rate_limit,
            }),
            _ => out.broken = true,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(value: Value) -> (Serve, Vec<Diagnostic>) {
        let env = Environment::from_pairs([("CI_TOKEN", "ci-secret-value"), ("EMPTY", "")]);
        let mut diags = Vec::new();
        let serve = serve(&value, Path::new("/home/me/mcp.json"), &env, &mut diags);
        (serve, diags)
    }

    /// `publicUrl` says where the sign-in callback is, else the origin of
    /// `oauth.resource` does; one that is not https (off loopback) is an
    /// error naming the field.
    #[test]
    fn the_sign_in_callback_is_under_the_public_url_or_the_resources_origin() {
        let (served, diags) = check(json!({"publicUrl": "https://mcp.example.com/"}));
        assert!(diags.is_empty(), "{diags:?}");
        let at = served.sign_in_callback();
        assert_eq!(
            at.as_deref(),
            Some("https://mcp.example.com/oauth/callback")
        );
        let (served, _) = check(json!({"oauth": {"resource": "https://gw.example.com/mcp",
            "issuers": [{"issuer": "https://idp.example.com"}]}}));
        let at = served.sign_in_callback();
        assert_eq!(at.as_deref(), Some("https://gw.example.com/oauth/callback"));
        assert_eq!(check(json!({})).0.sign_in_callback(), None);
        for bad in [json!("http://mcp.example.com"), json!(3)] {
            let (served, diags) = check(json!({"publicUrl": bad}));
            assert!(served.broken, "{bad}");
            assert!(
                diags
                    .iter()
                    .any(|d| d.to_string().contains("serve.publicUrl")),
                "{diags:?}"
            );
        }
    }

    fn errors(diags: &[Diagnostic]) -> Vec<String> {
        diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.detail())
            .collect()
    }

    #[test]
    fn a_tokens_tools_are_globs_over_server_and_tool() {
        let (serve, diags) = check(json!({"tokens": [
            {"name": "ci", "token": "t1", "tools": ["git/git_log", "time/*"],
             "rateLimit": "10/s", "approve": "writes"},
            {"name": "bad", "token": "t2", "tools": ["git_log", "*/read"], "rateLimit": 3},
        ]}));
        assert_eq!(
            serve.tokens[0].tools,
            Some(vec!["git/git_log".to_string(), "time/*".to_string()])
        );
        let fields: Vec<&str> = diags
            .iter()
            .map(|d| d.field.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(
            fields,
            [
                "serve.tokens[1].tools[0]",
                "serve.tokens[1].tools[1]",
                "serve.tokens[1].rateLimit"
            ],
            "{diags:?}"
        );
        assert_eq!(serve.tokens[0].rate_limit.unwrap().text(), "10/s");
        assert!(serve.tokens[0].approve.is_some());
        assert!(serve.broken && serve.tokens.len() == 1);
    }

    #[test]
    fn valid_tokens_keep_their_order_sources_and_servers() {
        let (serve, diags) = check(json!({"tokens": [
            {"name": "ci", "tokenEnv": "CI_TOKEN", "servers": ["git", "time"]},
            {"name": "alice", "token": "!pass show mcpw/alice"},
            {"name": "bob", "token": "${CI_TOKEN}-bob"},
        ]}));
        assert!(diags.is_empty(), "{diags:?}");
        assert!(!serve.broken);
        let got: Vec<_> = serve
            .tokens
            .iter()
            .map(|t| {
                (
                    t.name.as_str(),
                    t.index,
                    t.source.clone(),
                    t.servers.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "ci",
                    0,
                    TokenSource::Env("CI_TOKEN".into()),
                    Some(vec!["git".into(), "time".into()])
                ),
                (
                    "alice",
                    1,
                    TokenSource::Value("!pass show mcpw/alice".into()),
                    None
                ),
                (
                    "bob",
                    2,
                    TokenSource::Value("ci-secret-value-bob".into()),
                    None
                ),
            ]
        );
    }

    #[test]
    fn each_broken_entry_is_named_by_file_index_name_and_field() {
        let (serve, diags) = check(json!({"tokens": [
            {"name": "ci", "token": "a-literal-secret", "tokenEnv": "CI_TOKEN"},
            {"token": "x"},
            {"name": "ci", "tokenEnv": "CI_TOKEN"},
            {"name": "dave"},
            {"name": "erin", "tokenEnv": "UNSET_VAR"},
            {"name": "fay", "tokenEnv": "EMPTY"},
            {"name": "gus", "token": "${UNSET_VAR}"},
            {"name": "hal", "token": "t", "servers": "git"},
            {"name": "ivy", "token": "t", "servers": ["git", 3]},
            {"name": "bad name", "token": "t"},
            "nope",
            {"name": "ok", "token": "t"},
        ]}));
        assert!(serve.broken);
        assert_eq!(
            serve.tokens.iter().map(|t| &t.name[..]).collect::<Vec<_>>(),
            vec!["ok"],
            "{diags:?}"
        );
        let errors = errors(&diags);
        let expect = [
            "serve.tokens[0].tokenEnv`: token \"ci\": both `token` and `tokenEnv`",
            "serve.tokens[1].name`: a token needs a `name`",
            "serve.tokens[2].name`: token \"ci\": another token has this name",
            "serve.tokens[3].token`: token \"dave\": needs `token`",
            "serve.tokens[4].tokenEnv`: token \"erin\": environment variable UNSET_VAR is not set",
            "serve.tokens[5].tokenEnv`: token \"fay\": environment variable EMPTY is not set",
            "serve.tokens[6].token`: token \"gus\": environment variable UNSET_VAR is not set",
            "serve.tokens[7].servers`: token \"hal\": expected a list of server names",
            "serve.tokens[8].servers[1]`: token \"ivy\": expected a server name, found 3",
            "serve.tokens[9].name`: invalid name \"bad name\"",
            "serve.tokens[10]`: expected an object, found a string",
        ];
        for (e, want) in errors.iter().zip(expect) {
            assert!(
                e.starts_with("/home/me/mcp.json: field `") && e.contains(want),
                "{e}\nshould say {want}"
            );
        }
        assert_eq!(errors.len(), expect.len(), "{errors:#?}");
        // No message quotes a value.
        let all: String = diags.iter().map(|d| d.detail()).collect();
        assert!(!all.contains("a-literal-secret") && !all.contains("ci-secret-value"));
    }

    #[test]
    fn serve_itself_of_the_wrong_shape_is_broken() {
        for value in [json!([]), json!({"tokens": {}})] {
            let (serve, diags) = check(value);
            assert!(serve.broken && serve.tokens.is_empty());
            assert_eq!(errors(&diags).len(), 1, "{diags:?}");
        }
        let (serve, diags) = check(json!({"tokens": [], "other": 1}));
        assert!(!serve.broken);
        assert_eq!(diags[0].field.as_deref(), Some("serve.other"));
        assert_eq!(diags[0].severity, Severity::Warning);
    }

    #[test]
    fn an_empty_server_list_is_a_warning() {
        let (serve, diags) = check(json!({"tokens": [{"name": "n", "token": "t", "servers": []}]}));
        assert_eq!(serve.tokens[0].servers, Some(vec![]));
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].severity, Severity::Warning);
    }

    #[test]
    fn debug_output_masks_values() {
        let (serve, _) = check(json!({"tokens": [
            {"name": "a", "token": "literal-secret-1"},
            {"name": "b", "token": "!pass show b"},
        ]}));
        let shown = format!("{:?}", serve.tokens);
        assert!(!shown.contains("literal-secret-1"), "{shown}");
        assert!(shown.contains("!pass show b"), "{shown}");
    }
}
