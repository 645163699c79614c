//! The catalog snapshot: built once per catalog version however many ask at
//! once, and every name-related decision taken from the naming guest.

use crate::common::{ConfigDirs, build_guest, cache, entry_names, host_with_config};
use crate::servers::servers;
use mcpw::cache::{self as metadata, MetadataCache};
use mcpw::host::Host;
use mcpw::plugin::SearchOptions;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The suffix-naming guest (`tests/guests/suffix-namer`), built once per run.
fn suffix_namer() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build_guest("mcpw-guest-suffix-namer"))
}

/// Writes `config` as the user config and a warm cache entry for each server
/// named in `cached` (tools by name, prompts by name); those servers are never
/// started.
fn write_config(dirs: &ConfigDirs, config: &Value, cached: &[(&str, &[&str], &[&str])]) {
    dirs.user(&config.to_string());
    let cfg = dirs.load();
    assert!(!cfg.has_errors(), "{:?}", cfg.diagnostics);
    let file = MetadataCache::new(dirs.env.cache_dir().join("metadata.json"));
    let entries = cached
        .iter()
        .map(|(server, tools, prompts)| {
            let s = cfg.server(server).expect("a configured server");
            let entry = metadata::Entry {
                config_hash: metadata::config_hash(&s.raw),
                tools: tools
                    .iter()
                    .map(|t| {
                        let t = json!({"name": t, "description": format!("The {t} tool"), "inputSchema": {"type": "object"}});
                        serde_json::value::to_raw_value(&t).expect("JSON")
                    })
                    .collect(),
                resources: vec![],
                resource_templates: vec![],
                prompts: prompts.iter().map(|p| json!({"name": p})).collect(),
                skills: vec![],
                directory_read: false,
                cached_at: mcpw::clock::now_ms(),
                protocol_version: None,
            };
            (server.to_string(), Some(entry))
        })
        .collect();
    file.update(entries).unwrap();
}

fn never_started() -> Value {
    json!({"command": "/nonexistent/never-started"})
}

async fn everyone_at_once(host: &Arc<Host>, n: usize) {
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let host = host.clone();
            tokio::spawn(async move {
                let name = ["alpha__one", "beta__two", "gamma__three"][i % 3];
                assert_eq!(host.resolve(name).await.unwrap().name, name);
                let hits = host.search(name, SearchOptions::default()).await.unwrap();
                assert_eq!(hits[0].0.name, name, "{name}: {hits:?}");
                assert!(!host.entries().await.unwrap().is_empty());
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_snapshot_is_built_once_per_catalog_version() {
    let dirs = ConfigDirs::new();
    let servers = |with_gamma: bool| {
        let mut s = json!({"alpha": never_started(), "beta": never_started()});
        if with_gamma {
            s["gamma"] = never_started();
        }
        json!({"mcpServers": s})
    };
    write_config(
        &dirs,
        &servers(true),
        &[
            ("alpha", &["one", "uno"], &[]),
            ("beta", &["two", "dos"], &[]),
            ("gamma", &["three", "tres"], &[]),
        ],
    );
    let host = Arc::new(host_with_config(&dirs, |_| {}).await);
    assert_eq!(
        host.builds(),
        (0, 0),
        "nothing is built before it is needed"
    );
    everyone_at_once(&host, 50).await;
    assert_eq!(
        host.builds(),
        (1, 1),
        "50 sessions at once share one snapshot and one index"
    );
    everyone_at_once(&host, 50).await;
    assert_eq!(host.builds(), (1, 1), "an unchanged catalog is not rebuilt");

    // A catalog change (a server removed) makes exactly one more of each.
    dirs.user(&servers(false).to_string());
    assert_eq!(host.reload(dirs.load()).await, ["gamma"]);
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let host = host.clone();
            tokio::spawn(async move {
                let name = ["alpha__one", "beta__two"][i % 2];
                assert_eq!(host.resolve(name).await.unwrap().name, name);
                let hits = host.search(name, SearchOptions::default()).await.unwrap();
                assert!(hits.iter().all(|(e, _)| e.tool.server != "gamma"));
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(host.builds(), (2, 2));
    assert!(host.resolve("gamma__three").await.is_err());
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_name_comes_from_the_naming_guest() {
    let dirs = ConfigDirs::new();
    let s = servers();
    let config = json!({
        "mcpServers": {
            "github": {
                "command": "/nonexistent/never-started",
                "excludeTools": ["delete_repo_on_github"],
                "directTools": ["list_issues_on_github"]
            },
            "gitlab": {"command": "/nonexistent/never-started", "includeTools": ["merge_on_gitlab"]},
            "time": {"command": s.python_bin("mcp-server-time"), "args": ["--local-timezone", "UTC"]}
        },
        "settings": {"plugins": {"naming": suffix_namer()}}
    });
    write_config(
        &dirs,
        &config,
        &[
            (
                "github",
                &["create_issue", "list_issues", "delete_repo"],
                &["summarize"],
            ),
            ("gitlab", &["merge", "close"], &[]),
        ],
    );
    let host = host_with_config(&dirs, |o| o.compile_cache = cache()).await;
    assert_eq!(
        entry_names(&host).await,
        [
            "create_issue_on_github",
            "list_issues_on_github",
            "merge_on_gitlab"
        ],
        "excludeTools and includeTools select by the guest's names"
    );
    let direct = host.direct_entries().await.unwrap();
    let direct: Vec<&str> = direct.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(direct, ["list_issues_on_github"]);
    let prompts: Vec<String> = host
        .prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(prompts, ["summarize_on_github"]);
    let github = host
        .status()
        .into_iter()
        .find(|s| s.name == "github")
        .unwrap();
    assert_eq!(github.tool_count, 2, "counts are of exposed tools");

    // The time server's tools are not known: the guest's name for one of them
    // says which server to connect.
    assert!(!host.servers().has_tools("time"));
    let entry = host.resolve("get_current_time_on_time").await.unwrap();
    assert_eq!(
        (entry.tool.server.as_str(), entry.tool.name.as_str()),
        ("time", "get_current_time")
    );
    assert!(host.servers().has_tools("time"));
    assert!(
        host.servers().failure("github").is_none() && host.servers().failure("gitlab").is_none(),
        "only the named server was tried"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_prefixes_follow_the_default_guest() {
    let dirs = ConfigDirs::new();
    let s = servers();
    let time = |exclude: &[&str]| json!({"command": s.python_bin("mcp-server-time"), "args": ["--local-timezone", "UTC"], "excludeTools": exclude});
    let config = json!({
        "mcpServers": {"time_mcp": time(&["time__convert_time"])},
        "settings": {"toolPrefix": "short"}
    });
    dirs.user(&config.to_string());
    let host = host_with_config(&dirs, |_| {}).await;
    // `time_mcp` is `time` in short mode: the name finds the server before
    // any of its tools are known, and the exclusion uses the same name.
    let entry = host.resolve("time__get_current_time").await.unwrap();
    assert_eq!(entry.tool.server, "time_mcp");
    let names: Vec<String> = entry_names(&host).await;
    assert_eq!(names, ["time__get_current_time"]);
    host.shutdown().await;
}
