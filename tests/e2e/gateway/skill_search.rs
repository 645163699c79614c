//! Skills found by search, beside the tools: by the ranking guest of
//! contract 0.2.0 (by words and by meaning), shown as skills by the `mcp`
//! tool, `ToolSearch` and code mode, read by a script from the skill's own
//! server; a ranking guest of 0.1.x keeps loading and is given none.

use super::skills::{call, served, two_servers_with};
use crate::common::{ConfigDirs, build_guest, host_with_config};
use crate::servers::servers;
use serde_json::{Value, json};
use std::path::Path;

/// The two FastMCP skill servers of the Skills tests (`web`: `review`;
/// `data`: `review`, `deploy`; each with a `ping` tool) and mcp-server-time,
/// their folders under `root`, with `settings`.
fn skills_and_time(root: &Path, settings: Value) -> ConfigDirs {
    let dirs = two_servers_with(root, settings, |_| {});
    let time = json!({"command": servers().python_bin("mcp-server-time")});
    dirs.edit_user(|c| c["mcpServers"]["time"] = time);
    dirs
}

async fn found(host: &mcpw::host::Host, query: &str) -> Vec<(String, mcpw::catalog::ToolKind)> {
    let options = mcpw::plugin::SearchOptions {
        limit: 3,
        ..Default::default()
    };
    let hits = host.search(query, options).await.unwrap();
    hits.into_iter()
        .map(|(e, _)| (e.name, e.tool.kind))
        .collect()
}

/// The default guest ranks skills by name and description beside the
/// tools: by words, and by meaning once the vectors are ready (a query that
/// shares no word with the skill). A skill is found as what it is (kind
/// `skill`, named `<server>/<skill>`), never as a tool.
#[tokio::test(flavor = "multi_thread")]
async fn search_finds_skills_beside_tools_by_words_and_by_meaning() {
    use mcpw::catalog::ToolKind;
    let root = tempfile::tempdir().unwrap();
    let dirs = skills_and_time(
        root.path(),
        json!({"search": {"model": servers().minilm()}}),
    );
    let host = host_with_config(&dirs, |_| {}).await;
    for server in ["web", "data", "time"] {
        host.connect(server).await.unwrap();
    }
    let words = found(&host, "deploy a service to the staging cluster").await;
    assert_eq!(
        words[0],
        ("data/deploy".to_string(), ToolKind::Skill),
        "{words:?}"
    );
    let tools = found(&host, "current time in a timezone").await;
    assert_eq!(tools[0].1, ToolKind::Tool, "{tools:?}");
    let meaning = "make the new release available for testers";
    let before = found(&host, meaning).await;
    assert_ne!(before[0].0, "data/deploy", "by words alone: {before:?}");
    host.search_by_meaning_ready().await.unwrap();
    let after = found(&host, meaning).await;
    assert_eq!(
        after[0],
        ("data/deploy".to_string(), ToolKind::Skill),
        "{after:?}"
    );
    // A tool name that is not found suggests tools, never a skill.
    let err = host.resolve("data_deploy").await.err().unwrap().to_string();
    assert!(!err.contains("data/deploy"), "{err}");
    host.shutdown().await;
}

/// Guests of the frozen 0.1.1 contract load and are given no skill: as the
/// ranking guest, a search that only a skill answers finds nothing; as the
/// script guest beside the default ranking (which finds the skill), the
/// toolbox's search leaves the skill out.
#[tokio::test(flavor = "multi_thread")]
async fn guests_of_contract_0_1_1_load_and_are_given_no_skills() {
    let older = build_guest("mcpw-guest-older");
    let root = tempfile::tempdir().unwrap();
    let settings = json!({"search": {"model": "none"}, "plugins": {"ranking": older}});
    let dirs = skills_and_time(root.path(), settings);
    let host = host_with_config(&dirs, |_| {}).await;
    for server in ["web", "data", "time"] {
        host.connect(server).await.unwrap();
    }
    let tools = found(&host, "pong").await;
    assert!(tools.iter().any(|(n, _)| n == "web__ping"), "{tools:?}");
    assert_eq!(found(&host, "staging cluster").await, []);
    host.shutdown().await;
    dirs.edit_user(|c| c["settings"]["plugins"] = json!({"script": older}));
    let host = std::sync::Arc::new(host_with_config(&dirs, |_| {}).await);
    for server in ["web", "data", "time"] {
        host.connect(server).await.unwrap();
    }
    let skill = found(&host, "staging cluster").await;
    assert_eq!(skill[0].0, "data/deploy", "{skill:?}");
    let run = |query: &'static str| {
        let host = host.clone();
        async move {
            let report = host
                .run_script(query, None, Default::default())
                .await
                .unwrap();
            let value = report.value.unwrap_or_else(|e| panic!("{query}: {e:?}"));
            serde_json::from_str::<Vec<String>>(&value).unwrap()
        }
    };
    assert!(
        !run("staging cluster")
            .await
            .contains(&"data/deploy".to_string())
    );
    assert!(run("pong").await.contains(&"web__ping".to_string()));
    host.shutdown().await;
}

fn text(r: &Value) -> String {
    r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Through `mcpw serve`: the `mcp` tool's search shows a skill as one (read,
/// not called), and a task's hits under the need each answers; `ToolSearch`
/// loads tools (a task's under the need each answers), names skills with
/// their URI, and reads a selected skill's `SKILL.md`; a script finds a skill and reads its files from its server.
#[test]
fn the_proxy_tool_toolsearch_and_code_mode_show_and_read_skills() {
    let root = tempfile::tempdir().unwrap();
    let dirs = skills_and_time(root.path(), json!({"search": {"model": "none"}}));
    let r = served(
        &dirs,
        "proxy",
        json!([
            call(
                "mcp",
                json!({"search": "deploy a service to the staging cluster"})
            ),
            call(
                "mcp",
                json!({"search": "review a database migration, then tell me the current time in Tokyo"})
            ),
        ]),
    );
    let shown = text(&r[0]);
    assert!(
        shown.contains("data/deploy (skill)\n  Deploy a service"),
        "{shown}"
    );
    assert!(shown.contains("mcp({skill:"), "{shown}");
    let first = &r[0]["structuredContent"]["matches"][0];
    assert_eq!(
        (&first["skill"], &first["uri"]),
        (
            &json!("data/deploy"),
            &json!("skill://data/deploy/SKILL.md")
        )
    );
    let task = text(&r[1]);
    let needs: Vec<&str> = r[1]["structuredContent"]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["need"].as_str())
        .collect();
    assert!(
        needs.iter().any(|n| n.contains("database migration")),
        "{}",
        r[1]
    );
    assert!(
        needs.iter().any(|n| n.contains("time in Tokyo")),
        "{}",
        r[1]
    );
    for need in needs {
        assert!(task.contains(&format!("For \"{need}\":")), "{task}");
    }

    let r = served(
        &dirs,
        "tool-search",
        json!([
            call("ToolSearch", json!({"query": "staging cluster deploy"})),
            call("ToolSearch", json!({"query": "select:data/deploy"})),
            call(
                "ToolSearch",
                json!({"query": "review a database migration, then tell me the current time in Tokyo"})
            ),
        ]),
    );
    // A task: each tool loaded under the need it answers, in text and data.
    let task = text(&r[2]);
    let needs = r[2]["structuredContent"]["needs"].as_object().cloned();
    let needs = needs.unwrap_or_else(|| panic!("needs in {}", r[2]));
    assert!(
        needs
            .values()
            .any(|n| n.as_str().unwrap().contains("time in Tokyo")),
        "{}",
        r[2]
    );
    for (tool, need) in &needs {
        let head = format!("For \"{}\":", need.as_str().unwrap());
        let at = task
            .find(&head)
            .unwrap_or_else(|| panic!("{head} in {task}"));
        assert!(
            task[at..].contains(tool.as_str()),
            "{tool} after {head}: {task}"
        );
    }
    let listed = text(&r[0]);
    assert!(
        listed.contains("Skills (instructions to read, not tools)"),
        "{listed}"
    );
    assert!(
        listed.contains("data/deploy") && listed.contains("skill://data/deploy/SKILL.md"),
        "{listed}"
    );
    assert!(
        !r[0]["structuredContent"]["loaded"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "data/deploy")
    );
    let selected = text(&r[1]);
    let skill_md = std::fs::read_to_string(root.path().join("two/deploy/SKILL.md")).unwrap();
    assert!(selected.contains(skill_md.trim()), "{selected}");

    let code = r#"
        const hits = await mcp.search("review a database migration", {limit: 5});
        const skill = hits.find((h) => h.skill);
        const md = await mcp.readSkill(skill.name);
        const list = await mcp.readSkill(skill.name, "ref/checklist.md");
        let missing;
        try { await mcp.readSkill("time/get_current_time"); } catch (e) { missing = String(e); }
        return {name: skill.name, declared: "declaration" in skill, md: md.text, list: list.text, uri: list.uri, missing};
    "#;
    let r = served(&dirs, "code", json!([call("code", json!({"code": code}))]));
    assert_eq!(r[0]["isError"], false, "{}", r[0]);
    let value = &r[0]["structuredContent"]["value"];
    assert_eq!(value["name"], "data/review", "{value}");
    assert_eq!(value["declared"], false);
    let two = root.path().join("two/review");
    assert_eq!(
        value["md"],
        std::fs::read_to_string(two.join("SKILL.md")).unwrap()
    );
    assert_eq!(
        value["list"],
        std::fs::read_to_string(two.join("ref/checklist.md")).unwrap()
    );
    assert_eq!(value["uri"], "skill://data/review/ref/checklist.md");
    assert!(
        value["missing"].as_str().unwrap().contains("no skill"),
        "{value}"
    );
}

/// Through `mcpw serve`, the `mcp` tool's search finds a skill by meaning:
/// a query that shares no word with it finds nothing by words (the first
/// search, while the model loads), then the skill once the vectors are ready.
#[test]
fn the_proxy_tools_search_finds_a_skill_by_meaning() {
    let root = tempfile::tempdir().unwrap();
    let dirs = skills_and_time(
        root.path(),
        json!({"search": {"model": servers().minilm()}}),
    );
    let query = json!({"search": "release the build to pre-production"});
    let r = served(
        &dirs,
        "proxy",
        json!([
            {"op": "callTool", "name": "mcp", "arguments": query},
            {"op": "callToolUntil", "name": "mcp", "arguments": query,
             "contains": "data/deploy (skill)", "timeoutMs": 120_000},
        ]),
    );
    assert!(
        !text(&r[0]).contains("data/deploy"),
        "by words: {}",
        text(&r[0])
    );
    let by_meaning = text(&r[1]);
    assert!(
        by_meaning.contains("Read it: mcp({skill: \"data/deploy\"})"),
        "{by_meaning}"
    );
}
