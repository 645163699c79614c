//! `mcpw doctor`: one fixture home per case a client silently ignores
//! (`tests/fixtures/doctor/<case>`), a live server, and what doctor must not
//! do: start a project server that waits for approval, or a login.

use crate::common::{ConfigDirs, fixture};
use crate::servers::{Background, mcpw_in, servers};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A fixture copied into a scratch folder: its `home` and `project`.
struct Case {
    root: tempfile::TempDir,
}

impl Case {
    /// `tests/fixtures/doctor/<name>`, its project made a git repository when `git`.
    fn new(name: &str, git: bool) -> Case {
        let root = tempfile::tempdir().unwrap();
        copy(&fixture("doctor").join(name), root.path());
        for dir in ["home", "project"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        if git {
            std::fs::create_dir_all(root.path().join("project/.git")).unwrap();
        }
        Case { root }
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }

    /// `mcpw doctor --json --offline` in the project; its report and exit status.
    fn doctor(&self) -> (Value, Output) {
        doctor_in(&self.home(), &self.project(), &["--offline"])
    }
}

fn copy(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn doctor_in(home: &Path, project: &Path, extra: &[&str]) -> (Value, Output) {
    let out = mcpw_in(home)
        .args(["doctor", "--json"])
        .args(extra)
        .current_dir(project)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (report, out)
}

/// The findings of `check`.
fn findings<'a>(report: &'a Value, check: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check)
        .collect()
}

/// The one finding of `check` and `severity` about `server`, with a remedy
/// that says `remedy`.
fn expect<'a>(
    report: &'a Value,
    check: &str,
    server: Option<&str>,
    severity: &str,
    remedy: &str,
) -> &'a Value {
    let found: Vec<&Value> = findings(report, check)
        .into_iter()
        .filter(|f| server.is_none_or(|s| f["server"] == s) && f["severity"] == severity)
        .collect();
    assert_eq!(found.len(), 1, "{check} {server:?}: {report:#}");
    let f = found[0];
    assert_eq!(f["severity"], severity, "{f:#}");
    let said = f["remedy"].as_str().unwrap();
    assert!(said.contains(remedy), "remedy {said:?} lacks {remedy:?}");
    f
}

fn blocking(report: &Value) -> u64 {
    report["summary"]["blocking"].as_u64().unwrap()
}

#[test]
fn a_server_in_claude_codes_settings_file_is_not_read() {
    let case = Case::new("settings-servers", true);
    let (report, out) = case.doctor();
    let f = expect(
        &report,
        "not-read",
        Some("github"),
        "blocking",
        "~/.claude.json",
    );
    assert_eq!(f["client"], "claude-code");
    assert!(
        f["file"]
            .as_str()
            .unwrap()
            .ends_with(".claude/settings.json")
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn vscode_does_not_read_mcp_servers_in_its_file() {
    let case = Case::new("vscode-key", true);
    let (report, out) = case.doctor();
    let f = expect(
        &report,
        "not-read",
        Some("browser"),
        "blocking",
        "`servers`",
    );
    assert_eq!(f["client"], "vscode");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn one_bad_entry_in_an_approval_list_is_named() {
    let case = Case::new("bad-list-entry", true);
    let (report, out) = case.doctor();
    let f = expect(&report, "approval-list", None, "blocking", "entry 2");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("enabledMcpjsonServers"),
        "{f}"
    );
    assert!(f["message"].as_str().unwrap().contains("is 7"), "{f}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("ignores this whole settings file"),
        "{f}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_name_in_an_approval_list_that_matches_nothing_is_a_warning() {
    let case = Case::new("unknown-list-name", true);
    let (report, out) = case.doctor();
    let f = expect(
        &report,
        "approval-list-unknown",
        Some("dcos"),
        "warning",
        "remove \"dcos\"",
    );
    assert!(f["message"].as_str().unwrap().contains("docs"), "{f}");
    assert_eq!(blocking(&report), 0, "{report:#}");
    assert_eq!(out.status.code(), Some(0));
}

/// Claude Code (2.1, as checked against its CLI) loads a project's
/// `.mcp.json` servers once the user approves them, in a git repository or
/// not; until then an interactive session leaves them out, and a user-scope
/// server of the same name is used instead.
#[test]
fn a_project_server_claude_code_has_not_approved_waits_and_gives_way() {
    for git in [false, true] {
        let case = Case::new("pending-approval", git);
        let (report, out) = case.doctor();
        assert!(findings(&report, "outside-git").is_empty(), "{report:#}");
        for name in ["docs", "lint"] {
            let f = expect(
                &report,
                "pending-approval",
                Some(name),
                "warning",
                "enabledMcpjsonServers",
            );
            assert!(
                f["message"].as_str().unwrap().contains("`claude -p` does"),
                "{f}"
            );
        }
        let used = expect(&report, "definition", Some("lint"), "info", "");
        assert!(
            used["message"].as_str().unwrap().contains("user scope"),
            "{used}"
        );
        assert_eq!(out.status.code(), Some(0), "{report:#}");
    }
    // Approved in the local settings, it loads.
    let case = Case::new("pending-approval", true);
    std::fs::create_dir_all(case.project().join(".claude")).unwrap();
    std::fs::write(
        case.project().join(".claude/settings.local.json"),
        r#"{"enabledMcpjsonServers": ["docs"]}"#,
    )
    .unwrap();
    let (report, _) = case.doctor();
    let used = expect(&report, "definition", Some("docs"), "info", "");
    assert!(
        used["message"].as_str().unwrap().contains("project scope"),
        "{used}"
    );
    expect(
        &report,
        "pending-approval",
        Some("lint"),
        "warning",
        "claude",
    );
}

/// Claude Code reads the `.mcp.json` of every folder above the project too.
#[test]
fn a_mcp_json_in_a_folder_above_the_project_is_read_too() {
    let case = Case::new("parent-mcp-json", false);
    let (report, _) = case.doctor();
    let f = expect(&report, "definition", Some("shared"), "info", "");
    let above = case.root.path().canonicalize().unwrap().join(".mcp.json");
    assert_eq!(f["file"], above.display().to_string(), "{f}");
    assert_eq!(f["client"], "claude-code");
}

#[test]
fn hidden_characters_in_a_name_or_a_command_are_shown() {
    let case = Case::new("hidden-characters", true);
    let (report, out) = case.doctor();
    let name = expect(
        &report,
        "hidden-characters",
        Some("github\u{a0}"),
        "blocking",
        "rename it to \"github\"",
    );
    assert!(
        name["message"].as_str().unwrap().contains("\\u{00a0}"),
        "{name}"
    );
    let command = expect(
        &report,
        "hidden-characters",
        Some("fetch"),
        "blocking",
        "\"sh\"",
    );
    assert!(
        command["message"].as_str().unwrap().contains("command"),
        "{command}"
    );
    assert_eq!(blocking(&report), 2, "{report:#}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn an_unset_variable_is_named() {
    let case = Case::new("unresolved-var", true);
    let (report, out) = case.doctor();
    let f = expect(
        &report,
        "unresolved-var",
        Some("search"),
        "blocking",
        "set DOCTOR_FIXTURE_UNSET_KEY",
    );
    assert!(
        f["message"].as_str().unwrap().contains("env.API_KEY"),
        "{f}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_command_not_on_path_is_named() {
    let case = Case::new("command-not-found", true);
    let (report, out) = case.doctor();
    let f = expect(
        &report,
        "command-not-found",
        Some("notes"),
        "blocking",
        "absolute path",
    );
    assert_eq!(f["client"], "claude-desktop");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_file_that_does_not_parse_loads_nothing() {
    let case = Case::new("parse-error", true);
    let (report, out) = case.doctor();
    let f = expect(&report, "parse-error", None, "blocking", "syntax");
    assert_eq!(f["client"], "pi");
    assert!(f["message"].as_str().unwrap().contains("line 2"), "{f}");
    assert_eq!(out.status.code(), Some(1));
}

/// A connected server's tool definitions are linted: one without a
/// description and one whose schema requires a property it does not have
/// are each named, the sound one is not, and none of this blocks.
#[test]
fn a_live_servers_careless_tool_definitions_are_named() {
    let dirs = ConfigDirs::new();
    let sloppy = json!({"command": "node", "args": [servers().misbehave(), "sloppy"]});
    dirs.user(&json!({"mcpServers": {"sloppy": sloppy}}).to_string());
    let (report, out) = doctor_in(&dirs.home(), &dirs.project(), &[]);
    let lints = findings(&report, "schema-lint");
    let about = |tool: &str| {
        lints
            .iter()
            .filter(|f| {
                f["message"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("\"{tool}\""))
            })
            .map(|f| f["message"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let vague = about("vague");
    assert!(
        vague.len() == 1 && vague[0].contains("no description"),
        "{report:#}"
    );
    let broken = about("broken");
    assert!(
        broken.len() == 1 && broken[0].contains("requires \"town\""),
        "{report:#}"
    );
    assert!(about("fine").is_empty(), "{report:#}");
    assert!(
        lints
            .iter()
            .all(|f| f["severity"] == "warning" && f["server"] == "sloppy")
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "warnings do not block: {report:#}"
    );
}

#[test]
fn a_live_server_reports_its_revision_and_tools() {
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"everything": {"command": "node", "args": [servers().everything(), "stdio"]}}})
            .to_string(),
    );
    let (report, out) = doctor_in(&dirs.home(), &dirs.project(), &[]);
    let f = expect(&report, "connect", Some("everything"), "info", "");
    let message = f["message"].as_str().unwrap();
    assert!(message.contains("protocol revision 20"), "{message}");
    let tools: u32 = message
        .split(", ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no tool count in {message}"));
    assert!(tools > 5, "{message}");
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    // --offline connects nothing.
    let (report, _) = doctor_in(&dirs.home(), &dirs.project(), &["--offline"]);
    assert!(findings(&report, "connect").is_empty(), "{report:#}");
}

#[test]
fn a_project_server_waiting_for_trust_is_not_started() {
    let case = Case::new("pending-approval", true);
    std::fs::remove_file(case.home().join(".claude.json")).unwrap();
    let marker = case.root.path().join("started");
    std::fs::write(
        case.project().join(".mcp.json"),
        json!({"mcpServers": {"docs": {"command": "sh", "args": ["-c", format!("touch {}", marker.display())]}}})
            .to_string(),
    )
    .unwrap();
    let (report, out) = doctor_in(&case.home(), &case.project(), &[]);
    expect(
        &report,
        "waiting-for-trust",
        Some("docs"),
        "warning",
        "mcpw trust docs",
    );
    assert!(findings(&report, "connect").is_empty(), "{report:#}");
    assert!(
        !marker.exists(),
        "doctor started a project server waiting for approval"
    );
    assert_eq!(out.status.code(), Some(0), "{report:#}");
}

#[test]
fn a_server_that_asks_for_a_login_is_reported_not_logged_in_to() {
    let server = Background::node(&[&servers().oauth_server()], &[]);
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"o": {"url": server.url("/mcp")}},
                "settings": {"credentialStore": "file"}})
        .to_string(),
    );
    // A browser that would finish a login, were one started.
    let browser = crate::common::workspace().join("tests/conformance/browser.sh");
    let out = mcpw_in(&dirs.home())
        .args(["doctor", "--json"])
        .env("BROWSER", browser)
        .current_dir(dirs.project())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    expect(&report, "login", Some("o"), "blocking", "mcpw auth login o");
    assert!(
        !dirs.home().join(".config/mcpw/credentials").exists(),
        "doctor logged in"
    );
    assert_eq!(out.status.code(), Some(1));
}

/// Each service doctor says it checks is checked, and a fault in each is
/// found: a Redis that does not answer, a model folder without its files, a
/// collector that refuses, a guest that is not of its role, and a pinned
/// tool whose definition moved from its pin.
#[test]
fn the_gateways_services_guests_and_pins_are_each_checked() {
    let dirs = ConfigDirs::new();
    let closed = crate::servers::free_port();
    let misbehave = json!({"command": "node", "args": [servers().misbehave(), "ok"]});
    dirs.user(
        &json!({"mcpServers": {"m": misbehave},
                "settings": {"pinTools": true,
                             "sharedState": format!("redis://127.0.0.1:{closed}"),
                             "search": {"model": dirs.root.path().join("no-model").display().to_string()},
                             "plugins": {"ranking": crate::gateway::guards::redactor()}}})
        .to_string(),
    );
    let otel = format!("http://127.0.0.1:{closed}");
    let doctor = || {
        let out = mcpw_in(&dirs.home())
            .args(["doctor", "--json"])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otel)
            .current_dir(dirs.project())
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        });
        (report, out)
    };
    let (report, out) = doctor();
    expect(&report, "shared-state", None, "blocking", "start the Redis");
    expect(
        &report,
        "embedding-model",
        None,
        "blocking",
        "settings.search.model",
    );
    expect(
        &report,
        "trace-exporter",
        None,
        "blocking",
        "start the collector",
    );
    expect(
        &report,
        "guest-contract",
        None,
        "blocking",
        "mcpw plugin test",
    );
    expect(&report, "pins", Some("m"), "info", "");
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    // The echo tool's pin no longer matches what the server lists.
    let pins_file = dirs.home().join(".local/state/mcpw/pins.json");
    let echo = json!({"digest": "another", "definition": {"name": "echo"}});
    let pins = json!({"servers": {"user#m": {"server": "m", "keyedByKind": true,
                                             "tools": {"tool:echo": echo}}}});
    std::fs::create_dir_all(pins_file.parent().unwrap()).unwrap();
    std::fs::write(&pins_file, pins.to_string()).unwrap();
    let (report, _) = doctor();
    let drift = expect(&report, "pins", Some("m"), "warning", "mcpw trust");
    assert!(
        drift["message"].as_str().unwrap().contains("echo"),
        "{drift:#}"
    );
}
