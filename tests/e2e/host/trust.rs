//! Project trust, end to end: a cloned repository's `.mcp.json` starts
//! nothing until the user approves that definition, in `serve` (through the
//! TypeScript SDK client), `status --connect` and `tools`; the approval holds
//! across the repository's git worktrees, and an edit makes it wait again.

use crate::gateway::serve::client;
use crate::servers::{mcpw_in, servers};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Repo {
    home: tempfile::TempDir,
}

impl Repo {
    fn home(&self) -> PathBuf {
        self.home.path().join("home")
    }
    fn main(&self) -> PathBuf {
        self.home.path().join("repo")
    }
    fn worktree(&self) -> PathBuf {
        self.home.path().join("wt")
    }
    fn marker(&self, name: &str) -> PathBuf {
        self.home.path().join(name)
    }

    /// `.mcp.json` with server `p`, started at once, which leaves `marker`.
    fn project_file(&self, marker: &str) -> String {
        let run = format!(
            "touch {}; exec node {} ok",
            self.marker(marker).display(),
            servers().misbehave()
        );
        json!({"mcpServers": {"p": {"command": "sh", "args": ["-c", run], "lifecycle": "eager"}}})
            .to_string()
    }

    fn mcpw(&self, dir: &Path, args: &[&str]) -> Output {
        mcpw_in(&self.home())
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=t@e", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository whose committed `.mcp.json` starts `p`, and a worktree of it.
fn repo() -> Repo {
    let r = Repo {
        home: tempfile::tempdir().unwrap(),
    };
    std::fs::create_dir_all(r.home()).unwrap();
    std::fs::create_dir_all(r.main()).unwrap();
    std::fs::write(r.main().join(".mcp.json"), r.project_file("marker")).unwrap();
    git(&r.main(), &["init", "-q"]);
    git(&r.main(), &["add", ".mcp.json"]);
    git(&r.main(), &["commit", "-q", "-m", "servers"]);
    git(&r.main(), &["worktree", "add", "-q", "../wt"]);
    r
}

fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The environment of an mcpw with its home in `r`.
fn env(r: &Repo) -> Value {
    json!({"HOME": r.home().display().to_string(), "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": "", "XDG_STATE_HOME": "", "MCPW_CONFIG": ""})
}

/// `mcpw serve` on stdio in `dir`, through the TypeScript SDK client.
fn serve_in(r: &Repo, dir: &Path, exposure: &str, steps: Value) -> Vec<Value> {
    let connect = json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", exposure],
                         "env": env(r), "cwd": dir.display().to_string()});
    client(connect, steps).unwrap()
}

fn names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[test]
fn a_project_server_starts_only_once_its_definition_is_approved() {
    let r = repo();
    let main = r.main();
    // serve: listed nothing, started nothing; the proxy's status says why.
    let listed = serve_in(&r, &main, "direct", json!([{"op": "listTools"}]));
    assert!(
        names(&listed[0]).iter().all(|n| !n.starts_with("p__")),
        "{}",
        listed[0]
    );
    let steps = json!([{"op": "callTool", "name": "mcp", "arguments": {}}]);
    let told = serve_in(&r, &main, "proxy", steps);
    let text = told[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("1 project server(s) wait for the user's approval"),
        "{text}"
    );
    assert!(text.contains("mcpw trust"), "{text}");
    assert!(
        !text.contains("touch"),
        "the agent is not shown the command: {text}"
    );
    let status = r.mcpw(&main, &["status", "--connect"]);
    assert!(
        out(&status).contains("wait for your approval"),
        "{}",
        out(&status)
    );
    assert!(
        out(&status).contains("touch "),
        "what it would run: {}",
        out(&status)
    );
    let tools = r.mcpw(&main, &["tools"]);
    assert!(!out(&tools).contains("p__echo"), "{}", out(&tools));
    assert!(!r.marker("marker").exists(), "nothing ran before approval");

    // Approved in the main checkout, it runs in the worktree too.
    let approved = r.mcpw(&main, &["trust", "--all"]);
    assert!(approved.status.success(), "{}", out(&approved));
    let status = r.mcpw(&r.worktree(), &["status", "--connect", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["servers"][0]["name"], "p", "{status}");
    assert_eq!(status["waitingForApproval"], json!([]));
    assert!(r.marker("marker").exists(), "it ran once approved");

    // An edit is a new definition: it waits again.
    std::fs::write(r.worktree().join(".mcp.json"), r.project_file("edited")).unwrap();
    let status = r.mcpw(&r.worktree(), &["status", "--connect", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["servers"], json!([]), "{status}");
    assert_eq!(status["waitingForApproval"][0]["changed"], true, "{status}");
    assert!(!r.marker("edited").exists());
}

#[test]
fn a_running_gateway_follows_approvals_and_edits() {
    let r = repo();
    let main = r.main();
    let bin = env!("CARGO_BIN_EXE_mcpw");
    let edited = r.project_file("edited");
    let steps = json!([
        {"op": "listTools"},
        {"op": "run", "command": bin, "args": ["trust", "p"], "cwd": main.display().to_string(), "env": env(&r)},
        {"op": "waitForTool", "name": "p__echo"},
        {"op": "callTool", "name": "p__echo", "arguments": {"message": "approved"}},
        {"op": "writeFile", "path": main.join(".mcp.json").display().to_string(), "text": edited},
        {"op": "waitForTool", "name": "p__echo", "present": false}
    ]);
    let results = serve_in(&r, &main, "direct", steps);
    assert!(!names(&results[0]).contains(&"p__echo"));
    assert_eq!(results[1]["status"], 0, "{}", results[1]);
    assert_eq!(results[3]["content"][0]["text"], "Echo: approved");
    assert!(!r.marker("edited").exists());
}
