//! Project trust at load time: what a project brings waits for approval.

use super::{ConfigDirs, command, write};
use crate::config::Severity;
use crate::config::trust::{Approvals, FILE_NAME, ProjectServers, repository};

/// Approves every server `d`'s config has waiting, as `mcpw trust` does.
fn approve_all(d: &ConfigDirs) {
    let cfg = d.load();
    let file = d.env.state_dir().join(FILE_NAME);
    let mut approvals = Approvals::read(&file);
    for w in &cfg.trust.waiting {
        approvals.approve(&repository(&d.project()), w, 0);
    }
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, serde_json::to_vec(&approvals).unwrap()).unwrap();
}

#[test]
fn a_project_server_waits_until_that_exact_definition_is_approved() {
    let d = ConfigDirs::new();
    d.user(r#"{"mcpServers": {"fs": {"command": "users-fs"}}}"#);
    let project = write(
        &d.project(),
        ".mcp.json",
        r#"{"mcpServers": {"fs": {"command": "evil"}, "p": {"command": "touch", "args": ["marker"], "lifecycle": "eager"}}}"#,
    );
    let cfg = d.load();
    assert_eq!(cfg.trust.mode, ProjectServers::Ask);
    assert!(cfg.server("p").is_none(), "neither started nor listed");
    assert_eq!(
        command(&cfg, "fs"),
        "users-fs",
        "the user's definition stands"
    );
    let waiting: Vec<(&str, &str, bool)> = cfg
        .trust
        .waiting
        .iter()
        .map(|w| (w.name.as_str(), w.runs.as_str(), w.changed))
        .collect();
    assert_eq!(
        waiting,
        [("fs", "evil", false), ("p", "touch marker", false)]
    );
    assert_eq!(cfg.trust.waiting[0].file, project);
    assert!(!cfg.has_errors());

    approve_all(&d);
    let cfg = d.load();
    assert!(cfg.trust.waiting.is_empty(), "{:?}", cfg.trust.waiting);
    assert_eq!(command(&cfg, "p"), "touch");
    assert_eq!(command(&cfg, "fs"), "evil", "approved, it overrides");

    // Tuning is not a new definition; a changed command is.
    write(
        &d.project(),
        ".mcp.json",
        r#"{"mcpServers": {"fs": {"command": "evil", "lifecycle": "lazy"}, "p": {"command": "touch", "args": ["other"]}}}"#,
    );
    let cfg = d.load();
    assert!(cfg.server("fs").is_some());
    assert!(cfg.server("p").is_none(), "changed: it waits again");
    assert_eq!(cfg.trust.waiting.len(), 1);
    assert!(cfg.trust.waiting[0].changed);
}

#[test]
fn only_the_user_file_says_whether_a_project_is_trusted() {
    let d = ConfigDirs::new();
    let project = write(
        &d.project(),
        ".mcpw/mcp.json",
        r#"{"settings": {"projectServers": "trust"}, "mcpServers": {"p": {"command": "x"}}}"#,
    );
    let cfg = d.load();
    assert!(cfg.server("p").is_none());
    let refused = cfg
        .diagnostics
        .iter()
        .find(|d| d.field.as_deref() == Some("settings.projectServers"))
        .expect("a warning");
    assert_eq!(
        (refused.severity, &refused.file),
        (Severity::Warning, &project)
    );

    // Nor may a project lower which calls the user approves.
    write(
        &d.project(),
        ".mcp.json",
        r#"{"settings": {"approve": "none", "approveWithoutClient": "allow"}}"#,
    );
    d.user(r#"{"settings": {"approve": "all"}}"#);
    let cfg = d.load();
    assert_eq!(
        cfg.settings.approve,
        crate::config::ApproveRule::Mode(crate::config::ApproveMode::All)
    );
    assert!(!cfg.settings.approve_without_client);
    let warned: Vec<&str> = cfg
        .diagnostics
        .iter()
        .filter_map(|d| d.field.as_deref())
        .collect();
    assert!(
        warned.contains(&"settings.approve") && warned.contains(&"settings.approveWithoutClient"),
        "{warned:?}"
    );

    d.user(r#"{"settings": {"projectServers": "ignore"}}"#);
    let cfg = d.load();
    assert!(cfg.server("p").is_none());
    assert!(cfg.trust.waiting.is_empty());
    assert_eq!(cfg.trust.ignored, ["p"]);

    d.user(r#"{"settings": {"projectServers": "trust"}}"#);
    assert_eq!(command(&d.load(), "p"), "x");
}

#[test]
fn a_clients_project_file_waits_too() {
    let d = ConfigDirs::new();
    d.user(r#"{"imports": ["pi"]}"#);
    write(
        &d.project(),
        ".pi/mcp.json",
        r#"{"mcpServers": {"pp": {"command": "from-the-repo"}}}"#,
    );
    write(
        &d.home(),
        ".pi/agent/mcp.json",
        r#"{"mcpServers": {"mine": {"command": "users"}}}"#,
    );
    let cfg = d.load();
    assert!(cfg.server("pp").is_none());
    assert_eq!(
        command(&cfg, "mine"),
        "users",
        "the user's own pi file is the user's"
    );
    assert_eq!(cfg.trust.waiting[0].name, "pp");
}
