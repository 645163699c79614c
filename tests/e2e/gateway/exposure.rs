//! What the agent sees at session start, through the TypeScript SDK client:
//! the tool-search listing of the bench catalog (1,287 tools).

use crate::bench_catalog;
use crate::common::{ConfigDirs, fixture};
use crate::gateway::serve::{client, names};
use serde_json::{Value, json};

/// Tokens of a listing as the repo counts them: bytes of its JSON / 4.
fn tokens(tools: &Value) -> usize {
    tools.to_string().len().div_ceil(4)
}

/// `mcpw serve ARGS` over stdio with its config and caches in `dirs`.
fn stdio(dirs: &ConfigDirs, args: &[&str]) -> Value {
    let env = json!({"HOME": dirs.home().display().to_string(), "XDG_CONFIG_HOME": "",
                     "XDG_CACHE_HOME": "", "XDG_STATE_HOME": "", "MCPW_CONFIG": ""});
    let mut all = vec!["serve"];
    all.extend(args);
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": all, "env": env})
}

/// The bench catalog served from a warm cache (no server is started).
fn bench_catalog_home(settings: Value) -> ConfigDirs {
    let dirs = ConfigDirs::new();
    bench_catalog::write(&dirs.home(), &fixture("catalog.json"), settings);
    dirs
}

#[test]
fn tool_search_starts_within_500_tokens_on_the_bench_catalog() {
    let dirs = bench_catalog_home(json!({}));
    let r = client(
        stdio(&dirs, &["--exposure", "tool-search"]),
        json!([{"op": "listTools"}]),
    )
    .unwrap();
    let listed = &r[0];
    assert_eq!(names(listed), ["ToolSearch"]);
    let start = tokens(listed);
    assert!(start <= 500, "{start} tokens at session start");
    let description = listed[0]["description"].as_str().unwrap();
    assert!(
        description.contains("(1287 more tools of 101 servers)"),
        "{description}"
    );
    // Every server is named, most tools first, and the biggest say what they do.
    assert!(
        description.contains("Servers, most tools first: okta: "),
        "{description}"
    );
    let catalog: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("catalog.json")).unwrap()).unwrap();
    for s in catalog["servers"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        assert!(
            description.contains(&format!(" {name};"))
                || description.contains(&format!(" {name}:"))
                || description.ends_with(&format!(" {name}")),
            "{name} is named: {description}"
        );
    }
}
