//! The guest authoring kit: the test harness, `mcpw plugin test|bench`, and the
//! second ranking guest (BM25F, `guest-example/bm25`).

use crate::common::{fixture, workspace};
use mcpw_core::testing::{GuestUnderTest, tools};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The BM25F guest, built the way a guest author would with the harness.
fn bm25() -> &'static PathBuf {
    static WASM: OnceLock<PathBuf> = OnceLock::new();
    WASM.get_or_init(|| mcpw_core::testing::build(&workspace().join("guest-example/bm25")).unwrap())
}

/// The conformance checks a guest fails, as lines.
fn failed_checks(guest: &GuestUnderTest) -> Vec<String> {
    guest
        .conformance()
        .iter()
        .filter(|c| !c.passed())
        .map(|c| c.to_string())
        .collect()
}

/// Production limits but a roomier deadline: the suite feeds 100,000 tools, and a
/// debug build of the host under a parallel test run is several times slower
/// than a release one.
fn roomy() -> mcpw::plugin::Limits {
    mcpw::plugin::Limits {
        deadline: std::time::Duration::from_secs(20),
        ..Default::default()
    }
}

#[test]
fn the_harness_builds_and_checks_a_guest() {
    let guest = GuestUnderTest::from_file(bm25())
        .unwrap()
        .with_limits(roomy())
        .unwrap();
    let checks = guest.conformance();
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed())
        .map(|c| c.to_string())
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert!(
        checks.iter().all(|c| c.role == "ranking"),
        "BM25F fills only the ranking role"
    );
    let catalog = tools(&[
        (
            "github",
            "createIssue",
            "Create a new issue in a GitHub repository",
        ),
        ("github", "list_issues", "List issues"),
        ("slack", "send-message", "Send a message to a channel"),
    ]);
    assert_eq!(
        guest.rank(&catalog, "create issues", 1).unwrap(),
        ["github__createIssue"],
        "camelCase names are words"
    );
    assert_eq!(
        guest.rank(&catalog, "slack", 3).unwrap(),
        ["slack__send-message"],
        "the server name is a field"
    );
    assert!(
        guest.names(&catalog, Default::default()).is_err(),
        "no naming role"
    );
}

#[test]
fn bm25_beats_the_seed_scoring_on_the_dev_queries() {
    let guest = GuestUnderTest::from_file(bm25()).unwrap();
    let report = guest
        .bench(&fixture("catalog.json"), &fixture("queries_dev.json"))
        .unwrap();
    assert!(report.r_at_5 >= 0.85 && report.r_at_1 >= 0.75, "{report:?}");
}

fn mcpw(args: &[&str]) -> std::process::Output {
    let home = tempfile::tempdir().unwrap();
    crate::common::write(
        home.path(),
        ".config/mcpw/mcp.json",
        r#"{"settings": {"plugins": {"limits": {"deadlineMs": 20000}}}}"#,
    );
    crate::servers::mcpw_in(home.path())
        .args(args)
        .current_dir(home.path())
        .output()
        .unwrap()
}

#[test]
fn plugin_test_passes_good_guests_and_fails_broken_ones() {
    let out = mcpw(&["plugin", "test", bm25().to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.lines().filter(|l| l.starts_with("PASS")).count() >= 10 && text.contains("0 failed"),
        "{text}"
    );
    // The adversarial guest's ranking ignores the server filter: the suite says so.
    let adv = crate::common::adversarial_path()
        .to_str()
        .unwrap()
        .to_string();
    let out = mcpw(&["plugin", "test", &adv, "--role", "ranking", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(v["passed"], false);
    let failed: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["failure"].is_null())
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        failed.iter().any(|n| n.contains("server filter")),
        "{failed:?}"
    );
}

#[test]
fn plugin_bench_reports_the_documented_keys() {
    let catalog = fixture("catalog.json");
    let queries = fixture("queries_dev.json");
    let out = mcpw(&[
        "plugin",
        "bench",
        bm25().to_str().unwrap(),
        "--catalog",
        catalog.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "index_ms",
            "mrr_at_10",
            "ndcg_at_10",
            "query_p50_us",
            "query_p99_us",
            "r_at_1",
            "r_at_5"
        ]
    );
    // Without a file it benches the default guest (the seed scoring reproduces the reference R@5).
    let out = mcpw(&[
        "plugin",
        "bench",
        "--catalog",
        catalog.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
        "--json",
        "--profile",
        "seed",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((v["r_at_5"].as_f64().unwrap() - 0.788).abs() < 0.02, "{v}");
}

/// A guest in another language: `guest-example/python-ranker`, componentized
/// with the pinned componentize-py, passes the same suite under the same sandbox.
#[test]
fn a_python_guest_passes_the_conformance_suite() {
    let dir = workspace().join("guest-example/python-ranker");
    let out = tempfile::tempdir().unwrap();
    let wasm = out.path().join("python-ranker.wasm");
    let built = Command::new(crate::servers::servers().python_bin("componentize-py"))
        .arg("-d")
        .arg(workspace().join("wit/since_v0.1.0"))
        .args(["-w", "ranker", "componentize", "-p", ".", "app", "-o"])
        .arg(&wasm)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "componentize-py: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let guest = GuestUnderTest::from_file(&wasm)
        .unwrap()
        .with_limits(roomy())
        .unwrap();
    let failed = failed_checks(&guest);
    assert!(failed.is_empty(), "{failed:?}");
    let catalog = tools(&[
        (
            "github",
            "createIssue",
            "Create a new issue in a repository",
        ),
        ("slack", "send-message", "Send a message to a channel"),
    ]);
    assert_eq!(
        guest.rank(&catalog, "create issues", 1).unwrap(),
        ["github__createIssue"]
    );
}

#[test]
fn a_search_profile_for_the_default_guest_does_not_break_a_user_ranker() {
    let home = tempfile::tempdir().unwrap();
    crate::common::write(
        home.path(),
        ".config/mcpw/mcp.json",
        &serde_json::json!({"settings": {"searchProfile": "default",
            "plugins": {"ranking": bm25(), "limits": {"deadlineMs": 20000}}}})
        .to_string(),
    );
    let catalog = fixture("catalog.json");
    let out = crate::servers::mcpw_in(home.path())
        .args([
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "create a pull request",
            "--json",
        ])
        .current_dir(home.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hits: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!hits.as_array().unwrap().is_empty());
    // bm25 answered (not the fallback): the default guest's warning would say so.
    assert!(!String::from_utf8_lossy(&out.stderr).contains("falls back"));
}

/// `program` at the lowest CPU priority: a cold build here must not starve
/// the timing-sensitive tests that run beside it.
fn low_priority(program: &str) -> Command {
    let mut nice = Command::new("nice");
    nice.args(["-n", "19", program]);
    nice
}

/// The text of the first ```` ```info ```` block of `text` (`info`: its
/// language and marker, `sh show`), unindented.
fn block(text: &str, info: &str) -> String {
    let start = text.find(&format!("```{info}\n")).unwrap() + info.len() + 4;
    let body = &text[start..start + text[start..].find("```").unwrap()];
    let indent = body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    body.lines()
        .map(|l| l.get(indent..).unwrap_or("").to_string() + "\n")
        .collect()
}

/// The book's walkthrough (`docs/src/guests.md`) as written: its scaffold, its
/// 20 lines of code and a build make a guest that fills the ranking role in the
/// production sandbox, with no WIT copied.
#[test]
fn the_books_walkthrough_makes_a_working_guest() {
    let chapter = std::fs::read_to_string(workspace().join("docs/src/guests.md")).unwrap();
    let section = &chapter[chapter.find("## Write your own ranking guest").unwrap()..];
    let scaffold =
        block(section, "sh show").replace("/path/to/mcpw", workspace().to_str().unwrap());
    let code = block(section, "rust show");
    assert!(code.lines().count() <= 22, "about 20 lines:\n{code}");
    assert!(
        !scaffold.contains("wit ") && !code.contains("wit_bindgen"),
        "no WIT copied or bound by hand"
    );
    let dir = tempfile::tempdir().unwrap();
    let scaffolded = Command::new("sh")
        .args(["-ec", &scaffold])
        .current_dir(dir.path())
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    let said = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(scaffolded.status.success(), "{}", said(&scaffolded));
    let krate = dir.path().join("my-ranker");
    std::fs::write(krate.join("src/lib.rs"), &code).unwrap();
    // The versions this workspace builds with, all in the local registry.
    std::fs::copy(workspace().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let target = workspace().join("target/walkthrough");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = low_priority(&cargo)
        .args([
            "build",
            "--release",
            "--offline",
            "--target",
            "wasm32-wasip2",
        ])
        .arg("--target-dir")
        .arg(&target)
        .current_dir(&krate)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", said(&built));
    let wasm = target.join("wasm32-wasip2/release/my_ranker.wasm");
    let guest = GuestUnderTest::from_file(&wasm).unwrap();
    let checks = guest.conformance();
    assert!(checks.iter().all(|c| c.role == "ranking"), "ranking only");
    let catalog = tools(&[
        ("github", "create_issue", "Create an issue"),
        ("slack", "send_message", "Send"),
    ]);
    assert_eq!(
        guest.rank(&catalog, "create issue", 1).unwrap(),
        ["github__create_issue"]
    );
}

/// A guest bound straight from the frozen `wit/since_v0.1.0/` (not through
/// `mcpw-guest`) loads and fills its role.
#[test]
fn a_guest_of_the_frozen_0_1_0_contract_loads() {
    let wasm = mcpw_core::testing::build(&workspace().join("tests/guests/suffix-namer")).unwrap();
    let out = mcpw(&["plugin", "check", wasm.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("mcpw:plugin/naming@0.1.0"), "{said}");
    let guest = GuestUnderTest::from_file(&wasm).unwrap();
    let failed = failed_checks(&guest);
    assert!(failed.is_empty(), "{failed:?}");
}

/// The test kit (`mcpw-core`, the floor mcpw builds on) builds without the
/// gateway's network, credential and shared-state stacks.
#[test]
fn the_test_kit_leaves_the_gateways_dependencies_out() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let kit = ["-p", "mcpw-core", "--offline"];
    let tree = Command::new(&cargo)
        .args(["tree", "-e", "normal", "--prefix", "none"])
        .args(kit)
        .current_dir(workspace())
        .output()
        .unwrap();
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    let crates: Vec<String> = String::from_utf8_lossy(&tree.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    for gateway_only in [
        "rmcp", "reqwest", "redis", "keyring", "axum", "hyper", "rustls",
    ] {
        assert!(
            !crates.iter().any(|c| c == gateway_only),
            "{gateway_only} is in the kit's tree"
        );
    }
    assert!(crates.iter().any(|c| c == "wasmtime"), "{crates:?}");
    let checked = low_priority(&cargo)
        .args(["check", "--quiet", "--lib"])
        .args(kit)
        .arg("--target-dir")
        .arg(workspace().join("target/kit"))
        .current_dir(workspace())
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// `mcpw plugin test --json` of the guest `wasm`, which must pass; its report.
fn passes_plugin_test(wasm: &[u8]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guest.wasm");
    std::fs::write(&path, wasm).unwrap();
    let out = mcpw(&["plugin", "test", path.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["passed"], true, "{v}");
    assert!(out.status.success(), "{v}");
    v
}

/// `mcpw plugin test` runs the script role's checks on a script guest: the
/// embedded JavaScript one passes them all.
#[test]
fn plugin_test_covers_the_script_role() {
    let v = passes_plugin_test(mcpw::guests::DEFAULT_SCRIPT_GUEST);
    let checks = v["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["role"] == "script"), "{v}");
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    for expected in [
        "an endless loop is stopped by the deadline",
        "a call reaches the toolbox and resolves to its text",
        "describes itself within about 600 tokens",
        "select gives its outputs as JSON, or says it does not select",
        "an endless select is stopped by a limit",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
}

/// The default guest, which every `mcpw` carries, passes the checks of each
/// role it plays.
#[test]
fn plugin_test_passes_the_default_guest() {
    let v = passes_plugin_test(mcpw::plugin::DEFAULT_GUEST);
    let roles: std::collections::BTreeSet<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    assert!(roles.contains("ranking"), "{roles:?}");
}

#[test]
fn plugin_test_covers_the_guard_role() {
    let guard = crate::gateway::guards::redactor();
    let out = mcpw(&["plugin", "test", guard.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["passed"], true, "{v}");
    let checks = v["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["role"] == "guard"), "{v}");
    assert!(checks.len() >= 5, "{v}");
}
