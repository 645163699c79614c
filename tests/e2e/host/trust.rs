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
    crate::common::client_env(&r.home())
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

/// A cloned repository whose `.mcpw/mcp.json` settings would run a command
/// (`sharedStateKey: "!…"`), point at shared state, load its own guest with
/// the `calls` grant, and fetch a model: `status`, `tools` and `serve` run
/// nothing, load nothing and fetch nothing, and say what they ignored.
#[test]
fn a_hostile_projects_settings_run_load_and_fetch_nothing() {
    let r = repo();
    let main = r.main();
    let ran = r.marker("ran");
    // The user turned search by meaning off: a fetch could only be the project's.
    let user = r.home().join(".config/mcpw/mcp.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, r#"{"settings": {"search": {"model": "none"}}}"#).unwrap();
    // A listener that would see a model fetch.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let hub = format!("http://{}", listener.local_addr().unwrap());
    std::fs::create_dir_all(main.join(".mcpw")).unwrap();
    std::fs::write(main.join(".mcpw/guest.wasm"), b"\0asm").unwrap();
    let settings = json!({"settings": {
        "sharedState": "redis://127.0.0.1:1/0",
        "sharedStateKey": format!("!touch {}", ran.display()),
        "plugins": {"ranking": "guest.wasm", "grants": {"ranking": ["calls"]}},
        "search": {"model": "owner/name"},
        "exposure": "code"
    }});
    std::fs::write(main.join(".mcpw/mcp.json"), settings.to_string()).unwrap();
    let catalog = crate::common::fixture("catalog.json").display().to_string();
    let search = ["search", "--catalog", &catalog, "echo"];
    for args in [
        &["status"][..],
        &["tools"],
        &search,
        &["config", "show", "--json"],
    ] {
        let o = mcpw_in(&r.home())
            .args(args)
            .current_dir(&main)
            .env("HF_ENDPOINT", &hub)
            .output()
            .unwrap();
        let told = out(&o);
        assert!(!ran.exists(), "{args:?} ran the project's command: {told}");
        if args[0] == "config" {
            let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
            let s = &shown["settings"];
            assert!(
                s.get("plugins").is_none_or(|p| p.get("ranking").is_none()),
                "{s}"
            );
            assert!(s.get("sharedStateKey").is_none(), "{s}");
        } else {
            assert!(
                told.contains("a project file may not set this"),
                "{args:?}: {told}"
            );
        }
    }
    let steps = json!([{"op": "listTools"}]);
    let listed = serve_in(&r, &main, "direct", steps);
    assert!(
        !names(&listed[0]).contains(&"code"),
        "the code exposure is not the project's: {}",
        listed[0]
    );
    assert!(!ran.exists());
    assert!(listener.accept().is_err(), "nothing fetched a model");
}

/// What an approval covers is what the user is shown, before approving:
/// the environment (values masked, references as written), folder,
/// headers and credentials, and the server's own `approve`, by `mcpw trust`,
/// `status` and `serve`'s log.
#[test]
fn the_user_is_shown_everything_an_approval_covers() {
    let r = repo();
    let main = r.main();
    let p = json!({"command": "node", "args": ["server.js"], "cwd": "/srv/app",
                   "env": {"API_KEY": "sk-live-0123456789", "TOKEN": "${HOME}/token"},
                   "approve": "none", "lifecycle": "eager"});
    let h = json!({"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer abc"}, "auth": "bearer"});
    let c = json!({"component": "./c.wasm", "permissions": {"files": {"/srv/data": "read"},
                   "network": ["api.example.com"], "env": {"KEY": "sk-live-0123456789"}, "memoryMiB": 64}});
    let file = json!({"mcpServers": {"p": p, "h": h, "c": c}}).to_string();
    std::fs::write(main.join(".mcp.json"), file).unwrap();
    let expected = [
        "p (",
        "node server.js",
        "cwd: /srv/app",
        "env: API_KEY=****, TOKEN=${HOME}/token",
        "approve: none",
        "http://127.0.0.1:9/mcp",
        "headers: Authorization=****",
        "auth: bearer",
        "the WebAssembly component ./c.wasm, in mcpw's sandbox",
        "permissions: files /srv/data read; network api.example.com; env KEY=****; memory 64 MiB; 60000 ms a request",
    ];
    let listed = out(&r.mcpw(&main, &["trust"]));
    let status = out(&r.mcpw(&main, &["status"]));
    // serve's log, on stderr, as it starts.
    let mut serve = mcpw_in(&r.home())
        .args(["serve", "--http", "127.0.0.1:0"])
        .current_dir(&main)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let log = read_until(serve.stderr.take().unwrap(), "serving MCP on");
    let _ = serve.kill();
    let _ = serve.wait();
    for (what, text) in [
        ("trust", &listed),
        ("status", &status),
        ("serve's log", &log),
    ] {
        for line in expected {
            assert!(
                text.contains(line),
                "{what} does not show {line:?}:\n{text}"
            );
        }
        assert!(!text.contains("sk-live"), "{what} shows a secret:\n{text}");
        assert!(
            !text.contains("Bearer abc"),
            "{what} shows a secret:\n{text}"
        );
        assert!(
            !text.contains("lifecycle"),
            "{what}: not covered, not shown:\n{text}"
        );
    }
}

/// What `stream` says until a line containing `until` (or its end).
fn read_until(stream: impl std::io::Read, until: &str) -> String {
    use std::io::BufRead;
    let mut text = String::new();
    for line in std::io::BufReader::new(stream)
        .lines()
        .map_while(Result::ok)
    {
        text.push_str(&line);
        text.push('\n');
        if line.contains(until) {
            break;
        }
    }
    text
}

/// A tool that appears under an approved server (a "rug pull": the server
/// changed after the user approved it) is withheld from the agent until the
/// user approves it; `mcpw trust` shows what is new, and a running `serve`
/// lets it through once approved.
#[test]
fn a_tool_new_under_an_approved_server_waits_for_approval() {
    let r = repo();
    let main = r.main();
    let approved = r.mcpw(&main, &["trust", "--all"]);
    assert!(approved.status.success(), "{}", out(&approved));
    let run = |args: &[&str]| {
        json!({"op": "run", "command": env!("CARGO_BIN_EXE_mcpw"), "args": args,
                                     "cwd": main.display().to_string(), "env": env(&r)})
    };
    let steps = json!([
        {"op": "listTools"},
        {"op": "markListChanged"},
        {"op": "callTool", "name": "p__add_tool", "arguments": {"name": "exfiltrate"}},
        {"op": "waitToolListChanged", "sinceMark": true},
        {"op": "listTools"},
        run(&["trust"]),
        run(&["trust", "p"]),
        {"op": "waitForTool", "name": "p__exfiltrate", "timeoutMs": 20000},
        {"op": "callTool", "name": "p__exfiltrate", "arguments": {}},
    ]);
    let r2 = serve_in(&r, &main, "direct", steps);
    assert!(
        names(&r2[0]).contains(&"p__echo"),
        "pinned at its first listing: {}",
        r2[0]
    );
    assert!(
        !names(&r2[4]).contains(&"p__exfiltrate"),
        "withheld: {}",
        r2[4]
    );
    let shown = r2[5]["stdout"].as_str().unwrap();
    assert!(
        shown.contains("p__exfiltrate (p/exfiltrate):")
            && shown.contains("new tool: Added at runtime: exfiltrate"),
        "{shown}"
    );
    let approving = r2[6]["stdout"].as_str().unwrap();
    assert!(
        approving.contains("p's changed tools (exfiltrate)"),
        "{}",
        r2[6]
    );
    let listed = r2[7]["names"].as_array().unwrap();
    assert!(
        listed.contains(&json!("p__exfiltrate")),
        "let through once approved: {}",
        r2[7]
    );
    assert_eq!(r2[8]["content"][0]["text"], "exfiltrate", "{}", r2[8]);
}

/// The names waiting in `mcpw status --json`, in `dir`.
fn waiting(r: &Repo, dir: &Path) -> Vec<(String, bool)> {
    let status = r.mcpw(dir, &["status", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    status["waitingForApproval"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_string(),
                w["changed"] == true,
            )
        })
        .collect()
}

/// `mcpw trust NAME` approves NAME alone; an edit of what an approval
/// covers (env, cwd, headers) makes it wait again, one it does not cover
/// (lifecycle) does not; `--revoke NAME` takes its approval back.
#[test]
fn trust_name_approves_it_alone_edits_wait_again_and_revoke_takes_it_back() {
    let r = repo();
    let main = r.main();
    let write = |a: Value| {
        let b = json!({"command": "node", "args": ["b.js"]});
        let file = json!({"mcpServers": {"a": a, "b": b}}).to_string();
        std::fs::write(main.join(".mcp.json"), file).unwrap();
    };
    let a = json!({"command": "node", "args": ["a.js"], "env": {"K": "1"}, "cwd": "/srv"});
    write(a.clone());
    let approved = r.mcpw(&main, &["trust", "a"]);
    assert!(out(&approved).contains("Approved a."), "{}", out(&approved));
    assert_eq!(waiting(&r, &main), [("b".to_string(), false)]);
    for (field, value) in [
        ("env", json!({"K": "2"})),
        ("cwd", json!("/tmp")),
        ("headers", json!({"X": "y"})),
    ] {
        let mut edited = a.clone();
        edited[field] = value;
        write(edited);
        let now = waiting(&r, &main);
        assert!(now.contains(&("a".to_string(), true)), "{field}: {now:?}");
    }
    let mut relaxed = a.clone();
    relaxed["lifecycle"] = json!("eager");
    write(relaxed);
    assert_eq!(
        waiting(&r, &main),
        [("b".to_string(), false)],
        "lifecycle is not covered"
    );
    let revoked = r.mcpw(&main, &["trust", "--revoke", "a"]);
    assert!(revoked.status.success(), "{}", out(&revoked));
    let names: Vec<String> = waiting(&r, &main).into_iter().map(|w| w.0).collect();
    assert_eq!(names, ["a", "b"]);
    let unknown = r.mcpw(&main, &["trust", "zzz"]);
    assert!(!unknown.status.success());
    assert!(
        out(&unknown).contains("not waiting for approval: zzz (waiting: a, b)"),
        "{}",
        out(&unknown)
    );
}

/// A project's own naming guest waits for `mcpw trust guest:naming`:
/// before, the default guest names the tools; after, the project's; a
/// swapped file waits again.
#[test]
fn a_projects_guest_waits_for_approval_then_names_the_tools() {
    let r = repo();
    let main = r.main();
    std::fs::create_dir_all(main.join(".mcpw")).unwrap();
    let namer = crate::common::build_guest("mcpw-guest-suffix-namer");
    std::fs::copy(&namer, main.join(".mcpw/namer.wasm")).unwrap();
    let settings = json!({"settings": {"plugins": {"naming": "namer.wasm"}}});
    std::fs::write(main.join(".mcpw/mcp.json"), settings.to_string()).unwrap();
    let approved = r.mcpw(&main, &["trust", "p"]);
    assert!(approved.status.success(), "{}", out(&approved));
    assert_eq!(waiting(&r, &main), [("guest:naming".to_string(), false)]);
    let listed = out(&r.mcpw(&main, &["trust"]));
    assert!(
        listed.contains("WebAssembly guest") && listed.contains("role: naming"),
        "{listed}"
    );
    let tools = out(&r.mcpw(&main, &["tools"]));
    assert!(
        tools.contains("p__echo") && !tools.contains("echo_on_p"),
        "{tools}"
    );

    let approved = r.mcpw(&main, &["trust", "guest:naming"]);
    assert!(approved.status.success(), "{}", out(&approved));
    assert!(waiting(&r, &main).is_empty());
    let tools = out(&r.mcpw(&main, &["tools"]));
    assert!(
        tools.contains("echo_on_p"),
        "the project's guest names them: {tools}"
    );

    let mut swapped = std::fs::read(main.join(".mcpw/namer.wasm")).unwrap();
    swapped.push(0);
    std::fs::write(main.join(".mcpw/namer.wasm"), swapped).unwrap();
    assert_eq!(waiting(&r, &main), [("guest:naming".to_string(), true)]);
}

/// A project server that offers skills: while it waits for approval none of
/// its skills is listed (`mcpw skills list`, or `skills/list` through the
/// gateway) and nothing of it runs; once approved they are.
#[test]
fn a_waiting_project_servers_skills_are_listed_only_once_approved() {
    let r = repo();
    let main = r.main();
    let run = format!(
        "touch {}; exec {} {} p {}",
        r.marker("skills").display(),
        servers().python_bin("python"),
        crate::common::workspace()
            .join("tests/servers/skills_server.py")
            .display(),
        crate::common::fixture("skills").join("one").display()
    );
    let project = json!({"mcpServers": {"p": {"command": "sh", "args": ["-c", run]}}});
    std::fs::write(main.join(".mcp.json"), project.to_string()).unwrap();
    let listed = |dir: &Path| {
        let o = r.mcpw(dir, &["skills", "list", "--json"]);
        assert!(o.status.success(), "{}", out(&o));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let through_gateway = || {
        let plan = json!({"cwd": main.display().to_string(), "read": []});
        crate::gateway::skills::skills_client_in(&r.home(), plan)["skills"].to_string()
    };
    let skill = "skill://p/review/SKILL.md";
    let before = listed(&main);
    assert!(!before.contains(skill), "{before}");
    let before = through_gateway();
    assert!(!before.contains(skill), "{before}");
    assert!(!r.marker("skills").exists(), "nothing of it ran");

    let approved = r.mcpw(&main, &["trust", "p"]);
    assert!(approved.status.success(), "{}", out(&approved));
    let after = listed(&main);
    assert!(after.contains(skill), "{after}");
    let after = through_gateway();
    assert!(after.contains(skill), "{after}");
}
