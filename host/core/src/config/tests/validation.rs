//! Validation: every error names the file, the server and the field; a bad
//! server is skipped and the rest load; invalid JSON gives line and column.

use super::{ConfigDirs, command, write};
use crate::config::{Diagnostic, Severity};

fn errors_for(server_json: &str) -> Vec<Diagnostic> {
    let d = ConfigDirs::new();
    d.user(&format!(
        r#"{{"mcpServers": {{"s": {server_json}, "good": {{"command": "ok"}}}}}}"#
    ));
    let cfg = d.load();
    assert!(cfg.server("good").is_some(), "the valid server still loads");
    cfg.diagnostics
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .collect()
}

/// The single error's field, after checking it names the file and server.
fn field_of(server_json: &str) -> String {
    let errs = errors_for(server_json);
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    assert!(e.file.ends_with(".config/mcpw/mcp.json"));
    assert_eq!(e.server.as_deref(), Some("s"));
    let text = e.to_string();
    assert!(
        text.contains("mcp.json") && text.contains("server \"s\""),
        "{text}"
    );
    e.field.clone().unwrap_or_default()
}

#[test]
fn command_and_url_together() {
    assert_eq!(field_of(r#"{"command": "x", "url": "http://h"}"#), "url");
}

#[test]
fn stdio_without_command() {
    assert_eq!(field_of(r#"{"type": "stdio", "args": ["x"]}"#), "command");
    assert_eq!(
        field_of(r#"{"args": ["x"]}"#),
        "command",
        "neither command nor url"
    );
}

#[test]
fn http_and_sse_without_url() {
    assert_eq!(field_of(r#"{"type": "http"}"#), "url");
    assert_eq!(field_of(r#"{"type": "sse"}"#), "url");
}

#[test]
fn unknown_type() {
    assert_eq!(
        field_of(r#"{"type": "websocket", "url": "http://h"}"#),
        "type"
    );
}

#[test]
fn url_must_be_http() {
    assert_eq!(field_of(r#"{"url": "ftp://h/x"}"#), "url");
}

#[test]
fn wrong_field_types() {
    assert_eq!(field_of(r#"{"command": "x", "args": "a b"}"#), "args");
    assert_eq!(field_of(r#"{"command": "x", "args": ["a", 3]}"#), "args[1]");
    assert_eq!(
        field_of(r#"{"command": "x", "env": {"K": {"nested": 1}}}"#),
        "env.K"
    );
    assert_eq!(
        field_of(r#"{"command": "x", "lifecycle": "sometimes"}"#),
        "lifecycle"
    );
    assert_eq!(
        field_of(r#"{"command": "x", "directTools": "yes"}"#),
        "directTools"
    );
    assert_eq!(
        field_of(r#"{"command": "x", "idleTimeout": -1}"#),
        "idleTimeout"
    );
    assert_eq!(field_of(r#"{"command": "x", "auth": "basic"}"#), "auth");
    assert_eq!(field_of(r#"{"command": "x", "enabled": "no"}"#), "enabled");
}

#[test]
fn server_names() {
    let d = ConfigDirs::new();
    let long = "n".repeat(101);
    let ok100 = "n".repeat(100);
    d.user(&format!(
        r#"{{"mcpServers": {{"has space": {{"command": "x"}}, "{long}": {{"command": "x"}}, "{ok100}": {{"command": "x"}},
           "ok.name_1-2": {{"command": "x"}}, "": {{"command": "x"}}}}}}"#
    ));
    let cfg = d.load();
    let bad: Vec<_> = cfg
        .diagnostics
        .iter()
        .map(|d| d.server.clone().unwrap())
        .collect();
    assert_eq!(bad, vec!["has space".to_string(), long, String::new()]);
    assert_eq!(cfg.servers.len(), 2);
}

#[test]
fn a_server_that_is_not_an_object() {
    let errs = errors_for(r#""npx server""#);
    assert_eq!(errs[0].server.as_deref(), Some("s"));
}

#[test]
fn invalid_json_names_line_and_column_and_other_files_still_load() {
    let d = ConfigDirs::new();
    let text = "{\n  \"mcpServers\": {\n    \"a\" {\"command\": \"x\"}\n  }\n}";
    d.user(text);
    write(
        &d.project(),
        ".mcp.json",
        r#"{"mcpServers": {"p": {"command": "project"}}}"#,
    );
    let cfg = d.load();
    let e = &cfg.diagnostics[0];
    let reference = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
    assert_eq!(e.column, Some(reference.column()));
    assert!(
        e.to_string()
            .contains(&format!("mcp.json:3:{}: invalid JSON", reference.column())),
        "{e}"
    );
    // The project file is still read (its server waits for approval).
    assert_eq!(cfg.trust.waiting[0].runs, "project");
}

#[test]
fn servers_must_be_an_object() {
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": [{"command": "x"}]}"#);
    let cfg = d.load();
    assert_eq!(cfg.diagnostics[0].field.as_deref(), Some("mcpServers"));
}

#[test]
fn an_invalid_override_keeps_the_earlier_definition() {
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": {"a": {"command": "user"}}}"#);
    write(
        &d.project(),
        ".mcp.json",
        r#"{"mcpServers": {"a": {"type": "http"}}}"#,
    );
    let cfg = d.load();
    assert_eq!(command(&cfg, "a"), "user");
    assert!(
        cfg.diagnostics[0].message.contains("stays in effect"),
        "{}",
        cfg.diagnostics[0]
    );
}

#[test]
fn unknown_fields_warn_in_own_files() {
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": {"a": {"comand": "typo", "command": "x"}}, "mcpServer": {}}"#);
    let cfg = d.load();
    assert!(!cfg.has_errors());
    let fields: Vec<_> = cfg
        .diagnostics
        .iter()
        .map(|d| (d.severity, d.field.clone().unwrap()))
        .collect();
    assert_eq!(
        fields,
        vec![
            (Severity::Warning, "mcpServer".to_string()),
            (Severity::Warning, "comand".to_string())
        ]
    );
}

#[test]
fn every_documented_server_field_is_known() {
    let d = ConfigDirs::new();
    d.user(
        r#"{"mcpServers": {
            "s": {"command": "x", "args": [], "env": {}, "cwd": "/tmp", "lifecycle": "lazy",
                  "idleTimeout": 5, "startupTimeoutMs": 1000, "callTimeoutMs": 2000,
                  "exposeResources": false, "directTools": true, "excludeTools": [], "includeTools": [],
                  "debug": false, "searchKeywords": ["k"], "description": "d", "enabled": true},
            "h": {"url": "http://127.0.0.1:1/mcp", "type": "http", "headers": {},
                  "bearerTokenEnv": "T", "lifecycle": "keep-alive"}
        }}"#,
    );
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
}

#[test]
fn settings_errors_name_the_setting() {
    let d = ConfigDirs::new();
    d.user(
        r#"{"settings": {"toolPrefix": "long", "idleTimeout": "5", "searchProfile": 7,
             "plugins": {"ranking": "missing.wasm", "grants": {"ranking": ["catalog", "network"], "search": []},
                         "limits": {"memoryMiB": 0, "cpu": 1}}},
            "imports": ["cursor", "emacs"]}"#,
    );
    let cfg = d.load();
    let fields: Vec<String> = cfg
        .diagnostics
        .iter()
        .map(|d| d.field.clone().unwrap())
        .collect();
    assert_eq!(
        fields,
        vec![
            "settings.toolPrefix",
            "settings.idleTimeout",
            "settings.searchProfile",
            "settings.plugins.ranking",
            "settings.plugins.grants.ranking[1]",
            "settings.plugins.grants.search",
            "settings.plugins.limits.memoryMiB",
            "settings.plugins.limits.cpu",
            "imports[1]",
        ]
    );
    assert!(
        cfg.diagnostics
            .iter()
            .all(|d| d.severity == Severity::Error)
    );
    assert_eq!(
        cfg.settings.tool_prefix,
        crate::config::PrefixMode::Server,
        "bad values fall back to defaults"
    );
}

#[test]
fn a_shared_state_url_is_checked_and_its_password_never_shown() {
    let d = ConfigDirs::new();
    d.user(r#"{"settings": {"sharedState": "http://u:hunter2@cache:6379"}}"#);
    let cfg = d.load();
    assert_eq!(cfg.diagnostics.len(), 1, "{:?}", cfg.diagnostics);
    let e = &cfg.diagnostics[0];
    assert_eq!(e.field.as_deref(), Some("settings.sharedState"));
    let text = e.to_string();
    assert!(
        text.contains("redis://HOST:PORT") && text.contains("mcp.json"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    assert_eq!(cfg.settings.shared_state, None);

    d.user(r#"{"settings": {"sharedState": "redis://:hunter2@cache:6379/1"}}"#);
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    assert_eq!(
        cfg.settings.shared_state.as_deref(),
        Some("redis://:hunter2@cache:6379/1")
    );
    let shown =
        crate::config::show::to_text(&cfg) + &crate::config::show::to_json(&cfg).to_string();
    assert!(
        shown.contains("cache:6379/1") && !shown.contains("hunter2"),
        "{shown}"
    );
}

#[test]
fn code_mode_settings_are_read_and_bad_limits_named() {
    let d = ConfigDirs::new();
    d.user(
        r#"{"settings": {"codeMode": true, "exposure": "code",
             "scriptLimits": {"timeoutMs": 5000, "maxCalls": 7, "memoryMb": 16}}}"#,
    );
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    let s = &cfg.settings;
    assert!(s.code_mode);
    assert_eq!(s.exposure, Some(crate::config::Exposure::Code));
    let limits = s.script_limits;
    assert_eq!(limits.wall, std::time::Duration::from_secs(5));
    assert_eq!((limits.calls, limits.memory_bytes), (7, 16 << 20));
    assert_eq!(
        limits.cpu,
        crate::config::ScriptLimits::default().cpu,
        "limits not set keep their defaults"
    );

    let d = ConfigDirs::new();
    d.user(r#"{"settings": {"codeMode": "yes", "scriptLimits": {"calls": 3}}}"#);
    let cfg = d.load();
    let said: Vec<(String, String)> = cfg
        .diagnostics
        .iter()
        .map(|d| (d.field.clone().unwrap(), d.message.clone()))
        .collect();
    assert_eq!(said[0].0, "settings.codeMode");
    assert_eq!(said[1].0, "settings.scriptLimits");
    assert!(
        said[1].1.contains("unknown limit \"calls\"") && said[1].1.contains("maxCalls"),
        "{said:?}"
    );
    assert_eq!(
        cfg.settings.script_limits,
        crate::config::ScriptLimits::default()
    );
}

#[test]
fn auto_exposure_and_its_budget_are_read_and_bad_values_named() {
    let d = ConfigDirs::new();
    d.user(r#"{"settings": {"exposure": "auto", "autoExposureBudget": 5000}}"#);
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    assert_eq!(cfg.settings.exposure, Some(crate::config::Exposure::Auto));
    assert_eq!(cfg.settings.auto_exposure_budget, 5000);

    let d = ConfigDirs::new();
    d.user(r#"{"settings": {"exposure": "automatic", "autoExposureBudget": "2k"}}"#);
    let cfg = d.load();
    let said: Vec<(String, String)> = cfg
        .diagnostics
        .iter()
        .map(|d| (d.field.clone().unwrap(), d.to_string()))
        .collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(said[0].0, "settings.exposure");
    assert!(
        said[0].1.contains("mcp.json") && said[0].1.contains("\"auto\""),
        "{said:?}"
    );
    assert_eq!(said[1].0, "settings.autoExposureBudget");
    assert!(
        said[1].1.contains("mcp.json") && said[1].1.contains("\"2k\""),
        "{said:?}"
    );
    let s = &cfg.settings;
    assert_eq!(s.exposure, None, "a bad value falls back to the default");
    assert_eq!(
        s.auto_exposure_budget,
        crate::config::DEFAULT_AUTO_EXPOSURE_BUDGET
    );
}

#[test]
fn a_component_is_a_file_with_permissions_each_mistake_named() {
    assert_eq!(
        field_of(r#"{"component": "./s.wasm", "command": "x"}"#),
        "command"
    );
    assert_eq!(
        field_of(r#"{"component": "https://h/s.wasm"}"#),
        "sha256",
        "a fetched component names its digest"
    );
    assert_eq!(
        field_of(r#"{"component": "http://h/s.wasm", "sha256": "00"}"#),
        "sha256"
    );
    assert_eq!(
        field_of(r#"{"component": "oci://r/s@sha256:00"}"#),
        "component",
        "an OCI reference is pinned by a whole digest"
    );
    assert_eq!(field_of(r#"{"component": "ftp://h/s.wasm"}"#), "component");
    assert_eq!(
        field_of(r#"{"component": "s.wasm", "permissions": {"files": {"rel": "read"}}}"#),
        "permissions.files.rel"
    );
    assert_eq!(
        field_of(r#"{"component": "s.wasm", "permissions": {"memoryMiB": 0}}"#),
        "permissions.memoryMiB"
    );
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": {"c": {"component": "servers/c.wasm", "permissions": {"network": ["h:1"]}}}}"#);
    let cfg = d.load();
    let file = command(&cfg, "c");
    assert!(
        file.ends_with(".config/mcpw/servers/c.wasm"),
        "relative to its config file: {file}"
    );
}

/// Cross-app access: the grant, its identity provider and the ID token
/// (from a variable here) are read as written.
#[test]
fn an_id_jag_grant_keeps_its_identity_provider() {
    let mut d = ConfigDirs::new();
    d.env = d.env.with("ID_TOKEN", "eyJ.the-id-token.sig");
    d.user(
        r#"{"mcpServers": {"s": {"url": "https://mcp.example.com/mcp", "oauth": {
            "grantType": "id-jag", "clientId": "mcpw-at-as", "clientSecret": "!pass as",
            "identityProvider": {"issuer": "https://idp.example.com/", "clientId": "mcpw-at-idp",
                                 "idToken": "${ID_TOKEN}"}}}}}"#,
    );
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    let oauth = &cfg.server("s").unwrap().config.oauth;
    assert_eq!(oauth.grant_type, crate::config::GrantType::IdJag);
    assert!(oauth.grant_type.unattended());
    let idp = oauth.identity_provider.as_ref().unwrap();
    assert_eq!(idp.issuer, "https://idp.example.com/", "as written");
    assert_eq!(idp.token_endpoint, None);
    assert_eq!(idp.client_id, "mcpw-at-idp");
    assert_eq!(idp.client_secret, None);
    assert_eq!(idp.id_token.as_deref(), Some("eyJ.the-id-token.sig"));
    let shown = serde_json::to_string(oauth).unwrap();
    assert!(!shown.contains("the-id-token"), "{shown}");
}

/// Each mistake of cross-app access is named by its field, and the server is
/// not used.
#[test]
fn an_id_jag_grant_names_each_mistake() {
    let with =
        |oauth: &str| format!(r#"{{"url": "https://mcp.example.com/mcp", "oauth": {oauth}}}"#);
    let idp = r#""identityProvider": {"issuer": "https://idp.example.com", "clientId": "i", "idToken": "t"}"#;
    let cases = [
        (r#"{"grantType": "id-jag", "clientId": "c"}"#.to_string(), "oauth.grantType", "identityProvider"),
        (format!(r#"{{"clientId": "c", {idp}}}"#), "oauth.identityProvider", "\"id-jag\""),
        (format!(r#"{{"grantType": "id-jag", {idp}}}"#), "oauth.clientId", "authorization server"),
        (
            r#"{"grantType": "id-jag", "clientId": "c", "identityProvider": {"issuer": "https://i", "clientId": "i"}}"#.into(),
            "oauth.identityProvider.idToken",
            "is required",
        ),
        (
            r#"{"grantType": "id-jag", "clientId": "c", "identityProvider": {"issuer": "http://idp.example.com", "clientId": "i", "idToken": "t"}}"#.into(),
            "oauth.identityProvider.issuer",
            "not an https URL",
        ),
        (
            r#"{"grantType": "id-jag", "clientId": "c", "identityProvider": {"issuer": "https://i", "clientId": "", "idToken": "t"}}"#.into(),
            "oauth.identityProvider.clientId",
            "is empty",
        ),
        (
            r#"{"grantType": "id-jag", "clientId": "c", "identityProvider": "https://i"}"#.into(),
            "oauth.identityProvider",
            "expected an object",
        ),
        (r#"{"grantType": "jwt-bearer"}"#.into(), "oauth.grantType", "\"id-jag\""),
        (
            format!(r#"{{"grantType": "id-jag", "clientId": "c", "perPerson": true, {idp}}}"#),
            "oauth.identityProvider.idToken",
            "leave it out",
        ),
    ];
    for (oauth, field, says) in cases {
        let server = with(&oauth);
        assert_eq!(field_of(&server), field, "{oauth}");
        let message = &errors_for(&server)[0].message;
        assert!(message.contains(says), "{oauth}: {message}");
    }
}

/// Cross-app access for each person: no ID token is configured (each
/// person's comes from signing them in), and the server is per-person,
/// with no login of its own to take by itself.
#[test]
fn a_per_person_id_jag_server_signs_each_person_in_for_their_id_token() {
    let d = ConfigDirs::new();
    d.user(
        r#"{"mcpServers": {"s": {"url": "https://mcp.example.com/mcp", "oauth": {
            "grantType": "id-jag", "perPerson": true, "clientId": "mcpw-at-as",
            "identityProvider": {"issuer": "https://idp.example.com", "clientId": "mcpw"}}}}}"#,
    );
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    let server = &cfg.server("s").unwrap().config;
    assert!(server.per_person() && server.signs_in_for_id_tokens());
    assert!(!server.exchanges());
    assert!(
        !server.oauth.unattended(),
        "each person's, not the server's"
    );
    assert_eq!(
        server.oauth.identity_provider.as_ref().unwrap().id_token,
        None
    );
}

/// Each person's own login fits only an HTTP server mcpw logs in to as
/// that person: each misfit is named by `oauth.perPerson`, and the server is
/// not used.
#[test]
fn a_per_person_login_names_each_server_it_cannot_fit() {
    let cases = [
        (
            r#"{"command": "x", "oauth": {"perPerson": true}}"#,
            "one process",
        ),
        (
            r#"{"url": "https://m.example/mcp", "bearerToken": "t", "oauth": {"perPerson": true}}"#,
            "one credential",
        ),
        (
            r#"{"url": "https://m.example/mcp", "headers": {"Authorization": "Bearer t"}, "oauth": {"perPerson": true}}"#,
            "one credential",
        ),
        (
            r#"{"url": "https://m.example/mcp", "oauth": {"perPerson": true, "grantType": "client_credentials", "clientId": "c"}}"#,
            "one for everyone",
        ),
        (
            r#"{"url": "https://m.example/mcp", "oauth": {"perPerson": "yes"}}"#,
            "true or false",
        ),
    ];
    for (server, says) in cases {
        assert_eq!(field_of(server), "oauth.perPerson", "{server}");
        let message = &errors_for(server)[0].message;
        assert!(message.contains(says), "{server}: {message}");
    }
    let d = ConfigDirs::new();
    d.user(
        r#"{"mcpServers": {"s": {"url": "https://m.example/mcp", "oauth": {"perPerson": true}}}}"#,
    );
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    assert!(cfg.server("s").unwrap().config.per_person());
}

/// Token exchange is each caller's own: it needs the client mcpw is at the
/// issuer, fits only an HTTP server mcpw logs in to (named by
/// `oauth.grantType`), and makes the server a per-person one.
#[test]
fn token_exchange_is_a_per_person_grant_with_a_client_of_its_own() {
    let cases = [
        (
            r#"{"url": "https://m.example/mcp", "oauth": {"grantType": "token-exchange"}}"#,
            "needs `oauth.clientId`",
        ),
        (
            r#"{"command": "x", "oauth": {"grantType": "token-exchange", "clientId": "gw"}}"#,
            "one process",
        ),
        (
            r#"{"url": "https://m.example/mcp", "bearerToken": "t", "oauth": {"grantType": "token-exchange", "clientId": "gw"}}"#,
            "one credential",
        ),
    ];
    for (server, says) in cases {
        assert_eq!(field_of(server), "oauth.grantType", "{server}");
        let message = &errors_for(server)[0].message;
        assert!(message.contains(says), "{server}: {message}");
    }
    let d = ConfigDirs::new();
    d.user(
        r#"{"mcpServers": {"s": {"url": "https://m.example/mcp", "oauth": {"grantType": "token-exchange", "clientId": "gw", "clientSecret": "x"}}}}"#,
    );
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    let server = &cfg.server("s").unwrap().config;
    assert!(server.per_person() && server.exchanges());
}

/// `settings.perPerson.maxConnections` bounds the person connections; a
/// bad bound is named by its field, and the default stays.
#[test]
fn the_person_connections_bound_is_read_and_checked() {
    let d = ConfigDirs::new();
    d.user(r#"{"settings": {"perPerson": {"maxConnections": 40}}}"#);
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    assert_eq!(cfg.settings.per_person_max_connections, Some(40));
    for bad in [
        r#"{"maxConnections": 0}"#,
        r#"{"maxConnections": "many"}"#,
        r#"{"max": 3}"#,
        "7",
    ] {
        let d = ConfigDirs::new();
        d.user(&format!(r#"{{"settings": {{"perPerson": {bad}}}}}"#));
        let cfg = d.load();
        let fields: Vec<_> = cfg.diagnostics.iter().map(|d| d.field.clone()).collect();
        assert_eq!(fields, [Some("settings.perPerson".to_string())], "{bad}");
        assert_eq!(cfg.settings.per_person_max_connections, None, "{bad}");
    }
}
