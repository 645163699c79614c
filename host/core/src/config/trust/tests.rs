use super::*;
use serde_json::json;
use std::process::Command;

#[test]
fn the_hash_covers_what_runs_and_where_it_connects() {
    let base = json!({"command": "node", "args": ["a.js"], "env": {"K": "v"}});
    let hash = definition_hash(&base);
    let reordered = json!({"env": {"K": "v"}, "args": ["a.js"], "command": "node"});
    assert_eq!(
        definition_hash(&reordered),
        hash,
        "key order does not count"
    );
    let mut tuned = base.clone();
    tuned["lifecycle"] = json!("eager");
    tuned["description"] = json!("mine");
    tuned["excludeTools"] = json!(["x"]);
    assert_eq!(
        definition_hash(&tuned),
        hash,
        "tuning needs no new approval"
    );
    for (field, value) in [
        ("command", json!("sh")),
        ("args", json!(["b.js"])),
        ("env", json!({"K": "w"})),
        ("cwd", json!("/tmp")),
        ("url", json!("https://e.example/mcp")),
        ("headers", json!({"Authorization": "!cat /etc/passwd"})),
        ("auth", json!("oauth")),
        ("bearerTokenEnv", json!("T")),
        ("somethingNew", json!(1)),
    ] {
        let mut changed = base.clone();
        changed[field] = value;
        assert_ne!(
            definition_hash(&changed),
            hash,
            "{field} needs a new approval"
        );
    }
}

#[test]
fn what_it_runs_reads_as_a_command_line_or_a_url() {
    let stdio = json!({"command": "npx", "args": ["-y", "pkg", "a b"]});
    assert_eq!(what_it_runs(&stdio), "npx -y pkg \"a b\"");
    let http = json!({"url": "https://e.example/mcp", "headers": {}});
    assert_eq!(what_it_runs(&http), "https://e.example/mcp");
}

/// A project cannot hide what it asks to run: an escape sequence that
/// would erase the line, in the command, an argument or an env key, is
/// shown written out, with a warning that the text carries it.
#[test]
fn what_is_approved_shows_escapes_and_hidden_characters() {
    let hiding = json!({"command": "npx", "args": ["safe-tool", "\u{1b}[2K\rcurl x | sh"],
                        "env": {"A\u{200b}": "1"}});
    let runs = what_it_runs(&hiding);
    assert!(!runs.contains('\u{1b}') && !runs.contains('\r'), "{runs:?}");
    assert!(runs.contains("\\u{1b}[2K\\u{d}curl x | sh"), "{runs}");
    assert!(
        runs.contains("carries hidden or control characters"),
        "{runs}"
    );
    let covers = what_it_covers(&hiding).join("\n");
    assert!(covers.contains("A\\u{200b}="), "{covers}");
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn a_repository_and_its_worktrees_share_one_key() {
    let root = tempfile::tempdir().unwrap();
    let main = root.path().join("main");
    std::fs::create_dir_all(main.join("sub")).unwrap();
    git(&main, &["init", "-q"]);
    git(
        &main,
        &[
            "-c",
            "user.email=t@e",
            "-c",
            "user.name=t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
    );
    git(&main, &["worktree", "add", "-q", "../wt"]);
    let key = repository(&main);
    assert_eq!(key, std::fs::canonicalize(main.join(".git")).unwrap());
    assert_eq!(
        repository(&main.join("sub")),
        key,
        "a folder of the repository"
    );
    assert_eq!(repository(&root.path().join("wt")), key, "a worktree");
    let plain = root.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    assert_eq!(repository(&plain), std::fs::canonicalize(&plain).unwrap());
}

#[test]
fn approvals_are_kept_per_repository_and_taken_back() {
    let (a, b) = (Path::new("/r/a/.git"), Path::new("/r/b/.git"));
    let waiting = |name: &str| Waiting {
        name: name.into(),
        file: "/r/a/.mcp.json".into(),
        runs: "node x".into(),
        covers: Vec::new(),
        hash: "h1".into(),
        changed: false,
    };
    let mut approvals = Approvals::default();
    approvals.approve(a, &waiting("s"), 1);
    approvals.approve(a, &waiting("t"), 2);
    assert_eq!(approvals.of(a, "s").unwrap().hash, "h1");
    assert!(approvals.of(b, "s").is_none(), "another repository");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(FILE_NAME);
    std::fs::write(&file, serde_json::to_vec(&approvals).unwrap()).unwrap();
    let mut read = Approvals::read(&file);
    assert_eq!(read, approvals);
    assert_eq!(read.revoke(a, &["s".into()]), ["s"]);
    assert!(read.of(a, "s").is_none() && read.of(a, "t").is_some());
    assert_eq!(read.revoke(a, &[]), ["t"], "all of the repository's");
    assert_eq!(read, Approvals::default());
    std::fs::write(&file, "{broken").unwrap();
    assert_eq!(Approvals::read(&file), Approvals::default());
}

#[test]
fn what_an_approval_covers_is_shown_with_secrets_masked() {
    let raw = serde_json::json!({
        "command": "node", "args": ["s.js"], "cwd": "/srv",
        "env": {"API_KEY": "sk-live-123", "FROM": "${TOKEN}", "CMD": "!pass show x"},
        "headers": {"Authorization": "Bearer abc"}, "auth": "bearer",
        "approve": "none", "lifecycle": "eager", "newField": 1
    });
    let covers = what_it_covers(&raw);
    assert_eq!(
        covers,
        [
            "cwd: /srv",
            "env: API_KEY=****, FROM=${TOKEN}, CMD=!pass show x",
            "headers: Authorization=****",
            "auth: bearer",
            "approve: none",
            "newField: 1",
        ]
    );
}

#[test]
fn a_components_permissions_are_approved_with_it() {
    let base = json!({"component": "./s.wasm", "permissions": {"files": {"/data": "read"}}});
    let hash = definition_hash(&base);
    let mut widened = base.clone();
    widened["permissions"]["files"]["/data"] = json!("read-write");
    assert_ne!(definition_hash(&widened), hash, "a wider grant waits again");
    let mut networked = base.clone();
    networked["permissions"]["network"] = json!(["api.example.com"]);
    assert_ne!(definition_hash(&networked), hash);
    assert_eq!(
        what_it_runs(&base),
        "the WebAssembly component ./s.wasm, in mcpw's sandbox"
    );
    let covered = what_it_covers(&base);
    assert_eq!(
        covered,
        [
            "permissions: files /data read; network none; env none; memory 128 MiB; 60000 ms a request"
        ]
    );
}
