//! The merged config for people: where each server came from, with secrets masked.

use super::interpolate::has_reference;
use super::{Config, Server};
use serde_json::{Value, json};

/// What replaces a secret.
pub const MASK: &str = "****";

/// Masks a secret value unless it only refers to one (`${TOKEN}`, `Bearer ${TOKEN}`)
/// or is a command that fetches one (`!op read ...`).
fn mask_secret(value: &str) -> String {
    // A command (`!pass show x`) or a reference is not the secret itself; a
    // literal (`!!...`) is.
    let command = value.starts_with('!') && !value.starts_with("!!");
    if has_reference(value) || command || value.is_empty() {
        value.to_string()
    } else {
        MASK.to_string()
    }
}

/// Hides credentials embedded in a URL (`user:pass@`, and query values).
pub fn mask_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut out = match base.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_end].rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{MASK}@{host}{}", &rest[authority_end..]),
                None => base.to_string(),
            }
        }
        None => base.to_string(),
    };
    if let Some(q) = query {
        let masked: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) if !has_reference(v) => format!("{k}={MASK}"),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&masked.join("&"));
    }
    out
}

/// A server's definition as written, with secrets masked (as the field
/// table says, [`super::fields`]).
fn masked_definition(server: &Server) -> Value {
    masked_raw(&server.raw)
}

/// A definition as written (`raw`), with secrets masked.
pub fn masked_raw(raw: &Value) -> Value {
    use super::fields::{SERVER_FIELDS, Shown};
    let mut raw = raw.clone();
    let Some(obj) = raw.as_object_mut() else {
        return raw;
    };
    for field in SERVER_FIELDS {
        let Some(value) = obj.get_mut(field.name) else {
            continue;
        };
        match (field.shown, value) {
            (Shown::Secret, Value::String(s)) => *s = mask_secret(s),
            (Shown::Secrets, Value::Object(map)) => map.values_mut().for_each(mask_value),
            (Shown::Url, Value::String(s)) => *s = mask_url(s),
            (Shown::Permissions, Value::Object(granted)) => {
                if let Some(Value::Object(env)) = granted.get_mut("env") {
                    env.values_mut().for_each(mask_value);
                }
            }
            (Shown::OAuth, Value::Object(oauth)) => {
                let mask = |obj: &mut serde_json::Map<String, Value>, keys: &[&str]| {
                    for key in keys {
                        if let Some(Value::String(s)) = obj.get_mut(*key) {
                            *s = mask_secret(s);
                        }
                    }
                };
                mask(oauth, &["clientSecret", "privateKey"]);
                if let Some(Value::Object(idp)) = oauth.get_mut("identityProvider") {
                    mask(idp, &["clientSecret", "idToken"]);
                }
            }
            _ => {}
        }
    }
    // Another tool's name for `url`, in a definition imported as written.
    if let Some(Value::String(s)) = obj.get_mut("serverUrl") {
        *s = mask_url(s);
    }
    raw
}

/// One value of `env` or `headers`, masked.
fn mask_value(v: &mut Value) {
    match v {
        Value::String(s) => *s = mask_secret(s),
        other => *other = Value::String(MASK.into()),
    }
}

/// `serve` as written, with token values and the introspecting clients'
/// secrets masked.
fn masked_serve(raw: &Value) -> Value {
    let mut raw = raw.clone();
    let mask = |obj: &mut serde_json::Map<String, Value>, key: &str| match obj.get_mut(key) {
        Some(Value::String(s)) => *s = mask_secret(s),
        Some(other) => *other = Value::String(MASK.into()),
        None => {}
    };
    if let Some(Value::Array(tokens)) = raw.get_mut("tokens") {
        for token in tokens.iter_mut().filter_map(Value::as_object_mut) {
            mask(token, "token");
        }
    }
    if let Some(Value::Array(issuers)) = raw.pointer_mut("/oauth/issuers") {
        // The gateway's own clients there: introspecting, and signing in.
        for client in ["introspection", "signIn"] {
            let clients = issuers
                .iter_mut()
                .filter_map(|i| i.get_mut(client)?.as_object_mut());
            for client in clients {
                mask(client, "clientSecret");
            }
        }
    }
    raw
}

/// The settings as written, with the shared state's password and key masked.
fn masked_settings(cfg: &Config) -> Value {
    let mut raw = cfg.settings.raw.clone();
    if let Some(Value::String(url)) = raw.get_mut("sharedState") {
        *url = mask_url(url);
    }
    if let Some(Value::String(key)) = raw.get_mut("sharedStateKey") {
        *key = mask_secret(key);
    }
    Value::Object(raw)
}

/// The whole config as JSON (`config show --json`).
pub fn to_json(cfg: &Config) -> Value {
    let servers: serde_json::Map<String, Value> = cfg
        .servers
        .iter()
        .map(|s| {
            let mut def = masked_definition(s);
            if let Some(obj) = def.as_object_mut() {
                obj.insert(
                    "source".into(),
                    serde_json::to_value(&s.origin).unwrap_or(Value::Null),
                );
            }
            (s.name.clone(), def)
        })
        .collect();
    let mut out = json!({
        "sources": cfg.sources,
        "imports": cfg.imports.iter().map(|k| k.name()).collect::<Vec<_>>(),
        "mcpServers": servers,
        "settings": masked_settings(cfg),
        "diagnostics": cfg.diagnostics,
        "projectTrust": cfg.trust,
    });
    if let Some(serve) = &cfg.serve.raw {
        out["serve"] = masked_serve(serve);
    }
    out
}

/// The whole config as text (`config show`).
pub fn to_text(cfg: &Config) -> String {
    let mut out = String::from("Sources (later wins):\n");
    for s in &cfg.sources {
        let what = match &s.import {
            Some(i) => format!("import {i}"),
            None => s.kind.to_string(),
        };
        let state = if s.found {
            format!("{} server(s)", s.servers)
        } else {
            "not found".into()
        };
        out.push_str(&format!("  {what:<22} {}  ({state})\n", s.path.display()));
    }
    out.push_str(&format!("\nServers ({}):\n", cfg.servers.len()));
    for s in &cfg.servers {
        let from = match &s.origin.import {
            Some(i) => format!("import {i}"),
            None => s.origin.kind.to_string(),
        };
        let disabled = if s.config.enabled { "" } else { " [disabled]" };
        out.push_str(&format!(
            "  {}{disabled}  (from {from}: {})\n",
            s.name,
            s.origin.path.display()
        ));
        let def = masked_definition(s);
        if let Ok(text) = serde_json::to_string(&def) {
            out.push_str(&format!("    {}\n", crate::visible::shown(&text)));
        }
    }
    if !cfg.settings.raw.is_empty() {
        out.push_str(&format!("\nSettings:\n  {}\n", masked_settings(cfg)));
    }
    if let Some(serve) = &cfg.serve.raw {
        out.push_str(&format!("\nServe:\n  {}\n", masked_serve(serve)));
    }
    if let Some(notice) = cfg.trust.notice() {
        out.push_str(&format!("\n{notice}\n"));
    }
    if !cfg.diagnostics.is_empty() {
        out.push_str(&format!("\nProblems ({}):\n", cfg.diagnostics.len()));
        for d in &cfg.diagnostics {
            out.push_str(&format!("  {d}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_references_are_not() {
        assert_eq!(mask_secret("ghp_123"), MASK);
        assert_eq!(mask_secret("Bearer ${TOKEN}"), "Bearer ${TOKEN}");
        assert_eq!(mask_secret("!pass show api"), "!pass show api");
    }

    #[test]
    fn serve_token_values_are_masked() {
        let raw = json!({"tokens": [
            {"name": "a", "token": "literal-secret"},
            {"name": "b", "token": "!pass show b"},
            {"name": "c", "token": "${C_TOKEN}"},
            {"name": "d", "tokenEnv": "D_TOKEN", "servers": ["git"]},
            {"name": "e", "token": 12345678},
        ]});
        let shown = masked_serve(&raw);
        let values: Vec<&Value> = shown["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.get("token").unwrap_or(&t["tokenEnv"]))
            .collect();
        assert_eq!(
            values,
            vec![
                &json!(MASK),
                &json!("!pass show b"),
                &json!("${C_TOKEN}"),
                &json!("D_TOKEN"),
                &json!(MASK)
            ]
        );
    }

    #[test]
    fn the_gateways_own_clients_secrets_are_masked() {
        for client in ["introspection", "signIn"] {
            let raw = json!({"oauth": {"issuers": [
                {"issuer": "https://a", client: {"clientId": "gw", "clientSecret": "literal"}},
                {"issuer": "https://b", client: {"clientId": "gw", "clientSecret": "!pass idp"}},
                {"issuer": "https://c"},
            ]}});
            let shown = masked_serve(&raw);
            let at = |i: usize| &shown["oauth"]["issuers"][i][client];
            assert_eq!(at(0)["clientSecret"], MASK, "{client}");
            assert_eq!(at(0)["clientId"], "gw");
            assert_eq!(at(1)["clientSecret"], "!pass idp");
        }
    }

    #[test]
    fn the_id_token_and_secrets_of_cross_app_access_are_masked() {
        let raw = json!({"url": "https://mcp.example.com/mcp", "oauth": {
            "grantType": "id-jag", "clientId": "c", "clientSecret": "as-secret",
            "identityProvider": {"issuer": "https://idp.example.com", "clientId": "i",
                                 "clientSecret": "idp-secret", "idToken": "eyJhbGciOi.x.y"},
        }});
        let shown = masked_raw(&raw);
        let idp = &shown["oauth"]["identityProvider"];
        assert_eq!(shown["oauth"]["clientSecret"], MASK);
        assert_eq!(
            (&idp["clientSecret"], &idp["idToken"]),
            (&json!(MASK), &json!(MASK))
        );
        assert_eq!(idp["issuer"], "https://idp.example.com");
        let by_command = json!({"oauth": {"identityProvider": {"idToken": "!sso id-token"}}});
        let shown = masked_raw(&by_command);
        assert_eq!(
            shown["oauth"]["identityProvider"]["idToken"],
            "!sso id-token"
        );
    }

    #[test]
    fn url_credentials_are_masked() {
        assert_eq!(
            mask_url("https://u:p@host/x?key=abc&v=${V}"),
            "https://****@host/x?key=****&v=${V}"
        );
        assert_eq!(
            mask_url("http://127.0.0.1:3000/mcp"),
            "http://127.0.0.1:3000/mcp"
        );
    }
}
