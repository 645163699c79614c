//! What the agent sees at session start, through the TypeScript SDK client:
//! the tool-search listing of the bench catalog (1,287 tools), `auto`
//! exposure on a small and a big catalog, and the hints clients read in a
//! tool's `_meta`.

use crate::common::{ConfigDirs, fixture};
use crate::gateway::serve::{client, names, text};
use crate::servers::{MCPW, Serving, mcpw_in, servers};
use mcpw_test_support::catalog as bench_catalog;
use serde_json::{Value, json};

/// Tokens of a listing as the repo counts them: bytes of its JSON / 4.
fn tokens(tools: &Value) -> usize {
    tools.to_string().len().div_ceil(4)
}

/// `mcpw serve ARGS` over stdio with its config and caches in `dirs`.
fn stdio(dirs: &ConfigDirs, args: &[&str]) -> Value {
    let env = crate::common::client_env(&dirs.home());
    let mut all = vec!["serve"];
    all.extend(args);
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": all, "env": env})
}

/// A listed tool, by name.
fn tool<'a>(tools: &'a Value, name: &str) -> &'a Value {
    let all = tools.as_array().unwrap();
    all.iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is listed: {:?}", names(tools)))
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
    assert_eq!(listed[0]["_meta"]["anthropic/alwaysLoad"], true);
}

/// Compiled guests in the compile cache of `dirs`.
fn compiled_guests(dirs: &ConfigDirs) -> usize {
    let cache = dirs.home().join(".cache/mcpw/guests");
    std::fs::read_dir(cache).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .count()
    })
}

#[test]
fn an_idle_proxy_loads_no_guest_until_it_searches() {
    let dirs = bench_catalog_home(json!({}));
    let r = client(
        stdio(&dirs, &["--exposure", "proxy"]),
        json!([{"op": "listTools"}]),
    )
    .unwrap();
    assert_eq!(names(&r[0]), ["mcp"]);
    // Nothing was named: the default guest was neither compiled nor loaded.
    assert_eq!(compiled_guests(&dirs), 0);
    let r = client(
        stdio(&dirs, &["--exposure", "proxy"]),
        json!([{"op": "callTool", "name": "mcp", "arguments": {"search": "create an issue"}}]),
    )
    .unwrap();
    let matches = r[0]["structuredContent"]["matches"].as_array().unwrap();
    assert!(!matches.is_empty(), "{}", r[0]);
    assert_eq!(
        compiled_guests(&dirs),
        1,
        "the search loaded the default guest"
    );
}

#[test]
fn auto_is_direct_for_a_small_catalog_and_tool_search_for_a_big_one() {
    // Small: the two tools of mcp-server-time fit the default budget.
    let dirs = ConfigDirs::new();
    let time = servers().python_bin("mcp-server-time");
    dirs.user(
        &json!({"mcpServers": {"time": {"command": time, "args": ["--local-timezone", "UTC"]}},
                "settings": {"exposure": "auto"}})
        .to_string(),
    );
    let r = client(
        stdio(&dirs, &[]),
        json!([{"op": "listTools"},
               {"op": "callTool", "name": "time__get_current_time", "arguments": {"timezone": "UTC"}},
               {"op": "callTool", "name": "ToolSearch", "arguments": {"query": "time"}}]),
    )
    .unwrap();
    assert_eq!(
        names(&r[0]),
        ["time__get_current_time", "time__convert_time"],
        "listed directly"
    );
    // They all fit, so all are loaded from the start.
    for t in r[0].as_array().unwrap() {
        assert_eq!(t["_meta"]["anthropic/alwaysLoad"], true, "{t}");
    }
    assert!(text(&r[1]).contains("UTC"), "{}", r[1]);
    assert_eq!(r[2]["isError"], true, "no ToolSearch when direct: {}", r[2]);

    // A budget the two do not fit: tool-search.
    dirs.edit_user(|c| c["settings"]["autoExposureBudget"] = json!(100));
    let out = mcpw_in(&dirs.home())
        .args(["tools", "--exposure", "auto", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(names(&listed["tools"]), ["ToolSearch"]);

    // Big: the bench catalog, chosen with --exposure, starts as tool-search.
    let dirs = bench_catalog_home(json!({}));
    let r = client(
        stdio(&dirs, &["--exposure", "auto"]),
        json!([{"op": "listTools"},
               {"op": "callTool", "name": "ToolSearch", "arguments": {"query": "select:git__git_status"}},
               {"op": "listTools"}]),
    )
    .unwrap();
    assert_eq!(names(&r[0]), ["ToolSearch"]);
    assert!(tokens(&r[0]) <= 500, "{} tokens", tokens(&r[0]));
    assert_eq!(
        r[1]["structuredContent"]["loaded"],
        json!(["git__git_status"])
    );
    assert_eq!(names(&r[2]), ["ToolSearch", "git__git_status"]);
}

#[test]
fn hints_reach_the_client_beside_the_result_budget() {
    let s = servers();
    let dirs = ConfigDirs::new();
    let memory_file = dirs.root.path().join("memory.json");
    dirs.user(
        &json!({"mcpServers": {
            "everything": {"command": "node", "args": [s.everything(), "stdio"],
                           "directTools": ["echo"], "searchKeywords": ["demo", "test fixtures"]},
            "memory": {"command": "node", "args": [s.memory()],
                       "env": {"MEMORY_FILE_PATH": memory_file.display().to_string()}}
        }})
        .to_string(),
    );
    let budget = json!(40_000); // the default 10,000-token result budget, in characters
    let hint = json!("demo, test fixtures");

    // Direct: the direct set is loaded from the start; every tool of a server
    // with searchKeywords carries them for the client's own search.
    let r = client(
        stdio(&dirs, &["--exposure", "direct"]),
        json!([{"op": "listTools"}]),
    )
    .unwrap();
    let echo = &tool(&r[0], "everything__echo")["_meta"];
    assert_eq!(echo["anthropic/alwaysLoad"], true, "{echo}");
    assert_eq!(echo["anthropic/searchHint"], hint);
    assert_eq!(echo["anthropic/maxResultSizeChars"], budget);
    let sum = &tool(&r[0], "everything__get-sum")["_meta"];
    assert_eq!(sum["anthropic/searchHint"], hint);
    assert_eq!(sum.get("anthropic/alwaysLoad"), None, "{sum}");
    let graph = &tool(&r[0], "memory__read_graph")["_meta"];
    assert_eq!(
        *graph,
        json!({"anthropic/maxResultSizeChars": budget}),
        "no keywords, not direct"
    );

    // Tool-search: every tool it lists is loaded, ToolSearch included.
    let r = client(
        stdio(&dirs, &["--exposure", "tool-search"]),
        json!([{"op": "listTools"},
               {"op": "callTool", "name": "ToolSearch", "arguments": {"query": "select:memory__read_graph"}},
               {"op": "listTools"}]),
    )
    .unwrap();
    assert_eq!(names(&r[0]), ["ToolSearch", "everything__echo"]);
    assert_eq!(
        tool(&r[0], "ToolSearch")["_meta"]["anthropic/alwaysLoad"],
        true
    );
    assert_eq!(
        tool(&r[0], "everything__echo")["_meta"],
        json!({"anthropic/maxResultSizeChars": budget, "anthropic/alwaysLoad": true,
               "anthropic/searchHint": hint})
    );
    assert_eq!(
        tool(&r[2], "memory__read_graph")["_meta"],
        json!({"anthropic/maxResultSizeChars": budget, "anthropic/alwaysLoad": true})
    );
}

#[test]
fn an_auto_session_keeps_its_exposure_as_the_catalog_grows() {
    // The bench catalog is cached, but the config names mcp-server-time alone.
    let dirs = bench_catalog_home(json!({"exposure": "auto"}));
    let config_file = dirs.home().join(".config/mcpw/mcp.json");
    let mut grown: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    let time = json!({"command": servers().python_bin("mcp-server-time"),
                      "args": ["--local-timezone", "UTC"]});
    // The catalog has a server named time already.
    grown["mcpServers"]["clock"] = time.clone();
    dirs.user(
        &json!({"mcpServers": {"clock": time}, "settings": {"exposure": "auto"}}).to_string(),
    );
    let serving = Serving::start(MCPW, &dirs.home(), &[]);
    let connect = json!({"url": serving.url()});
    // A session that started direct stays direct when 1,287 tools join.
    let r = client(
        connect.clone(),
        json!([{"op": "listTools"},
               {"op": "writeFile", "path": config_file, "text": grown.to_string()},
               {"op": "waitForTool", "name": "github__create_issue", "present": true, "timeoutMs": 30000},
               {"op": "listTools"}]),
    )
    .unwrap();
    assert_eq!(
        names(&r[0]),
        ["clock__get_current_time", "clock__convert_time"]
    );
    assert_eq!(
        tool(&r[0], "clock__convert_time")["_meta"]["anthropic/alwaysLoad"],
        true
    );
    let now = names(&r[3]);
    assert_eq!(now.len(), bench_catalog::TOOLS + 2, "every tool is listed");
    assert!(!now.contains(&"ToolSearch".to_string()));
    // They no longer fit: none is loaded from the start any more.
    assert!(
        r[3].as_array()
            .unwrap()
            .iter()
            .all(|t| t["_meta"].get("anthropic/alwaysLoad").is_none()),
        "{}",
        tool(&r[3], "clock__convert_time")
    );
    // A new session decides on the catalog it meets.
    let r = client(connect, json!([{"op": "listTools"}])).unwrap();
    assert_eq!(names(&r[0]), ["ToolSearch"]);
}
