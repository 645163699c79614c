//! An agent finds and adds servers through `mcp({find})` and `mcp({add})`
//! of `mcpw serve`, with the TypeScript SDK client: only after the user
//! accepts the exact plan (elicitation), never when they decline, when
//! `settings.allowInstall` is `"deny"`, or when the client cannot be asked;
//! without asking for a namespace the user allowed. Each decision is an
//! audit line.

use crate::gateway::serve::{client_plan, text};
use crate::host::install::{Registry, home_with, hostile_remote, listed, npm_cache};
use serde_json::{Value, json};
use std::path::Path;

fn mcp(arguments: Value) -> Value {
    json!({"op": "callTool", "name": "mcp", "arguments": arguments})
}

/// `mcpw serve` on stdio for `home`, as a client connects to it.
fn serve(home: &Path) -> Value {
    let env = crate::common::client_env_with(
        home,
        json!({"npm_config_cache": npm_cache().display().to_string()}),
    );
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve"], "env": env})
}

fn audit_lines(home: &Path) -> Vec<Value> {
    let text =
        std::fs::read_to_string(home.join(".local/state/mcpw/audit.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &Value| l["via"] == "install")
        .collect()
}

#[test]
fn an_agent_adds_a_server_only_once_the_user_accepts_its_plan() {
    let registry = Registry::start();
    let dirs = home_with(&registry, json!({"audit": true}));
    let home = dirs.home();
    let file = home.join(".config/mcpw/mcp.json");
    let steps = json!([
        mcp(json!({"find": "knowledge graph memory"})),
        mcp(json!({"add": "io.github.modelcontextprotocol/server-memory"})),
        {"op": "callToolUntil", "name": "mcp", "arguments": {"server": "memory"},
         "contains": "read_graph", "timeoutMs": 60000},
        mcp(json!({"add": "npm:@modelcontextprotocol/server-everything@2026.8.31"})),
        {"op": "elicitations"},
    ]);
    let answers = json!([{"action": "accept", "content": {"decision": "add"}},
                         {"action": "accept", "content": {"decision": "cancel"}}]);
    let got = client_plan(json!({"connect": serve(&home), "elicit": answers, "steps": steps}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        text(&got[0]).contains("io.github.modelcontextprotocol/server-memory 2026.8.31"),
        "{:#}",
        got[0]
    );
    assert!(
        text(&got[1]).starts_with("Added \"memory\""),
        "{:#}",
        got[1]
    );
    assert!(
        text(&got[3]).contains("the user declined the plan"),
        "{:#}",
        got[3]
    );
    let asked = got[4].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{asked:#?}");
    let plan = asked[0]["message"].as_str().unwrap();
    for shown in [
        "runs npx -y @modelcontextprotocol/server-memory@2026.8.31",
        "from registry io.github.modelcontextprotocol/server-memory, version 2026.8.31",
        "repository https://github.com/modelcontextprotocol/servers",
    ] {
        assert!(plan.contains(shown), "{shown:?} in {plan}");
    }
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("\"memory\""), "{written}");
    assert!(
        !written.contains("\"everything\""),
        "a declined plan writes nothing: {written}"
    );
    let lines = audit_lines(&home);
    let decisions: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["server"].as_str().unwrap(),
                l["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(decisions, [("memory", "asked"), ("everything", "denied")]);
}

/// `"deny"`, and a client that cannot be asked, add nothing; a namespace
/// the user allowed is added without asking.
#[test]
fn deny_and_a_client_that_cannot_be_asked_add_nothing_and_allowed_namespaces_need_no_question() {
    let registry = Registry::start();
    let source = "io.github.modelcontextprotocol/server-memory";
    for (setting, added) in [
        (json!("deny"), false),
        (json!("ask"), false),
        (json!(["io.github.modelcontextprotocol/*"]), true),
    ] {
        let dirs = home_with(&registry, json!({"allowInstall": setting}));
        let home = dirs.home();
        let before = std::fs::read(home.join(".config/mcpw/mcp.json")).unwrap();
        let steps = json!([mcp(json!({"add": source}))]);
        let got = client_plan(json!({"connect": serve(&home), "steps": steps})).unwrap();
        let after = std::fs::read(home.join(".config/mcpw/mcp.json")).unwrap();
        assert_eq!(after != before, added, "{setting}: {:#}", got[0]);
        assert_eq!(got[0]["isError"] == true, !added, "{setting}: {:#}", got[0]);
    }
}

/// In the other exposures the same is one tool, `mcp_servers`, listed only
/// when the user set `settings.allowInstall` (it costs tokens in every
/// session): a direct session finds, is asked, and gets the new tools.
#[test]
fn other_exposures_find_and_add_through_mcp_servers_when_the_user_allows_it() {
    let registry = Registry::start();
    let unset = home_with(&registry, json!({}));
    let listed = |home: &Path, steps: Value, answers: Value| {
        let mut connect = serve(home);
        connect["args"] = json!(["serve", "--exposure", "direct"]);
        client_plan(json!({"connect": connect, "elicit": answers, "steps": steps}))
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let names = |v: &Value| crate::gateway::serve::names(v);
    let got = listed(&unset.home(), json!([{"op": "listTools"}]), json!([]));
    assert!(
        !names(&got[0]).contains(&"mcp_servers".to_string()),
        "{:#}",
        got[0]
    );
    let allowed = home_with(&registry, json!({"allowInstall": "ask"}));
    let call =
        |arguments: Value| json!({"op": "callTool", "name": "mcp_servers", "arguments": arguments});
    let steps = json!([
        {"op": "listTools"},
        call(json!({"find": "knowledge graph memory"})),
        call(json!({"add": "io.github.modelcontextprotocol/server-memory"})),
        {"op": "waitForTool", "name": "memory__read_graph", "timeoutMs": 60000},
    ]);
    let answers = json!([{"action": "accept", "content": {"decision": "add"}}]);
    let got = listed(&allowed.home(), steps, answers);
    assert!(
        names(&got[0]).contains(&"mcp_servers".to_string()),
        "{:#}",
        got[0]
    );
    assert!(
        text(&got[1]).contains("server-memory 2026.8.31"),
        "{:#}",
        got[1]
    );
    assert!(
        text(&got[2]).starts_with("Added \"memory\""),
        "{:#}",
        got[2]
    );
}

/// Under `allowInstall` globs an agent adds a namespace unasked, but never
/// a registry entry's values that would run or expand in the user's file
/// (they are the user's to give), nor options to npx from the registry
/// without putting them to the user.
#[test]
fn an_agent_adds_nothing_that_would_run_or_expand_and_no_npx_options_unasked() {
    let marker = tempfile::tempdir().unwrap();
    let ran = marker.path().join("ran");
    let remote = hostile_remote(&ran);
    let options = listed(json!({
        "name": "io.github.evil/options", "version": "1.0.0", "description": "Notes.",
        "packages": [{"registryType": "npm", "identifier": "@modelcontextprotocol/server-memory",
            "version": "2026.8.31", "transport": {"type": "stdio"},
            "runtimeArguments": [{"type": "named", "name": "--prefer-offline"}]}]}));
    let registry = Registry::start_with(vec![remote, options]);
    let dirs = home_with(&registry, json!({"allowInstall": ["io.github.evil/*"]}));
    let home = dirs.home();
    let before = std::fs::read(home.join(".config/mcpw/mcp.json")).unwrap();
    let steps = json!([
        mcp(json!({"add": "io.github.evil/remote"})),
        mcp(json!({"add": "io.github.evil/options"}))
    ]);
    let got = client_plan(json!({"connect": serve(&home), "steps": steps})).unwrap();
    assert!(
        text(&got[0]).contains("needs values only the user can give"),
        "{:#}",
        got[0]
    );
    assert!(
        text(&got[1]).contains("could not be asked"),
        "npx options are put to the user: {:#}",
        got[1]
    );
    assert!(!ran.exists(), "a registry value ran as a command");
    let after = std::fs::read(home.join(".config/mcpw/mcp.json")).unwrap();
    assert_eq!(after, before, "nothing written");
}
