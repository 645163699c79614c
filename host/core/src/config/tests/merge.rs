//! Merge rules: user file → imports (fill in) → project `.mcp.json` →
//! project `.mcpw/mcp.json`; settings user → project; interpolation; JSONC.

use super::{ConfigDirs, command, server_origins, write};
use crate::config::{self, Capability, ConfigSources, PrefixMode, Role, Severity, Transport};

#[test]
fn the_user_file_defaults_to_xdg_config_home() {
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": {"a": {"command": "from-home-config"}}}"#);
    assert_eq!(command(&d.load(), "a"), "from-home-config");
    // XDG_CONFIG_HOME moves it.
    let xdg = d.root.path().join("xdg");
    write(
        &xdg,
        "mcpw/mcp.json",
        r#"{"mcpServers": {"a": {"command": "from-xdg"}}}"#,
    );
    let sources = ConfigSources {
        env: d
            .env
            .clone()
            .with("XDG_CONFIG_HOME", xdg.display().to_string()),
        ..d.sources()
    };
    assert_eq!(command(&config::load(&sources), "a"), "from-xdg");
}

#[test]
fn config_flag_and_mcpw_config_replace_the_user_file() {
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": {"a": {"command": "default"}}}"#);
    let other = write(
        d.root.path(),
        "other.json",
        r#"{"mcpServers": {"a": {"command": "env"}}}"#,
    );
    let flag = write(
        d.root.path(),
        "flag.json",
        r#"{"mcpServers": {"a": {"command": "flag"}}}"#,
    );
    let env = d
        .env
        .clone()
        .with("MCPW_CONFIG", other.display().to_string());
    let via_env = ConfigSources {
        env: env.clone(),
        ..d.sources()
    };
    assert_eq!(command(&config::load(&via_env), "a"), "env");
    let via_flag = ConfigSources {
        user_file: Some(flag),
        env,
        ..d.sources()
    };
    assert_eq!(
        command(&config::load(&via_flag), "a"),
        "flag",
        "--config wins over MCPW_CONFIG"
    );
}

#[test]
fn an_explicit_config_file_must_exist_the_default_need_not() {
    let d = ConfigDirs::new();
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    assert!(cfg.servers.is_empty());
    let missing = ConfigSources {
        user_file: Some(d.root.path().join("nope.json")),
        ..d.sources()
    };
    let cfg = config::load(&missing);
    assert!(cfg.has_errors());
    assert!(cfg.diagnostics[0].to_string().contains("nope.json"));
}

#[test]
fn imports_only_fill_in_and_project_files_override() {
    let d = ConfigDirs::new();
    d.user(r#"{"imports": ["cursor"], "mcpServers": {"shared": {"command": "user"}, "mine": {"command": "user"}},
               "settings": {"projectServers": "trust"}}"#);
    write(
        &d.home(),
        ".cursor/mcp.json",
        r#"{"mcpServers": {"shared": {"command": "cursor"}, "cur": {"command": "cursor"}, "proj": {"command": "cursor"}}}"#,
    );
    write(
        &d.project(),
        ".mcp.json",
        r#"{"mcpServers": {"proj": {"command": "dot-mcp"}, "both": {"command": "dot-mcp"}}}"#,
    );
    write(
        &d.project(),
        ".mcpw/mcp.json",
        r#"{"mcpServers": {"both": {"command": "mcpw-project"}, "mine": {"command": "mcpw-project"}}}"#,
    );
    let cfg = d.load();
    assert!(!cfg.has_errors(), "{:?}", cfg.diagnostics);
    assert_eq!(
        command(&cfg, "shared"),
        "user",
        "an import never replaces a defined name"
    );
    assert_eq!(command(&cfg, "cur"), "cursor");
    assert_eq!(
        command(&cfg, "proj"),
        "dot-mcp",
        "project files override imports"
    );
    assert_eq!(
        command(&cfg, "both"),
        "mcpw-project",
        ".mcpw/mcp.json wins over .mcp.json"
    );
    assert_eq!(
        command(&cfg, "mine"),
        "mcpw-project",
        "project files override the user file"
    );
    assert_eq!(
        server_origins(&cfg),
        [
            ("shared", "user"),
            ("mine", "project"),
            ("cur", "import:cursor"),
            ("proj", "project"),
            ("both", "project")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let kinds: Vec<_> = cfg
        .sources
        .iter()
        .map(|s| (s.kind.to_string(), s.found))
        .collect();
    assert_eq!(
        kinds,
        [
            ("user", true),
            ("import", true),
            ("project", true),
            ("project", true)
        ]
        .map(|(k, f)| (k.to_string(), f))
    );
}

#[test]
fn imports_listed_in_a_project_file_count_too() {
    let d = ConfigDirs::new();
    write(
        &d.home(),
        ".cursor/mcp.json",
        r#"{"mcpServers": {"cur": {"command": "cursor"}}}"#,
    );
    write(&d.project(), ".mcp.json", r#"{"imports": ["cursor"]}"#);
    // What only a project asks for waits for approval, as its own servers do.
    let cfg = d.load();
    assert!(cfg.server("cur").is_none());
    assert_eq!(cfg.trust.waiting[0].name, "cur");
    d.user(r#"{"settings": {"projectServers": "trust"}}"#);
    assert_eq!(command(&d.load(), "cur"), "cursor");
    // The user asking for the same import makes it the user's.
    d.user(r#"{"imports": ["cursor"]}"#);
    assert_eq!(command(&d.load(), "cur"), "cursor");
}

#[test]
fn kebab_case_servers_key_and_comments() {
    let d = ConfigDirs::new();
    d.user(
        r#"{
        // servers under the kebab-case key
        "mcp-servers": {
            "a": { "command": "x", /* inline */ "args": ["1", "2",], },
        },
    }"#,
    );
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    let Transport::Stdio { args, .. } = &cfg.server("a").unwrap().config.transport else {
        panic!()
    };
    assert_eq!(args, &["1", "2"]);
}

#[test]
fn settings_merge_user_then_project() {
    let d = ConfigDirs::new();
    write(&d.home(), ".config/mcpw/rank.wasm", "");
    d.user(
        r#"{"settings": {"toolPrefix": "short", "idleTimeout": 5, "resultBudget": 9000,
            "plugins": {"ranking": "rank.wasm", "grants": {"ranking": ["catalog"]}, "limits": {"memoryMiB": 32}}}}"#,
    );
    write(
        &d.project(),
        ".mcpw/mcp.json",
        r#"{"settings": {"idleTimeout": 0, "resultBudget": 4000, "exposure": "proxy"}}"#,
    );
    let cfg = d.load();
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    let s = &cfg.settings;
    assert_eq!(s.tool_prefix, PrefixMode::Short, "kept from the user file");
    assert_eq!(s.idle_timeout, 0.0, "overridden by the project");
    assert_eq!(s.raw["resultBudget"], 4000, "overridden by the project");
    assert_eq!(s.raw["exposure"], "proxy", "proposed by the project");
    assert_eq!(
        s.plugins.guests[&Role::Ranking],
        d.home().join(".config/mcpw/rank.wasm"),
        "relative to the user file"
    );
    assert!(s.plugins.grants[&Role::Ranking].allows(Capability::Catalog));
    assert_eq!(s.plugins.limits.memory_bytes, 32 << 20);
}

/// A cloned repository's settings: none that could run or load code, grant
/// access, rename what the user's rules match, send data away or fetch
/// from the network is taken; each is named in a warning.
#[test]
fn a_project_file_cannot_set_what_runs_loads_grants_or_fetches() {
    let d = ConfigDirs::new();
    write(&d.project(), ".mcpw/name.wasm", "");
    d.user(r#"{"settings": {"exposure": "direct"}}"#);
    let hostile = serde_json::json!({"settings": {
        "sharedState": "redis://127.0.0.1:1/0", "sharedStateKey": "!touch /tmp/pwned",
        "credentialStore": "file", "search": {"model": "owner/name"},
        "captureStats": true, "scriptLimits": {"timeoutMs": 600000}, "codeMode": true,
        "exposure": "code", "toolPrefix": "none", "audit": "stderr", "resultStore": {"ttlMinutes": 1},
        "guards": [], "approve": "none", "approveWithoutClient": "allow",
        "rateLimit": "1000/s", "guardFailure": "open", "projectServers": "trust"
    }});
    write(&d.project(), ".mcpw/mcp.json", &hostile.to_string());
    let cfg = d.load();
    let refused: Vec<&str> = cfg
        .diagnostics
        .iter()
        .filter(|g| {
            g.severity == Severity::Warning && g.message.contains("a project file may not set this")
        })
        .filter_map(|g| g.field.as_deref())
        .collect();
    for key in hostile["settings"].as_object().unwrap().keys() {
        assert!(
            refused.contains(&format!("settings.{key}").as_str()),
            "{key}: {:?}",
            cfg.diagnostics
        );
    }
    let s = &cfg.settings;
    assert!(s.plugins.guests.is_empty(), "no project guest");
    assert!(
        !s.plugins.grants.contains_key(&Role::Naming),
        "no grant from a project"
    );
    assert_eq!(
        s.search.model,
        crate::config::search::ModelChoice::Default,
        "no model of a project's fetched"
    );
    assert_eq!(s.raw.get("sharedStateKey"), None);
    assert_eq!(
        s.raw["exposure"], "direct",
        "the code exposure is the user's to choose"
    );
    assert_eq!(s.tool_prefix, PrefixMode::default());
}

#[test]
fn interpolation_in_every_string_field() {
    let d = ConfigDirs::new();
    let sources = ConfigSources {
        env: d
            .env
            .clone()
            .with("TOKEN", "s3cret")
            .with("BIN", "/opt/bin")
            .with("PORT", "8080"),
        ..d.sources()
    };
    d.user(
        r#"{"mcpServers": {
            "s": {"command": "${BIN}/server", "args": ["--token=$env:TOKEN", "${MISSING:-dflt}"],
                  "env": {"API_KEY": "${TOKEN}", "N": 3}, "cwd": "${HOME}/work"},
            "h": {"url": "http://127.0.0.1:${PORT}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"},
                  "bearerToken": "${TOKEN}"}
        }}"#,
    );
    let cfg = config::load(&sources);
    assert!(cfg.diagnostics.is_empty(), "{:?}", cfg.diagnostics);
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &cfg.server("s").unwrap().config.transport
    else {
        panic!()
    };
    assert_eq!(command, "/opt/bin/server");
    assert_eq!(args, &["--token=s3cret", "dflt"]);
    assert_eq!(
        env,
        &[
            ("API_KEY".to_string(), "s3cret".to_string()),
            ("N".into(), "3".into())
        ]
    );
    assert_eq!(
        cwd.as_deref(),
        Some(format!("{}/work", d.home().display()).as_str())
    );
    let h = &cfg.server("h").unwrap().config;
    let Transport::Http { url, headers, .. } = &h.transport else {
        panic!()
    };
    assert_eq!(url, "http://127.0.0.1:8080/mcp");
    assert_eq!(headers[0].1, "Bearer s3cret");
    assert_eq!(h.bearer_token.as_deref(), Some("s3cret"));
}

#[test]
fn a_server_with_an_unset_variable_is_not_started_and_the_variable_is_named() {
    let d = ConfigDirs::new();
    d.user(
        r#"{"mcpServers": {"s": {"command": "x", "env": {"K": "${NOT_SET}"}},
                           "ok": {"command": "y", "args": ["${ALSO_NOT_SET:-fine}"]}}}"#,
    );
    let cfg = d.load();
    assert!(
        cfg.server("s").is_none(),
        "not started with a literal ${{NOT_SET}}"
    );
    assert!(cfg.server("ok").is_some(), "a default is a value");
    let d0 = &cfg.diagnostics[0];
    assert_eq!(
        (d0.severity, d0.server.as_deref(), d0.field.as_deref()),
        (Severity::Error, Some("s"), Some("env.K"))
    );
    assert!(d0.message.contains("NOT_SET is not set"), "{}", d0.message);
}

#[test]
fn an_unterminated_reference_is_warned_about() {
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": {"s": {"command": "x", "args": ["${HOME"]}}}"#);
    let cfg = d.load();
    let d0 = &cfg.diagnostics[0];
    assert_eq!(
        (d0.severity, d0.field.as_deref()),
        (Severity::Warning, Some("args[0]"))
    );
    assert!(d0.message.contains("closing"), "{}", d0.message);
}

#[test]
fn secret_commands_are_not_interpolated_at_load() {
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": {"s": {"command": "x", "env": {"K": "!pass show $USER/api"}}}}"#);
    let cfg = d.load();
    let Transport::Stdio { env, .. } = &cfg.server("s").unwrap().config.transport else {
        panic!()
    };
    assert_eq!(env[0].1, "!pass show $USER/api");
}

#[test]
fn disabled_servers_stay_in_the_config() {
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": {"a": {"command": "x", "enabled": false}, "b": {"command": "y", "disabled": true}, "c": {"command": "z"}}}"#);
    let cfg = d.load();
    let enabled: Vec<bool> = cfg.servers.iter().map(|s| s.config.enabled).collect();
    assert_eq!(enabled, vec![false, false, true]);
}

/// `serve.tokens` and `serve.oauth` come from the user file alone: a project
/// file that says who may connect is reported and ignored, so it cannot
/// grant access; the user's tokens stay as written.
#[test]
fn client_tokens_come_from_the_user_file_only() {
    let d = ConfigDirs::new();
    d.user(
        r#"{"mcpServers": {"git": {"command": "g"}}, "settings": {"projectServers": "trust"},
            "serve": {"tokens": [{"name": "ci", "token": "user-secret", "servers": ["git"]}]}}"#,
    );
    let project = write(
        &d.project(),
        ".mcpw/mcp.json",
        r#"{"mcpServers": {"time": {"command": "t"}},
            "serve": {"tokens": [{"name": "ci", "token": "project-secret"},
                                 {"name": "intruder", "token": "known-to-all"}],
                      "oauth": {"resource": "https://mcp.example.com/mcp",
                                "issuers": [{"issuer": "https://idp.evil.example"}]}}}"#,
    );
    let cfg = d.load();
    let tokens: Vec<(&str, Option<&Vec<String>>)> = cfg
        .serve
        .tokens
        .iter()
        .map(|t| (t.name.as_str(), t.servers.as_ref()))
        .collect();
    assert_eq!(tokens, vec![("ci", Some(&vec!["git".to_string()]))]);
    // Nor can it name an identity provider whose tokens would be admitted.
    assert_eq!(cfg.serve.oauth, None);
    assert_eq!(
        cfg.serve.tokens[0].source,
        config::TokenSource::Value("user-secret".into())
    );
    let refused: Vec<_> = cfg
        .diagnostics
        .iter()
        .filter(|d| d.field.as_deref() == Some("serve"))
        .collect();
    assert_eq!(refused.len(), 1, "{:?}", cfg.diagnostics);
    assert_eq!(
        (refused[0].severity, &refused[0].file),
        (Severity::Error, &project)
    );
    assert!(
        refused[0].message.contains("ignored"),
        "{}",
        refused[0].message
    );
    // Only the serve key is refused: the project's servers still load.
    assert!(cfg.server("time").is_some());
    // `config show` masks the user's token.
    let shown = config::show::to_json(&cfg).to_string();
    assert!(!shown.contains("user-secret"), "{shown}");
    assert!(config::show::to_text(&cfg).contains("Serve:"));
}

/// A token naming servers no source defines gets a warning naming them (and
/// keeps the servers it names that exist).
#[test]
fn tokens_naming_unknown_servers_are_warned_of() {
    let d = ConfigDirs::new();
    d.user(
        r#"{"mcpServers": {"git": {"command": "g"}},
            "serve": {"tokens": [{"name": "ok", "token": "a-token"},
                                 {"name": "ci", "token": "b-token", "servers": ["git", "gti", "tim"]}]}}"#,
    );
    let cfg = d.load();
    assert!(!cfg.has_errors(), "{:?}", cfg.diagnostics);
    assert_eq!(cfg.diagnostics.len(), 1, "{:?}", cfg.diagnostics);
    let w = &cfg.diagnostics[0];
    assert_eq!(w.severity, Severity::Warning);
    assert_eq!(w.field.as_deref(), Some("serve.tokens[1].servers"));
    assert!(
        w.message.contains("token \"ci\"")
            && w.message.contains("\"gti\", \"tim\"")
            && !w.message.contains("\"git\","),
        "{}",
        w.message
    );
    assert_eq!(cfg.serve.tokens.len(), 2);
}

/// A project's own guest waits for the user's approval of that file with
/// those grants; approved, it loads; a swapped file waits again. Its
/// sandbox limits and the tools it would list for guests to call are
/// refused with a warning each (the user's list stands), and grants for a
/// role it brings no guest for are not taken.
#[test]
fn a_projects_guest_waits_for_approval_of_its_file_and_grants() {
    let d = ConfigDirs::new();
    write(&d.project(), ".mcpw/name.wasm", "guest one");
    let project = serde_json::json!({"settings": {"plugins": {
        "naming": "name.wasm", "grants": {"naming": ["calls"], "ranking": ["calls"]},
        "limits": {"memoryMiB": 4096},
        "calls": {"naming": ["*"]}
    }}});
    write(&d.project(), ".mcpw/mcp.json", &project.to_string());
    d.user(r#"{"settings": {"plugins": {"calls": {"naming": ["docs__*"]}}}}"#);
    let cfg = d.load();
    let waiting: Vec<&str> = cfg.trust.waiting.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(waiting, ["guest:naming"]);
    let w = &cfg.trust.waiting[0];
    assert!(w.runs.ends_with(".mcpw/name.wasm"), "{}", w.runs);
    assert_eq!(
        w.covers[..2],
        ["role: naming".to_string(), "grants: calls".to_string()]
    );
    assert!(
        cfg.settings.plugins.guests.is_empty(),
        "not loaded before approval"
    );
    for field in ["settings.plugins.limits", "settings.plugins.calls"] {
        let warned = cfg.diagnostics.iter().any(|g| {
            g.field.as_deref() == Some(field)
                && g.severity == crate::config::Severity::Warning
                && g.message.contains("ignored")
        });
        assert!(warned, "{field}: {:?}", cfg.diagnostics);
    }

    let file = d.env.state_dir().join(crate::config::trust::FILE_NAME);
    let repository = cfg.trust.repository.clone().unwrap();
    crate::config::trust::update(&file, |a| a.approve(&repository, w, 1)).unwrap();
    let cfg = d.load();
    assert!(cfg.trust.waiting.is_empty(), "{:?}", cfg.trust.waiting);
    let s = &cfg.settings;
    assert_eq!(
        s.plugins.guests[&Role::Naming],
        d.project().join(".mcpw/name.wasm")
    );
    assert!(s.plugins.grants[&Role::Naming].allows(Capability::Calls));
    assert!(
        !s.plugins.grants.contains_key(&Role::Ranking),
        "no guest of its own there"
    );
    assert_ne!(s.plugins.limits.memory_bytes, 4096 << 20);
    assert_eq!(
        s.plugins.calls[&Role::Naming],
        ["docs__*"],
        "the user's list stands"
    );

    write(&d.project(), ".mcpw/name.wasm", "guest two");
    let cfg = d.load();
    assert_eq!(cfg.trust.waiting[0].name, "guest:naming");
    assert!(cfg.trust.waiting[0].changed, "a swapped file waits again");
    assert!(cfg.settings.plugins.guests.is_empty());
}
