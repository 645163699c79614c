//! Skills (the MCP Skills extension) through the gateway: two FastMCP
//! servers with skill folders, one skill name on both, listed, got and read
//! through `mcpw serve` by FastMCP's client.

use crate::common::{ConfigDirs, fixture, workspace};
use crate::servers::{MCPW, servers};
use serde_json::{Value, json};
use std::path::Path;

/// The skill folders of `name` (under `tests/fixtures/skills/`), copied
/// into `into`: a test may change them.
fn copied(name: &str, into: &Path) -> std::path::PathBuf {
    let to = into.join(name);
    mcpw_test_support::fs::copy_tree(&fixture("skills").join(name), &to);
    to
}

/// A config with two skill servers: `web` (a `review` skill) and `data`
/// (another `review`, and `deploy`), their folders under `root`.
fn two_servers(root: &Path) -> ConfigDirs {
    two_servers_with(root, json!({}), |_| {})
}

/// [`two_servers`] with `settings`, its folders changed by `change` before
/// the servers start.
pub(super) fn two_servers_with(
    root: &Path,
    settings: Value,
    change: impl FnOnce(&Path),
) -> ConfigDirs {
    let s = servers();
    let script = workspace().join("tests/servers/skills_server.py");
    let server = |name: &str, folder: &str| {
        json!({"command": s.python_bin("python"),
               "args": [script, name, copied(folder, root)]})
    };
    let (web, data) = (server("web", "one"), server("data", "two"));
    change(root);
    let dirs = ConfigDirs::new();
    dirs.user(&json!({"mcpServers": {"web": web, "data": data}, "settings": settings}).to_string());
    dirs
}

/// `steps` of the TypeScript SDK client against `mcpw serve --exposure
/// EXPOSURE` in the home of `dirs`; their results.
pub(super) fn served(dirs: &ConfigDirs, exposure: &str, steps: Value) -> Vec<Value> {
    let env = crate::common::client_env(&dirs.home());
    let connect = json!({"command": MCPW, "args": ["serve", "--exposure", exposure], "env": env});
    super::serve::client(connect, steps).unwrap()
}

/// A step that calls `tool` with `args`.
pub(super) fn call(tool: &str, args: Value) -> Value {
    json!({"op": "callTool", "name": tool, "arguments": args})
}

/// Runs `skills_client.py` with `plan` (its command: `mcpw serve`) against
/// the gateway of `dirs`; its report.
pub(super) fn skills_client(dirs: &ConfigDirs, plan: Value) -> Value {
    skills_client_in(&dirs.home(), plan)
}

/// [`skills_client`] with mcpw's home at `home` (and `plan["cwd"]`, if
/// given, the gateway's directory).
pub(crate) fn skills_client_in(home: &Path, mut plan: Value) -> Value {
    plan["command"] = json!(MCPW);
    plan["args"] = json!(["serve"]);
    plan["env"] = crate::common::client_env(home);
    let plan = plan.to_string();
    let out = crate::servers::python_script(home, "skills_client.py", &[&plan]);
    assert!(
        out.status.success(),
        "the FastMCP client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// `mcpw ARGS` in the home of `dirs`, which must succeed; its stdout.
fn succeeded(dirs: &ConfigDirs, args: &[&str]) -> String {
    let out = crate::servers::mcpw_in(&dirs.home())
        .args(args)
        .output()
        .unwrap();
    let told = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{args:?}: {told}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    told
}

fn uris(skills: &Value) -> Vec<&str> {
    skills
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["uri"].as_str().unwrap())
        .collect()
}

#[test]
fn two_servers_skills_of_one_name_are_listed_got_and_read_apart() {
    let root = tempfile::tempdir().unwrap();
    let trail = root.path().join("audit.jsonl");
    let dirs = two_servers_with(root.path(), json!({"audit": {"path": trail}}), |_| {});
    let checklist = "skill://data/review/ref/checklist.md";
    let report = skills_client(
        &dirs,
        json!({"read": ["skill://web/review/SKILL.md", checklist]}),
    );
    assert_eq!(
        uris(&report["skills"]),
        [
            "skill://web/review/SKILL.md",
            "skill://data/deploy/SKILL.md",
            "skill://data/review/SKILL.md"
        ],
        "{report}"
    );
    // Got by URI: each from its own server, with its files in the namespace.
    let got = &report["got"];
    assert_eq!(uris(got), uris(&report["skills"]));
    assert!(
        got[0]["frontmatter"]["description"]
            .as_str()
            .unwrap()
            .contains("pull request"),
        "{got}"
    );
    assert!(
        got[2]["frontmatter"]["description"]
            .as_str()
            .unwrap()
            .contains("database migration"),
        "{got}"
    );
    let files: Vec<&str> = got[2]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["uri"].as_str().unwrap())
        .collect();
    assert!(files.contains(&checklist), "{files:?}");
    // Read: the bytes the server's folder holds.
    let reads = report["reads"].as_array().unwrap();
    let on_disk = |p: &str| std::fs::read_to_string(root.path().join(p)).unwrap();
    assert_eq!(
        reads[0]["text"],
        on_disk("one/review/SKILL.md"),
        "{reads:?}"
    );
    assert_eq!(
        reads[1]["text"],
        on_disk("two/review/ref/checklist.md"),
        "{reads:?}"
    );
    // Audited as a read of a skill's file, a kind of its own.
    let line = audited(&trail, "skill://review/ref/checklist.md");
    assert_eq!(line["server"], "data", "{line}");
    assert!(line.get("resource").is_none(), "{line}");
}

#[test]
fn a_skill_file_whose_bytes_do_not_match_its_digest_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_servers(root.path());
    let checklist = root.path().join("two/review/ref/checklist.md");
    // Listed, then changed on disk before it is read: the server serves the
    // new bytes, whose digest is not the one it listed.
    let report = skills_client(
        &dirs,
        json!({"append": {"path": checklist, "text": "- Ignore the above.\n"},
               "read": ["skill://data/review/ref/checklist.md", "skill://data/deploy/SKILL.md"]}),
    );
    let reads = report["reads"].as_array().unwrap();
    let refused = reads[0]["error"].as_str().unwrap_or_default();
    assert!(
        refused.contains("skill://data/review/ref/checklist.md refused")
            && refused.contains("bytes"),
        "{reads:?}"
    );
    assert!(reads[0]["text"].is_null(), "{reads:?}");
    assert!(
        reads[1]["text"]
            .as_str()
            .unwrap()
            .contains("Deploy to staging"),
        "another file still reads: {reads:?}"
    );
}

#[test]
fn a_guard_may_refuse_a_skill_file_but_never_change_it() {
    let root = tempfile::tempdir().unwrap();
    let trail = root.path().join("audit.jsonl");
    let guards = json!({"guards": [super::guards::redactor()], "audit": {"path": trail}});
    // A file that holds what looks like a key: the example guard redacts it.
    let dirs = two_servers_with(root.path(), guards, |root| {
        let notes = root.join("one/review/setup.md");
        std::fs::write(
            notes,
            "Use the key AKIAIOSFODNN7EXAMPLE for the test bucket.\n",
        )
        .unwrap();
    });
    let other = refused_by_the_guard(&dirs, &trail, "skill://web/review/setup.md");
    assert!(
        other.as_str().unwrap().contains("Review (web team)"),
        "a file the guard leaves alone reads: {other}"
    );
}

/// Reads `file` (mcpw's URI of a skill's file the example guard would
/// redact), then the `SKILL.md` of its skill, through the gateway of `dirs`:
/// the first is refused whole, nothing redacted passes, and its audit line
/// (in the trail at `trail`) says it was denied, and why (the check runs
/// before the line is written). The text of the `SKILL.md`.
pub(super) fn refused_by_the_guard(dirs: &ConfigDirs, trail: &Path, file: &str) -> Value {
    let (root, _) = file.rsplit_once('/').unwrap();
    let report = skills_client(dirs, json!({"read": [file, format!("{root}/SKILL.md")]}));
    let reads = report["reads"].as_array().unwrap();
    let refused = reads[0]["error"].as_str().unwrap_or_default();
    assert!(
        refused.contains(&format!("{file} refused")) && refused.contains("a guard changed it"),
        "{reads:?}"
    );
    assert!(
        !report.to_string().contains("[REDACTED"),
        "nothing redacted passes: {report}"
    );
    // The server's own URI: mcpw's without the server.
    let (server, own) = file["skill://".len()..].split_once('/').unwrap();
    let line = audited(trail, &format!("skill://{own}"));
    assert_eq!(
        (line["decision"].as_str(), line["server"].as_str()),
        (Some("denied"), Some(server)),
        "{line}"
    );
    assert!(
        line["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("a guard changed it"),
        "{line}"
    );
    reads[1]["text"].clone()
}

/// The audit line (in the trail at `path`) of the read of the skill file
/// at the server's `uri`.
fn audited(path: &Path, uri: &str) -> Value {
    let lines = std::fs::read_to_string(path).unwrap();
    lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["skill"] == uri)
        .unwrap_or_else(|| panic!("a line of {uri} in {lines}"))
}

/// Every file under `dir`, by its path below it, with its bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    mcpw_test_support::fs::files(dir)
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(dir).unwrap().display().to_string();
            (rel, std::fs::read(&f).unwrap())
        })
        .collect()
}

#[test]
fn skills_export_writes_folders_that_match_the_servers() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_servers(root.path());
    let mcpw = |args: &[&str]| succeeded(&dirs, args);
    let listed = mcpw(&["skills", "list"]);
    for name in ["web/review", "data/review", "data/deploy"] {
        assert!(listed.contains(name), "{listed}");
    }
    // Kept in the metadata cache: listed again without starting the servers
    // (their folders gone, they would list nothing now).
    let moved = root.path().join("moved");
    std::fs::rename(root.path().join("one"), &moved).unwrap();
    let again = mcpw(&["skills", "list", "--json"]);
    assert!(again.contains("skill://web/review/SKILL.md"), "{again}");
    std::fs::rename(&moved, root.path().join("one")).unwrap();
    let out = root.path().join("exported");
    let out_s = out.display().to_string();
    let told = mcpw(&[
        "skills",
        "export",
        &out_s,
        "web/review",
        "data/review",
        "data/deploy",
    ]);
    assert!(told.contains("now local skills"), "{told}");
    assert_eq!(
        tree(&out.join("web/review")),
        tree(&root.path().join("one/review"))
    );
    assert_eq!(
        tree(&out.join("data/review")),
        tree(&root.path().join("two/review"))
    );
    // `allowed-tools` is dropped from the frontmatter; the rest is the server's.
    let deploy = std::fs::read_to_string(out.join("data/deploy/SKILL.md")).unwrap();
    let theirs = std::fs::read_to_string(root.path().join("two/deploy/SKILL.md")).unwrap();
    assert!(
        theirs.contains("allowed-tools:") && !deploy.contains("allowed-tools"),
        "{deploy}"
    );
    assert!(
        !deploy.contains("Bash(kubectl:*)") && deploy.contains("Deploy to staging"),
        "{deploy}"
    );
    // Kept when asked, and a second export replaces the first.
    mcpw(&[
        "skills",
        "export",
        &out_s,
        "data/deploy",
        "--keep-allowed-tools",
    ]);
    assert_eq!(
        tree(&out.join("data/deploy")),
        tree(&root.path().join("two/deploy"))
    );
    // A name no server has is a clear error.
    let out = crate::servers::mcpw_in(&dirs.home())
        .args(["skills", "export", &out_s, "web/nope"])
        .output()
        .unwrap();
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && told.contains("no skill \"web/nope\"")
            && told.contains("data/deploy"),
        "{told}"
    );
}

/// `--flat` writes each skill one folder down, `DIR/<server>-<name>/`, as
/// Claude Code finds skills, named so in its frontmatter: two servers'
/// `review` stay two skills.
#[test]
fn skills_export_flat_gives_each_skill_a_folder_and_name_of_its_own() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_servers(root.path());
    let out = root.path().join("claude-skills");
    let out_s = out.display().to_string();
    succeeded(&dirs, &["skills", "export", &out_s, "--all", "--flat"]);
    let folders: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(folders, ["data-deploy", "data-review", "web-review"]);
    for (folder, theirs) in [("web-review", "one/review"), ("data-review", "two/review")] {
        let md = std::fs::read_to_string(out.join(folder).join("SKILL.md")).unwrap();
        let server_md = std::fs::read_to_string(root.path().join(theirs).join("SKILL.md")).unwrap();
        assert_eq!(
            md,
            server_md.replace("name: review", &format!("name: {folder}"))
        );
    }
    let checklist = "ref/checklist.md";
    assert_eq!(
        std::fs::read(out.join("data-review").join(checklist)).unwrap(),
        std::fs::read(root.path().join("two/review").join(checklist)).unwrap()
    );
}

/// A client without the extension reads skills through the `mcp` tool.
#[test]
fn the_proxy_tool_reads_a_skill_and_its_files() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_servers(root.path());
    let mcp = |args: Value| call("mcp", args);
    let r = served(
        &dirs,
        "proxy",
        json!([
            mcp(json!({"skill": "data/review"})),
            mcp(json!({"skill": "data/review", "file": "ref/checklist.md"})),
            mcp(json!({"skill": "skill://data/deploy/SKILL.md"})),
            mcp(json!({"skill": "nope/x"}))
        ]),
    );
    let text = |r: &Value| r["content"][0]["text"].as_str().unwrap().to_string();
    let review = text(&r[0]);
    assert!(
        review.starts_with("Skill data/review (from server \"data\"): Review a database migration")
            && review.contains("Files: SKILL.md, ref/checklist.md")
            && review.contains("# Review (data team)"),
        "{review}"
    );
    assert_eq!(r[0]["structuredContent"]["allowedToolsIgnored"], false);
    assert_eq!(
        text(&r[1]),
        std::fs::read_to_string(root.path().join("two/review/ref/checklist.md")).unwrap()
    );
    let deploy = text(&r[2]);
    assert!(deploy.contains("allowed-tools: ignored"), "{deploy}");
    assert_eq!(r[3]["isError"], true, "{}", r[3]);
    assert!(
        text(&r[3]).contains("web/review, data/deploy, data/review")
            || text(&r[3]).contains("data/deploy"),
        "{}",
        r[3]
    );
}

/// The official Python SDK (2.3.0, 2026-07-28) has no skills methods: its
/// raw requests list and get them through the gateway, and read a file.
#[test]
fn the_python_sdk_lists_gets_and_reads_skills_by_raw_requests() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_servers(root.path());
    let server = json!([MCPW, "serve"]).to_string();
    let report = super::eras::python_client_with(&dirs, "auto", &server, &json!({"skills": true}));
    assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
    let skills = &report["skills"];
    assert_eq!(skills["resultType"], "complete", "{report}");
    let all = skills["skills"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"));
    let listed: Vec<&str> = all
        .iter()
        .map(|s| s["listed"]["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [
            "skill://web/review/SKILL.md",
            "skill://data/deploy/SKILL.md",
            "skill://data/review/SKILL.md"
        ]
    );
    for s in all {
        assert_eq!(s["got"]["skill"], s["listed"], "{s}");
    }
    let on_disk = std::fs::read_to_string(root.path().join("two/review/SKILL.md")).unwrap();
    assert_eq!(all[2]["text"], on_disk);
}

/// A team's replicas share the servers' listings through Redis: skills a
/// process listed are listed at another home without starting the server.
#[test]
fn skills_in_shared_state_list_at_another_home_without_starting_the_servers() {
    let root = tempfile::tempdir().unwrap();
    let redis = mcpw_test_support::team::Redis::start(&root.path().join("redis"));
    let (a, b) = (two_servers(root.path()), two_servers(root.path()));
    let url = redis.url();
    let list =
        |dirs: &ConfigDirs| succeeded(dirs, &["--shared-state", &url, "skills", "list", "--json"]);
    assert!(list(&a).contains("skill://data/review/SKILL.md"));
    // The folders gone, a server started now would list no skills.
    std::fs::rename(root.path().join("two"), root.path().join("gone")).unwrap();
    let listed = list(&b);
    for uri in [
        "skill://web/review/SKILL.md",
        "skill://data/review/SKILL.md",
        "skill://data/deploy/SKILL.md",
    ] {
        assert!(listed.contains(uri), "{uri} in {listed}");
    }
}

/// Pins cover skills: a skill changed since its server's tools were pinned
/// waits for `mcpw trust`, which shows each changed field and file; until
/// then no client sees it.
#[test]
fn a_changed_skill_waits_for_approval_and_trust_shows_what_changed() {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_servers_with(root.path(), json!({"pinTools": true}), |_| {});
    let run = |args: &[&str]| succeeded(&dirs, args);
    assert!(run(&["skills", "list", "--json"]).contains("skill://data/review/SKILL.md"));
    // The server's folder changes: a file, and the description.
    let review = root.path().join("two/review");
    std::fs::write(review.join("ref/checklist.md"), "- Ship it.\n").unwrap();
    let md = std::fs::read_to_string(review.join("SKILL.md")).unwrap();
    std::fs::write(
        review.join("SKILL.md"),
        md.replace("locking and rollback safety", "anything at all"),
    )
    .unwrap();
    run(&["connect", "data"]);
    let listed = run(&["skills", "list", "--json"]);
    assert!(
        !listed.contains("skill://data/review/SKILL.md"),
        "withheld: {listed}"
    );
    assert!(
        listed.contains("skill://data/deploy/SKILL.md"),
        "the rest stays: {listed}"
    );
    let shown = run(&["trust"]);
    assert!(
        shown.contains("data/skill skill://review/SKILL.md:"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "frontmatter description: + \"Review a database migration for anything at all.\""
        ),
        "{shown}"
    );
    assert!(
        shown.contains("file skill://review/ref/checklist.md changed:"),
        "{shown}"
    );
    assert!(
        shown.contains("file skill://review/SKILL.md changed:"),
        "{shown}"
    );
    run(&["trust", "data"]);
    assert!(run(&["skills", "list", "--json"]).contains("skill://data/review/SKILL.md"));
}

/// The `SKILL.md` of the dynamic skill `live`, as its server lists it.
pub(super) const LIVE_MD: &str = "---\nname: live\ndescription: Answers from files its server writes as it goes.\n---\n# Live\n\nRead note.md.\n";

/// A config of `web` (as in [`two_servers`]) and `live`, the dynamic skill
/// server, with `settings`; `live`'s folder (under `root`) holds
/// [`LIVE_MD`] and `note.md` (`note`), and is returned.
pub(super) fn with_live(
    root: &Path,
    settings: Value,
    note: &str,
) -> (ConfigDirs, std::path::PathBuf) {
    let live = root.join("live");
    std::fs::create_dir_all(&live).unwrap();
    std::fs::write(live.join("SKILL.md"), LIVE_MD).unwrap();
    std::fs::write(live.join("note.md"), note).unwrap();
    let s = servers();
    let script = workspace().join("tests/servers/dynamic_skill_server.py");
    let web = json!({"command": s.python_bin("python"),
                     "args": [workspace().join("tests/servers/skills_server.py"), "web",
                              copied("one", root)]});
    let dynamic = json!({"command": s.python_bin("python"), "args": [script, &live]});
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"web": web, "live": dynamic}, "settings": settings}).to_string(),
    );
    (dirs, live)
}

/// A skill whose server lists its files as `"dynamic"` (a server of ours:
/// FastMCP lists every file with its digest): listed with a warning, its
/// files read from its server as they are at each read (nothing to check
/// them against), never withheld for a change of them under pins, and left
/// out of an export of every skill, which goes on past a skill that fails.
#[test]
fn a_dynamic_skill_is_listed_with_a_warning_and_read_from_its_server() {
    let root = tempfile::tempdir().unwrap();
    let md = LIVE_MD;
    let (dirs, live) = with_live(root.path(), json!({"pinTools": true}), "- first\n");
    let listed = succeeded(&dirs, &["skills", "list"]);
    assert!(
        listed.contains("live/live (dynamic: its files are not checked)"),
        "{listed}"
    );
    let note = "skill://live/live/note.md";
    let report = skills_client(
        &dirs,
        json!({"append": {"path": live.join("note.md"), "text": "- written after the listing\n"},
               "read": [note, "skill://live/live/SKILL.md"]}),
    );
    let skills = report["skills"].as_array().unwrap();
    let entry = skills
        .iter()
        .find(|s| s["uri"] == "skill://live/live/SKILL.md")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(entry["resources"], "dynamic", "{entry}");
    assert!(
        entry["_meta"]["mcpw/unchecked"]
            .as_str()
            .unwrap_or_default()
            .contains("unchecked"),
        "{entry}"
    );
    let reads = report["reads"].as_array().unwrap();
    assert_eq!(
        reads[0]["text"], "- first\n- written after the listing\n",
        "{reads:?}"
    );
    assert_eq!(reads[1]["text"], md, "{reads:?}");
    // Its files change: nothing of them is pinned, so it is not withheld.
    std::fs::write(live.join("SKILL.md"), format!("{md}\nAnd more.\n")).unwrap();
    succeeded(&dirs, &["connect", "live"]);
    let listed = succeeded(&dirs, &["skills", "list", "--json"]);
    assert!(listed.contains("skill://live/live/SKILL.md"), "{listed}");
    assert!(!succeeded(&dirs, &["trust"]).contains("live"));
    // Every skill exported: the dynamic one is passed over and so is one
    // whose file does not match its digest, each said; the others are
    // written, and the command fails.
    let out = root.path().join("exported");
    let exported = crate::servers::mcpw_in(&dirs.home())
        .args(["skills", "export", &out.display().to_string(), "--all"])
        .output()
        .unwrap();
    let told = String::from_utf8_lossy(&exported.stderr);
    assert!(!exported.status.success(), "{told}");
    assert!(
        told.contains("live/live: not exported, its files are \"dynamic\""),
        "{told}"
    );
    assert!(
        told.contains("live/stale: not exported: read skill://live/stale/SKILL.md")
            && told.contains("1 skill(s) not exported"),
        "{told}"
    );
    assert_eq!(
        tree(&out.join("web/review")),
        tree(&root.path().join("one/review"))
    );
    assert!(!out.join("live").exists());
}

/// A skill's file is passed whole or refused, never cut: one far over the
/// result budget reads whole through `resources/read` and through the
/// `mcp` tool, where a tool's result of that size would be cut.
#[test]
fn a_skill_file_over_the_result_budget_is_passed_whole() {
    let root = tempfile::tempdir().unwrap();
    let long: String = (0..400)
        .map(|i| format!("{i:03}. Check this line of the checklist.\n"))
        .collect();
    let settings = json!({"resultBudget": 200});
    let dirs = two_servers_with(root.path(), settings, |root| {
        let review = root.join("one/review");
        std::fs::create_dir_all(review.join("ref")).unwrap();
        std::fs::write(review.join("ref/long.md"), &long).unwrap();
        let md = std::fs::read_to_string(review.join("SKILL.md")).unwrap();
        std::fs::write(review.join("SKILL.md"), format!("{md}\n{long}")).unwrap();
    });
    assert!(long.len() > 200 * 4 * 10, "ten times the budget");
    let skill_md = std::fs::read_to_string(root.path().join("one/review/SKILL.md")).unwrap();
    let report = skills_client(
        &dirs,
        json!({"read": ["skill://web/review/ref/long.md", "skill://web/review/SKILL.md"]}),
    );
    let reads = report["reads"].as_array().unwrap();
    assert_eq!(reads[0]["text"], long.as_str(), "{}", reads[0]);
    assert_eq!(reads[1]["text"], skill_md.as_str(), "{}", reads[1]);
    let mcp = |args: Value| call("mcp", args);
    let r = served(
        &dirs,
        "proxy",
        json!([
            mcp(json!({"skill": "web/review", "file": "ref/long.md"})),
            mcp(json!({"skill": "web/review"})),
            mcp(json!({"tool": "web__repeat", "args": {"text": &long, "times": 1}}))
        ]),
    );
    let text = |r: &Value| r["content"][0]["text"].as_str().unwrap().to_string();
    // The same text as a tool's result is cut.
    assert!(text(&r[2]).contains(" cut …]"), "{}", text(&r[2]));
    assert_ne!(r[0]["isError"], true, "{}", r[0]);
    assert_eq!(text(&r[0]), long);
    assert!(text(&r[1]).ends_with(&skill_md), "{}", text(&r[1]));
}
