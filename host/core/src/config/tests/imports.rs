//! Every import format, read from where each client keeps it.

use super::{ConfigDirs, command, write};
use crate::config::{ConfigSources, HttpKind, Transport};

fn with_import(d: &ConfigDirs, kind: &str) -> crate::config::Config {
    d.user(&format!(r#"{{"imports": ["{kind}"]}}"#));
    let cfg = d.load();
    assert!(!cfg.has_errors(), "{:?}", cfg.diagnostics);
    cfg
}

fn http(cfg: &crate::config::Config, name: &str) -> (String, Vec<(String, String)>, HttpKind) {
    match &cfg.server(name).unwrap().config.transport {
        Transport::Http { url, headers, kind } => (url.clone(), headers.clone(), *kind),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cursor() {
    let d = ConfigDirs::new();
    write(
        &d.home(),
        ".cursor/mcp.json",
        r#"{"mcpServers": {"c": {"command": "npx", "args": ["-y", "x"]}}}"#,
    );
    let cfg = with_import(&d, "cursor");
    assert_eq!(command(&cfg, "c"), "npx");
    assert_eq!(
        cfg.server("c").unwrap().origin.import.as_deref(),
        Some("cursor")
    );
}

#[test]
fn claude_code_user_and_project_servers() {
    let d = ConfigDirs::new();
    let project = d.project().display().to_string();
    write(
        &d.home(),
        ".claude.json",
        &format!(
            r#"{{"mcpServers": {{"u": {{"type": "stdio", "command": "user-cmd"}}, "p": {{"command": "overridden"}}}},
                "projects": {{"{project}": {{"mcpServers": {{"p": {{"type": "http", "url": "https://example.test/mcp"}}}}}},
                              "/elsewhere": {{"mcpServers": {{"other": {{"command": "no"}}}}}}}}}}"#
        ),
    );
    let cfg = with_import(&d, "claude-code");
    assert_eq!(command(&cfg, "u"), "user-cmd");
    assert_eq!(
        http(&cfg, "p").0,
        "https://example.test/mcp",
        "this project's entry wins"
    );
    assert!(
        cfg.server("other").is_none(),
        "other projects' servers are not imported"
    );
}

#[test]
fn claude_desktop_from_its_config_directory() {
    let d = ConfigDirs::new();
    write(
        &d.home(),
        ".config/Claude/claude_desktop_config.json",
        r#"{"mcpServers": {"cd": {"command": "desk"}}}"#,
    );
    assert_eq!(command(&with_import(&d, "claude-desktop"), "cd"), "desk");
}

/// A value another client's file gives is never a command: a leading `!`
/// is kept escaped (`!!`), which the secret resolver passes on as one `!`.
#[test]
fn a_leading_bang_in_another_clients_config_is_a_character() {
    let d = ConfigDirs::new();
    write(
        &d.home(),
        ".config/Claude/claude_desktop_config.json",
        r#"{"mcpServers": {"cd": {"command": "desk", "env": {"PASSWORD": "!s3cret; touch /tmp/x"}}}}"#,
    );
    let cfg = with_import(&d, "claude-desktop");
    let Transport::Stdio { env, .. } = &cfg.server("cd").unwrap().config.transport else {
        panic!()
    };
    assert_eq!(
        env[0].1, "!!s3cret; touch /tmp/x",
        "escaped as written, never run"
    );
}

/// Nor are the secrets of a cross-app login it names: the ID token and the
/// client secrets it sends the identity provider stay literal text.
#[test]
fn another_clients_cross_app_login_runs_no_command() {
    let d = ConfigDirs::new();
    write(
        &d.home(),
        ".pi/agent/mcp.json",
        r#"{"mcpServers": {"s": {"url": "https://mcp.example.com/mcp", "oauth": {
            "grantType": "id-jag", "clientId": "mcpw", "clientSecret": "!cat /etc/shadow",
            "identityProvider": {"issuer": "https://idp.example.com", "clientId": "mcpw",
                                 "clientSecret": "!touch /tmp/x", "idToken": "!curl evil"}}}}}"#,
    );
    let cfg = with_import(&d, "pi");
    let oauth = &cfg.server("s").unwrap().config.oauth;
    assert_eq!(oauth.client_secret.as_deref(), Some("!!cat /etc/shadow"));
    let idp = oauth.identity_provider.as_ref().unwrap();
    assert_eq!(idp.client_secret.as_deref(), Some("!!touch /tmp/x"));
    assert_eq!(
        idp.id_token.as_deref(),
        Some("!!curl evil"),
        "escaped as written, never run"
    );
}

#[test]
fn codex_toml() {
    let d = ConfigDirs::new();
    write(
        &d.home(),
        ".codex/config.toml",
        r#"
model = "o4"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-server"]
env = { "API_KEY" = "k" }
startup_timeout_sec = 20
disabled_tools = ["dangerous"]
enabled_tools = ["search", "read"]
tool_timeout_sec = 90

[mcp_servers.remote]
url = "https://mcp.example.test/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
http_headers = { "X-Team" = "core" }
env_http_headers = { "X-Key" = "KEY_VAR" }
"#,
    );
    let sources = ConfigSources {
        env: d.env.clone().with("KEY_VAR", "kv"),
        ..d.sources()
    };
    d.user(r#"{"imports": ["codex"]}"#);
    let cfg = crate::config::load(&sources);
    assert!(!cfg.has_errors(), "{:?}", cfg.diagnostics);
    let docs = &cfg.server("docs").unwrap().config;
    let Transport::Stdio { args, env, .. } = &docs.transport else {
        panic!()
    };
    assert_eq!(args, &["-y", "docs-server"]);
    assert_eq!(env, &[("API_KEY".to_string(), "k".to_string())]);
    assert_eq!(docs.startup_timeout_ms, 20_000);
    assert_eq!(docs.exclude_tools, vec!["dangerous"]);
    assert_eq!(docs.include_tools, vec!["search", "read"]);
    assert_eq!(docs.call_timeout_ms, Some(90_000));
    let (url, mut headers, _) = http(&cfg, "remote");
    headers.sort();
    assert_eq!(url, "https://mcp.example.test/mcp");
    assert_eq!(
        headers,
        vec![
            ("X-Key".to_string(), "kv".to_string()),
            ("X-Team".into(), "core".into())
        ]
    );
    assert_eq!(
        cfg.server("remote")
            .unwrap()
            .config
            .bearer_token_env
            .as_deref(),
        Some("REMOTE_TOKEN")
    );
}

#[test]
fn codex_home_moves_the_codex_config() {
    let d = ConfigDirs::new();
    let dir = d.root.path().join("codex-home");
    write(
        &dir,
        "config.toml",
        "[mcp_servers.x]\ncommand = \"elsewhere\"\n",
    );
    d.user(r#"{"imports": ["codex"]}"#);
    let sources = ConfigSources {
        env: d.env.clone().with("CODEX_HOME", dir.display().to_string()),
        ..d.sources()
    };
    assert_eq!(command(&crate::config::load(&sources), "x"), "elsewhere");
}

#[test]
fn bad_codex_toml_names_line_and_column() {
    let d = ConfigDirs::new();
    write(
        &d.home(),
        ".codex/config.toml",
        "[mcp_servers.x]\ncommand = \n",
    );
    d.user(r#"{"imports": ["codex"]}"#);
    let cfg = d.load();
    let err = cfg
        .diagnostics
        .iter()
        .find(|e| e.file.ends_with("config.toml"))
        .expect("reported");
    assert_eq!(err.line, Some(2), "{err}");
}

#[test]
fn windsurf_server_url() {
    let d = ConfigDirs::new();
    write(
        &d.home(),
        ".codeium/windsurf/mcp_config.json",
        r#"{"mcpServers": {"w": {"serverUrl": "https://w.example.test/sse"}, "l": {"command": "local"}}}"#,
    );
    let cfg = with_import(&d, "windsurf");
    assert_eq!(http(&cfg, "w").0, "https://w.example.test/sse");
    assert_eq!(command(&cfg, "l"), "local");
}

#[test]
fn vscode_servers_key_types_and_variables() {
    let d = ConfigDirs::new();
    write(
        &d.project(),
        ".vscode/mcp.json",
        r#"{
            // VS Code's format: `servers`, explicit types, its own variables
            "inputs": [],
            "servers": {
                "fs": {"type": "stdio", "command": "fs-server", "args": ["${workspaceFolder}/data"], "env": {"T": "${env:VS_TOKEN}"}},
                "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
            }
        }"#,
    );
    write(
        &d.home(),
        ".config/Code/User/mcp.json",
        r#"{"servers": {"fs": {"command": "user-level"}, "u": {"command": "u"}}}"#,
    );
    let sources = ConfigSources {
        env: d.env.clone().with("VS_TOKEN", "vt"),
        ..d.sources()
    };
    d.user(r#"{"imports": ["vscode"]}"#);
    // The workspace's file is the project's: its servers wait for approval,
    // and the user's own definition of `fs` stands meanwhile.
    let cfg = crate::config::load(&sources);
    assert_eq!(super::command(&cfg, "fs"), "user-level");
    let waiting: Vec<&str> = cfg.trust.waiting.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(waiting, ["fs", "legacy"]);
    d.user(r#"{"imports": ["vscode"], "settings": {"projectServers": "trust"}}"#);
    let cfg = crate::config::load(&sources);
    assert!(!cfg.has_errors(), "{:?}", cfg.diagnostics);
    let Transport::Stdio {
        command, args, env, ..
    } = &cfg.server("fs").unwrap().config.transport
    else {
        panic!()
    };
    assert_eq!(command, "fs-server", "the workspace file comes first");
    assert_eq!(args, &[format!("{}/data", d.project().display())]);
    assert_eq!(env[0].1, "vt");
    assert_eq!(http(&cfg, "legacy").2, HttpKind::Sse);
    assert_eq!(super::command(&cfg, "u"), "u");
}

#[test]
fn pi_both_keys() {
    let d = ConfigDirs::new();
    write(
        &d.home(),
        ".pi/agent/mcp.json",
        r#"{"mcpServers": {"a": {"command": "a"}}, "mcp-servers": {"b": {"command": "b"}}}"#,
    );
    let cfg = with_import(&d, "pi");
    assert_eq!(
        (command(&cfg, "a"), command(&cfg, "b")),
        ("a".into(), "b".into())
    );
}

#[test]
fn a_missing_import_file_is_listed_not_an_error() {
    let d = ConfigDirs::new();
    let cfg = with_import(&d, "cursor");
    let src = cfg
        .sources
        .iter()
        .find(|s| s.import.as_deref() == Some("cursor"))
        .unwrap();
    assert!(!src.found);
    assert!(src.path.ends_with(".cursor/mcp.json"));
}

#[test]
fn imported_servers_are_validated_and_named_by_their_file() {
    let d = ConfigDirs::new();
    let file = write(
        &d.home(),
        ".cursor/mcp.json",
        r#"{"mcpServers": {"bad": {"command": "x", "url": "http://y"}, "ok": {"command": "z"}}}"#,
    );
    d.user(r#"{"imports": ["cursor"]}"#);
    let cfg = d.load();
    assert_eq!(cfg.servers.len(), 1);
    let err = &cfg.diagnostics[0];
    assert_eq!(
        (err.file.as_path(), err.server.as_deref()),
        (file.as_path(), Some("bad"))
    );
}
