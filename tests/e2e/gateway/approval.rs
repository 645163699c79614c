//! Approval and rate limits through the TypeScript SDK client: `approve`
//! asks the client's user (elicitation) before a call runs; a refusal leaves
//! no side effect on the server (server-memory's file), and a client that
//! cannot be asked is refused unless the user file allows it. A call past a
//! rate limit is refused at once, saying when to try again.

use super::serve::{client_plan, text};
use crate::common::ConfigDirs;
use crate::servers::{MCPW, servers};
use serde_json::{Value, json};
use std::path::PathBuf;

struct Setup {
    dirs: ConfigDirs,
    memory: PathBuf,
}

/// server-memory under `settings` (and `server` fields for it).
fn setup(settings: Value, server: Value) -> Setup {
    let dirs = ConfigDirs::new();
    let memory = dirs.root.path().join("memory.json");
    let mut def = json!({"command": "node", "args": [servers().memory()],
                         "env": {"MEMORY_FILE_PATH": memory.display().to_string()}});
    for (k, v) in server.as_object().unwrap() {
        def[k] = v.clone();
    }
    dirs.user(&json!({"mcpServers": {"memory": def}, "settings": settings}).to_string());
    Setup { dirs, memory }
}

fn connect(s: &Setup, exposure: &str) -> Value {
    let env = crate::common::client_env(&s.dirs.home());
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", exposure], "env": env})
}

fn create(name: &str) -> Value {
    let entities = json!([{"name": name, "entityType": "test", "observations": []}]);
    json!({"op": "callTool", "name": "memory__create_entities", "arguments": {"entities": entities}})
}

fn answer(decision: &str) -> Value {
    json!({"action": "accept", "content": {"decision": decision}})
}

fn memory(s: &Setup) -> String {
    std::fs::read_to_string(&s.memory).unwrap_or_default()
}

#[test]
fn the_user_approves_once_for_a_tool_or_a_server_or_denies() {
    let audit = tempfile::tempdir().unwrap();
    let trail = audit.path().join("audit.jsonl");
    let s = setup(
        json!({"approve": "writes", "audit": {"path": trail.display().to_string()}}),
        json!({}),
    );
    let plan = json!({
        "connect": connect(&s, "direct"),
        "elicit": [{"action": "decline"}, answer("deny"), answer("once"), answer("once"),
                   answer("tool"), answer("server")],
        "steps": [
            create("declined"), create("denied"),
            create("once-1"), create("once-2"),
            create("tool-1"), create("tool-2"),
            {"op": "callTool", "name": "memory__read_graph", "arguments": {}},
            {"op": "callTool", "name": "memory__delete_entities", "arguments": {"entityNames": ["tool-1"]}},
            {"op": "callTool", "name": "memory__delete_entities", "arguments": {"entityNames": ["tool-2"]}},
            {"op": "elicitations"}
        ]
    });
    let r = client_plan(plan).unwrap();
    for (i, what) in [(0, "declined"), (1, "denied")] {
        assert_eq!(r[i]["isError"], true, "{}", r[i]);
        assert!(
            text(&r[i]).contains("the user denied this call"),
            "{}",
            text(&r[i])
        );
        assert!(!memory(&s).contains(what), "the {what} call never ran");
    }
    for allowed in &r[2..=5] {
        assert_ne!(allowed["isError"], true, "{allowed}");
    }
    assert!(memory(&s).contains("once-2"));
    assert_ne!(r[6]["isError"], true, "read-only: not asked");
    assert_ne!(r[8]["isError"], true, "the server was allowed: {}", r[8]);
    let asked = r[9].as_array().unwrap();
    // declined, denied, once, once, tool (tool-2 not asked), server (the
    // second delete not asked); read_graph never.
    assert_eq!(asked.len(), 6, "{asked:?}");
    let first = asked[0]["message"].as_str().unwrap();
    assert!(first.contains("memory__create_entities"), "{first}");
    assert!(
        first.contains("\"declined\""),
        "the arguments are shown: {first}"
    );
    assert_eq!(
        asked[0]["schema"]["properties"]["decision"]["enum"],
        json!(["once", "tool", "server", "deny"])
    );
    assert!(
        asked[5]["message"]
            .as_str()
            .unwrap()
            .contains("delete_entities")
    );

    // One audit line per call, with its decision, and no argument in it.
    let text = std::fs::read_to_string(&trail).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decisions: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["tool"].as_str().unwrap(), l["decision"].as_str().unwrap()))
        .collect();
    assert_eq!(
        decisions,
        [
            ("create_entities", "denied"),
            ("create_entities", "denied"),
            ("create_entities", "asked"),
            ("create_entities", "asked"),
            ("create_entities", "asked"),
            ("create_entities", "allowed"),
            ("read_graph", "allowed"),
            ("delete_entities", "asked"),
            ("delete_entities", "allowed"),
        ]
    );
    assert!(
        lines[0]["reason"].as_str().unwrap().contains("denied"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[0]["resultBytes"], 0);
    assert!(lines[2]["resultBytes"].as_u64().unwrap() > 0);
    assert!(
        lines
            .iter()
            .all(|l| l["server"] == "memory" && l["via"] == "call")
    );
    assert!(
        !text.contains("once-1") && !text.contains("declined"),
        "arguments left out: {text}"
    );
}

#[test]
fn a_client_that_cannot_be_asked_is_refused_unless_the_user_allows_it() {
    let s = setup(json!({}), json!({"approve": {"create_*": "all"}}));
    let steps = json!([create("unasked"), {"op": "callTool", "name": "mcp", "arguments": {"tool": "memory__create_entities",
        "args": {"entities": [{"name": "by-proxy", "entityType": "t", "observations": []}]}}}]);
    let r = client_plan(json!({"connect": connect(&s, "direct"), "steps": [steps[0]]})).unwrap();
    assert_eq!(r[0]["isError"], true);
    let refusal = text(&r[0]);
    assert!(refusal.contains("mcpServers.memory.approve"), "{refusal}");
    assert!(refusal.contains("approveWithoutClient"), "{refusal}");
    let r = client_plan(json!({"connect": connect(&s, "proxy"), "steps": [steps[1]]})).unwrap();
    assert_eq!(r[0]["isError"], true, "{}", r[0]);
    assert_eq!(r[0]["structuredContent"]["error"], "not_approved");
    assert!(!memory(&s).contains("unasked") && !memory(&s).contains("by-proxy"));

    let audit = tempfile::tempdir().unwrap();
    let trail = audit.path().join("audit.jsonl");
    let settings = json!({"approveWithoutClient": "allow",
                          "audit": {"path": trail.display().to_string(), "arguments": true}});
    let s = setup(settings, json!({"approve": "all"}));
    let r = client_plan(json!({"connect": connect(&s, "direct"), "steps": [create("allowed")]}))
        .unwrap();
    assert_ne!(r[0]["isError"], true, "{}", r[0]);
    assert!(memory(&s).contains("allowed"));
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&trail).unwrap().trim()).unwrap();
    assert_eq!(
        line["arguments"]["entities"][0]["name"], "allowed",
        "audit.arguments keeps them"
    );
}

#[test]
fn a_scripts_calls_are_approved_by_the_user_not_the_script() {
    let s = setup(json!({"approve": "destructive"}), json!({}));
    let code = "await tools.memory__create_entities({entities: [{name: 'kept', entityType: 't', observations: []}]}); \
                try { await tools.memory__delete_entities({entityNames: ['kept']}); return 'deleted' } \
                catch (e) { return e.message }";
    let plan = json!({
        "connect": connect(&s, "code"),
        "elicit": [{"action": "decline"}],
        "steps": [{"op": "callTool", "name": "code", "arguments": {"code": code}}, {"op": "elicitations"}]
    });
    let r = client_plan(plan).unwrap();
    let value = r[0]["structuredContent"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r[0]));
    assert!(
        value.contains("the user denied this call of memory__delete_entities"),
        "{value}"
    );
    assert_eq!(
        r[1].as_array().unwrap().len(),
        1,
        "only the destructive call was asked"
    );
    assert!(memory(&s).contains("kept"), "the delete never ran");
}

#[test]
fn a_call_past_a_rate_limit_is_refused_at_once_with_a_retry_after() {
    let s = setup(
        json!({"rateLimit": "100/min"}),
        json!({"rateLimit": {"create_*": "2/min", "*": "50/min"}}),
    );
    let plan = json!({"connect": connect(&s, "direct"), "steps": [
        create("a"), create("b"), create("c"),
        {"op": "callTool", "name": "memory__read_graph", "arguments": {}}
    ]});
    let r = client_plan(plan).unwrap();
    assert_ne!(r[1]["isError"], true, "{}", r[1]);
    assert_eq!(r[2]["isError"], true, "{}", r[2]);
    let refused = text(&r[2]);
    assert!(
        refused.contains(
            "mcpServers.memory.rateLimit[\"create_*\"] allows 2/min for each client; retry after"
        ),
        "{refused}"
    );
    assert!(!memory(&s).contains("\"c\""), "the refused call never ran");
    assert_ne!(r[3]["isError"], true, "another tool's bucket is not empty");
}

/// Over Streamable HTTP the question reaches the client on the stream of the
/// call that needs it: allowed, the call runs; denied, it does not.
#[test]
fn the_user_approves_over_streamable_http() {
    let s = setup(json!({"approve": "writes"}), json!({}));
    let serving = crate::servers::Serving::start(MCPW, &s.dirs.home(), &["--exposure", "direct"]);
    let plan = json!({
        "connect": {"url": serving.url()},
        "elicit": [answer("deny"), answer("once")],
        "steps": [create("denied-http"), create("allowed-http"), {"op": "elicitations"}]
    });
    let r = client_plan(plan).unwrap();
    assert!(
        text(&r[0]).contains("the user denied this call"),
        "{}",
        text(&r[0])
    );
    assert_ne!(r[1]["isError"], true, "{}", r[1]);
    assert_eq!(r[2].as_array().unwrap().len(), 2, "both asked: {}", r[2]);
    assert!(!memory(&s).contains("denied-http"));
    assert!(memory(&s).contains("allowed-http"));
}
