//! The `mcpw` binary, run as a user would, with its home and cache in a temp dir.

use crate::common::{adversarial_path, fixture, write, write_wat};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub(crate) fn mcpw(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpw"))
        .args(args)
        .current_dir(home)
        .env_clear()
        .env("HOME", home)
        .env("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn json(o: &Output) -> Value {
    assert!(o.status.success(), "stderr: {}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn names_a_catalog_as_json() {
    let home = tempfile::tempdir().unwrap();
    let catalog = fixture("catalog.json");
    let out = json(&mcpw(
        home.path(),
        &["names", "--catalog", catalog.to_str().unwrap(), "--json"],
    ));
    let names = out.as_array().unwrap();
    assert_eq!(names.len(), 1287);
    assert_eq!(
        names[0],
        serde_json::json!({"server": "bing-cn-mcp", "tool": "bing_search", "name": "bing_cn_mcp__bing_search"})
    );
    let short = json(&mcpw(
        home.path(),
        &[
            "names",
            "--catalog",
            catalog.to_str().unwrap(),
            "--prefix",
            "short",
            "--json",
        ],
    ));
    assert_eq!(short[0]["name"], "bing_cn__bing_search");
}

#[test]
fn searches_a_catalog_as_json() {
    let home = tempfile::tempdir().unwrap();
    let catalog = fixture("catalog.json");
    let out = json(&mcpw(
        home.path(),
        &[
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "git status",
            "--limit",
            "3",
            "--json",
        ],
    ));
    let hits = out.as_array().unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0]["name"], "git__git_status");
    assert_eq!(hits[0]["tool"], "git_status");
    assert_eq!(hits[0]["server"], "git");
    assert!(hits[0]["score"].as_f64().unwrap() >= hits[1]["score"].as_f64().unwrap());
}

#[test]
fn the_search_profile_comes_from_the_flag_or_the_config() {
    let home = tempfile::tempdir().unwrap();
    let catalog = fixture("catalog.json");
    let search = |extra: &[&str]| {
        let mut args = vec![
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "create issue",
            "--json",
        ];
        args.extend(extra);
        json(&mcpw(home.path(), &args))
    };
    let default = search(&[]);
    let seed = search(&["--profile", "seed"]);
    assert_ne!(default, seed);
    write(
        home.path(),
        ".config/mcpw/mcp.json",
        r#"{"settings": {"searchProfile": "seed"}}"#,
    );
    assert_eq!(search(&[]), seed, "settings.searchProfile applies");
    assert_eq!(search(&["--profile", "default"]), default, "the flag wins");
    let bad = mcpw(
        home.path(),
        &[
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "x",
            "--profile",
            "bogus",
        ],
    );
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains(
            "unknown ranking profile \"bogus\"; this guest offers: default, words, meaning, seed"
        ),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn search_text_output_and_regex_errors() {
    let home = tempfile::tempdir().unwrap();
    let catalog = fixture("catalog.json");
    let out = mcpw(
        home.path(),
        &[
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "take screenshot",
        ],
    );
    assert!(out.status.success());
    assert!(stdout(&out).contains(" 1. "), "{}", stdout(&out));
    let bad = mcpw(
        home.path(),
        &[
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "--regex",
            "(unclosed",
        ],
    );
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("invalid pattern"), "{}", stderr(&bad));
}

#[test]
fn search_with_a_user_ranking_guest() {
    let home = tempfile::tempdir().unwrap();
    let catalog = fixture("catalog.json");
    let adv = adversarial_path().to_str().unwrap();
    // The adversarial ranker answers plain queries with the first entries of the catalog.
    let out = json(&mcpw(
        home.path(),
        &[
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "anything",
            "--plugin",
            adv,
            "--json",
        ],
    ));
    assert_eq!(out[0]["name"], "bing_cn_mcp__bing_search");
    // On a trap the default guest answers, and the warning names the guest.
    let out = mcpw(
        home.path(),
        &[
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "panic",
            "--plugin",
            adv,
            "--json",
        ],
    );
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("trapped")
            && stderr(&out).contains("falls back to the default guest"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_guest_without_the_role_is_rejected() {
    let home = tempfile::tempdir().unwrap();
    let empty = write_wat(home.path(), "empty.wasm", "(component)");
    let catalog = fixture("catalog.json");
    let out = mcpw(
        home.path(),
        &[
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "x",
            "--plugin",
            empty.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("does not implement the ranking role"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn plugin_check_reports_roles_imports_and_grants() {
    let home = tempfile::tempdir().unwrap();
    let adv = adversarial_path().to_str().unwrap();
    let out = json(&mcpw(home.path(), &["plugin", "check", adv, "--json"]));
    assert_eq!(
        out["roles"],
        serde_json::json!(["naming", "directTools", "ranking"])
    );
    let status = |name: &str| {
        out["imports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .unwrap()["status"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(status("mcpw:plugin/catalog@0.1.0").starts_with("denied"));
    assert_eq!(status("mcpw:plugin/types@0.1.0"), "always granted");
    write(
        home.path(),
        ".config/mcpw/mcp.json",
        r#"{"settings": {"plugins": {"grants": {"ranking": ["catalog"]}}}}"#,
    );
    let out = json(&mcpw(home.path(), &["plugin", "check", adv, "--json"]));
    let status = out["imports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "mcpw:plugin/catalog@0.1.0")
        .unwrap()["status"]
        .clone();
    assert_eq!(status, "granted to ranking");
    let empty = write_wat(home.path(), "empty.wasm", "(component)");
    assert_eq!(
        mcpw(home.path(), &["plugin", "check", empty.to_str().unwrap()])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn config_validate_exits_1_and_names_file_server_field() {
    let home = tempfile::tempdir().unwrap();
    write(
        home.path(),
        ".config/mcpw/mcp.json",
        r#"{"mcpServers": {"ok": {"command": "x"}}}"#,
    );
    let out = mcpw(home.path(), &["config", "validate"]);
    assert!(out.status.success(), "{}", stdout(&out));
    write(
        home.path(),
        ".config/mcpw/mcp.json",
        r#"{"mcpServers": {"broken": {"command": "x", "url": "http://h"}}}"#,
    );
    let out = mcpw(home.path(), &["config", "validate"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains(".config/mcpw/mcp.json")
            && text.contains("server \"broken\"")
            && text.contains("field `url`"),
        "{text}"
    );
}

#[test]
fn config_validate_loads_the_guests_it_names() {
    let home = tempfile::tempdir().unwrap();
    write(
        home.path(),
        ".config/mcpw/mcp.json",
        r#"{"settings": {"plugins": {"naming": "empty.wasm", "ranking": "junk.wasm"}}}"#,
    );
    write_wat(home.path(), ".config/mcpw/empty.wasm", "(component)");
    write(home.path(), ".config/mcpw/junk.wasm", "not wasm");
    let out = mcpw(home.path(), &["config", "validate", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems: Vec<(String, String)> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["field"].as_str().unwrap().to_string(),
                d["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(problems[0].0, "settings.plugins.naming");
    assert!(
        problems[0].1.contains("does not implement the naming role"),
        "{problems:?}"
    );
    assert_eq!(problems[1].0, "settings.plugins.ranking");
}

#[test]
fn config_show_masks_secrets() {
    let home = tempfile::tempdir().unwrap();
    write(
        home.path(),
        ".config/mcpw/mcp.json",
        r#"{"mcpServers": {"s": {"command": "x", "env": {"LITERAL": "ghp_very_secret", "REF": "${GH_TOKEN:-none}", "BANG": "!!bang_secret", "CMD": "!pass show gh"}},
                          "h": {"url": "https://user:pw@h.test/mcp?key=abc", "headers": {"Authorization": "Bearer sk-123"}, "bearerToken": "tok"}}}"#,
    );
    let out = mcpw(home.path(), &["config", "show", "--json"]);
    let text = stdout(&out);
    for secret in [
        "ghp_very_secret",
        "sk-123",
        "pw@",
        "abc",
        "\"tok\"",
        "bang_secret",
    ] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    let v = json(&out);
    let s = &v["mcpServers"]["s"];
    assert_eq!(s["env"]["LITERAL"], "****");
    assert_eq!(s["env"]["REF"], "${GH_TOKEN:-none}");
    assert_eq!(
        s["env"]["CMD"], "!pass show gh",
        "a command is not the secret"
    );
    assert_eq!(s["source"]["kind"], "user");
    let plain = stdout(&mcpw(home.path(), &["config", "show"]));
    assert!(
        !plain.contains("ghp_very_secret") && plain.contains("Sources"),
        "{plain}"
    );
}

#[test]
fn a_closed_pipe_is_not_a_crash() {
    let home = tempfile::tempdir().unwrap();
    let catalog = fixture("catalog.json");
    let mut child = crate::servers::mcpw_in(home.path())
        .args(["names", "--catalog", catalog.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn the_demo_runs_against_real_servers() {
    crate::servers::servers();
    let home = tempfile::tempdir().unwrap();
    let npm_cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-servers/npm-cache");
    let out = crate::servers::mcpw_in(home.path())
        .arg("demo")
        .current_dir(home.path())
        .env("npm_config_cache", npm_cache)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    for expected in [
        "✓ everything",
        "✓ memory",
        "everything__get-sum",
        "The sum of 2 and 3 is 5.",
        "Echo: hello through mcpw",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // No model here and its hub unreachable: words, and the demo says why.
    let search = demo_section(&text, "search");
    assert!(
        search.contains("(ranked by words: the embedding model sentence-transformers/all-MiniLM-L6-v2 is not here yet"),
        "{search}"
    );
    let now = demo_section(&text, "how search ranks now");
    assert!(
        now.contains("Search: by words only: sentence-transformers/all-MiniLM-L6-v2, the default model cannot be used"),
        "{now}"
    );
    demo_agent_sections(&text);
}

/// The demo's section whose header starts with `title`: its lines up to the
/// next header.
fn demo_section<'a>(text: &'a str, title: &str) -> &'a str {
    let header = format!("── {title}");
    let start = text
        .find(&header)
        .unwrap_or_else(|| panic!("no section {title:?} in:\n{text}"));
    let body = &text[start + header.len()..];
    &body[..body.find("\n── ").unwrap_or(body.len())]
}

/// What the demo's agent meets: each part shown with what proves it ran.
fn demo_agent_sections(text: &str) {
    // Code mode: the script, and only what it kept of the 9,873 characters it read.
    let code = demo_section(text, "code mode");
    assert!(code.contains("section.matchAll("), "{code}");
    let value = code.lines().find(|l| l.starts_with("  value: ")).unwrap();
    assert_eq!(
        value,
        r#"  value: {"read":9873,"tools":19,"first":["echo","get-annotated-message","get-env"]}"#
    );
    assert!(
        code.contains("inner calls: everything__get_features_md ok, memory__create_entities ok"),
        "{code}"
    );
    // A big result: a preview that cuts the middle, then that middle read back.
    let big = demo_section(text, "a big result");
    let (preview, read) = big.split_once("read back: read_result").unwrap();
    assert!(preview.contains("# Everything Server - Features"), "{big}");
    assert!(preview.contains("characters, 95 lines cut …]"), "{big}");
    assert!(
        preview.contains("Cut to fit the result budget of 300 tokens"),
        "{big}"
    );
    assert!(!preview.contains("simulate-research-query"), "{big}");
    assert!(read.contains("- `simulate-research-query`"), "{big}");
    assert!(
        read.contains("[Characters 4,000 to 4,300 of 9,873."),
        "{big}"
    );
    // Guards: the example guard guest refuses a call that sends a key out;
    // the rate limit lets the first call pass and refuses the second.
    let guard = demo_section(text, "guards refuse calls");
    assert!(
        guard.contains("refused it: its arguments carry a credential (aws-access-key)"),
        "{guard}"
    );
    assert!(
        guard.contains("The call of everything__echo did not run."),
        "{guard}"
    );
    assert!(guard.contains("→ The sum of 1 and 2 is 3."), "{guard}");
    assert!(
        guard.contains(r#"→ Error: rate limit reached: mcpServers.everything.rateLimit["get-sum"] allows 1/h for each client"#),
        "{guard}"
    );
    assert!(
        guard.contains("The call of everything__get-sum did not run."),
        "{guard}"
    );
    // Approval: the client is asked, the demo accepts, the call runs.
    let approval = demo_section(text, "approval");
    assert!(
        approval.contains("│ Allow the agent to call memory__delete_entities (tool \"delete_entities\" of server \"memory\")?"),
        "{approval}"
    );
    assert!(
        approval.contains("(the demo answers: Allow once)"),
        "{approval}"
    );
    assert!(
        approval.contains("→ Entities deleted successfully"),
        "{approval}"
    );
    // Where to look next.
    let next = demo_section(text, "where to look next");
    for pointer in [
        "mcpw doctor",
        "mcpw serve --http 127.0.0.1:8080   the live page at http://127.0.0.1:8080/",
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 mcpw serve",
    ] {
        assert!(next.contains(pointer), "missing {pointer:?} in:\n{next}");
    }
}

#[test]
fn debug_shows_a_servers_stderr_live() {
    let home = tempfile::tempdir().unwrap();
    let server = |debug: bool| {
        serde_json::json!({"command": "sh", "args": ["-c", format!("echo hello-from-stderr >&2; exec node {} ok", crate::servers::servers().misbehave())],
                           "debug": debug})
    };
    for debug in [false, true] {
        write(
            home.path(),
            ".config/mcpw/mcp.json",
            &serde_json::json!({"mcpServers": {"s": server(debug)}}).to_string(),
        );
        let out = mcpw(home.path(), &["call", "s__echo", r#"{"message": "x"}"#]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(
            stderr(&out).contains("hello-from-stderr"),
            debug,
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn a_failure_is_remembered_across_runs() {
    let home = tempfile::tempdir().unwrap();
    write(
        home.path(),
        ".config/mcpw/mcp.json",
        r#"{"mcpServers": {"bad": {"command": "/nonexistent/mcpw-test-server"}}}"#,
    );
    let out = mcpw(home.path(), &["connect", "bad"]);
    assert_eq!(out.status.code(), Some(1));
    // Another run: the status says what failed and when, and the backoff holds.
    let status = json(&mcpw(home.path(), &["status", "--json"]));
    let bad = &status["servers"][0];
    assert_eq!(bad["state"], "failed", "{status}");
    assert!(
        bad["lastError"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/mcpw-test-server")
    );
    assert!(bad["retryInSeconds"].as_u64().unwrap() > 0);
    let out = mcpw(home.path(), &["call", "bad__x"]);
    assert!(stderr(&out).contains("retrying in"), "{}", stderr(&out));
    // An explicit connect still tries.
    let out = mcpw(home.path(), &["connect", "bad"]);
    assert!(stderr(&out).contains("cannot start"), "{}", stderr(&out));
}

#[test]
fn names_that_sanitize_alike_stay_apart_and_only_a_repeat_is_hidden() {
    let home = tempfile::tempdir().unwrap();
    let tool = |name: &str| serde_json::json!({"name": name, "description": name, "inputSchema": {"type": "object"}});
    let catalog = serde_json::json!({"servers": [{"name": "s", "tools": [
        tool("工具查询"), tool("文件读取"), tool("get weather now"), tool("get_weather_now"), tool("get_weather_now")
    ]}]});
    let file = write(home.path(), "catalog.json", &catalog.to_string());
    let out = mcpw(
        home.path(),
        &["names", "--catalog", file.to_str().unwrap(), "--json"],
    );
    let names: Vec<String> = json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let distinct: std::collections::HashSet<&String> = names.iter().collect();
    assert_eq!(distinct.len(), 4, "{names:?}");
    assert!(
        stderr(&out).contains("s/get_weather_now is listed 2 times"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn status_of_a_broken_or_missing_config_says_so() {
    let home = tempfile::tempdir().unwrap();
    // No config at all: where it looked.
    let out = mcpw(home.path(), &["status"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("No servers configured. Looked in:"), "{text}");
    assert!(text.contains(".config/mcpw/mcp.json (not found)"), "{text}");
    // A broken file: a failed status, a 1-based position, plain log lines.
    write(
        home.path(),
        ".config/mcpw/mcp.json",
        "{\n  \"mcpServers\": {\n",
    );
    let out = mcpw(home.path(), &["status"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("mcp.json:3:1:") || err.contains("mcp.json:2:"),
        "{err}"
    );
    assert!(!err.contains(":0:"), "{err}");
    assert!(!err.contains('\x1b'), "no colour codes in a pipe: {err:?}");
    assert!(!err.contains("ERROR error"), "{err}");
}

/// A pi user's servers, with no config of mcpw's own: `--import pi` reads the
/// project's `.pi/mcp.json` (it wins) and `$PI_CODING_AGENT_DIR/mcp.json`; and
/// `tools --exposure` says what `serve` would list, from the cache alone.
#[test]
fn a_pi_users_config_and_the_tools_serve_would_list() {
    let home = tempfile::tempdir().unwrap();
    let misbehave = crate::servers::servers().misbehave();
    let pids = home.path().join("pids");
    let server = |mode: &str| {
        serde_json::json!({"command": "node", "args": [&misbehave, mode],
                           "env": {"PID_FILE": pids.display().to_string()}})
    };
    write(
        home.path(),
        "agent/mcp.json",
        &serde_json::json!({"mcpServers": {"s": server("garbage"), "a": server("ok")}}).to_string(),
    );
    write(
        home.path(),
        ".pi/mcp.json",
        &serde_json::json!({"mcpServers": {"s": server("ok")}}).to_string(),
    );
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mcpw"))
            .arg("--import")
            .arg("pi")
            .args(args)
            .current_dir(home.path())
            .env_clear()
            .env("HOME", home.path())
            .env("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PI_CODING_AGENT_DIR", home.path().join("agent"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // The project's `.pi/mcp.json` is the repository's: it waits for approval.
    let shown = json(&run(&["config", "show", "--json"]));
    assert_eq!(shown["mcpServers"]["s"]["args"][1], "garbage", "{shown}");
    assert!(run(&["trust", "s"]).status.success());
    let shown = json(&run(&["config", "show", "--json"]));
    let servers = &shown["mcpServers"];
    assert_eq!(
        servers["s"]["args"][1], "ok",
        "the project's file wins once approved: {shown}"
    );
    assert!(servers["a"].is_object(), "{shown}");

    let listed = json(&run(&["tools", "--exposure", "direct", "--json"]));
    assert_eq!(listed["tools"], serde_json::json!([]));
    assert_eq!(listed["uncached"], serde_json::json!(["s", "a"]));
    assert!(!pids.exists(), "no server was started");

    assert!(run(&["connect", "s"]).status.success());
    let listed = json(&run(&["tools", "--exposure", "direct", "--json"]));
    let echo = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "s__echo")
        .unwrap_or_else(|| panic!("s__echo listed: {listed}"));
    assert_eq!(
        echo["inputSchema"]["properties"]["message"]["type"],
        "string"
    );
    assert_eq!(listed["uncached"], serde_json::json!(["a"]));
    let proxy = json(&run(&["tools", "--exposure", "proxy", "--json"]));
    assert_eq!(proxy["tools"][0]["name"], "mcp");
    assert_eq!(proxy["tools"].as_array().unwrap().len(), 1);
    let started = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(
        started.lines().count(),
        1,
        "only `connect` started a server"
    );

    let bad = run(&["tools", "--exposure", "everything"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("unknown exposure"),
        "{}",
        stderr(&bad)
    );
}
