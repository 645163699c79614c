//! Real MCP servers over every transport: server-everything over stdio,
//! Streamable HTTP and legacy SSE; filesystem, memory, time and git.

use crate::common::{ConfigDirs, entry_names, host};
use crate::servers::{Background, all_gone, servers};
use mcpw::catalog::{ConnectionState, ToolKind};
use mcpw::present::Content;
use mcpw::upstream::TransportKind;
use serde_json::{Map, Value, json};
use std::time::Duration;

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

/// How many tools and how many resource tools.
fn kinds(entries: &[mcpw::catalog::Entry]) -> (usize, usize) {
    let tools = entries
        .iter()
        .filter(|e| e.tool.kind == ToolKind::Tool)
        .count();
    (tools, entries.len() - tools)
}

fn text(outcome: &mcpw::host::CallOutcome) -> String {
    outcome
        .content
        .iter()
        .filter_map(|c| {
            if let Content::Text { text } = c {
                Some(text.as_str())
            } else {
                None
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_stdio() {
    let s = servers();
    let d = ConfigDirs::new();
    let host = host(
        &d,
        json!({"everything": {"command": "node", "args": [s.everything(), "stdio"]}}),
        |_| {},
    )
    .await;
    assert_eq!(
        host.status()[0].state,
        ConnectionState::NotConnected,
        "lazy: nothing connects at start"
    );

    let echo = host
        .call("everything__echo", args(json!({"message": "hello"})))
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: hello");
    assert!(!echo.is_error);
    assert_eq!(host.status()[0].state, ConnectionState::Connected);
    assert_eq!(
        host.servers().transport("everything"),
        Some(TransportKind::Stdio)
    );

    let entries = host.entries().await.unwrap();
    let (tools, resources) = kinds(&entries);
    assert_eq!(
        (tools, resources),
        (13, 7),
        "every tool and resource page was listed"
    );

    let sum = host
        .call("everything__get-sum", args(json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert!(text(&sum).contains('5'), "{}", text(&sum));

    let image = host.call("everything__get-tiny-image", None).await.unwrap();
    assert!(
        image
            .content
            .iter()
            .any(|c| matches!(c, Content::Image { mime_type, .. } if mime_type == "image/png"))
    );

    let structured = host
        .call(
            "everything__get-structured-content",
            args(json!({"location": "New York"})),
        )
        .await
        .unwrap();
    assert!(
        structured.structured_content.is_some(),
        "structuredContent is kept"
    );

    let doc = entries
        .iter()
        .find(|e| e.tool.kind == ToolKind::Resource)
        .unwrap()
        .name
        .clone();
    let read = host.call(&doc, None).await.unwrap();
    assert!(
        read.resource_uri.is_some() && !text(&read).is_empty(),
        "a resource tool reads its resource"
    );

    let links = host
        .call("everything__get-resource-links", args(json!({"count": 2})))
        .await
        .unwrap();
    assert!(text(&links).contains("[Resource Link:"), "{}", text(&links));

    let bad = host
        .call("everything__echo", args(json!({})))
        .await
        .unwrap();
    assert!(bad.is_error, "a tool error is a result, not a failure");
    let msg = text(&bad);
    assert!(
        msg.contains("Expected parameters:") && msg.contains("message (string) *required*"),
        "{msg}"
    );

    let pid = host.servers().pid("everything").unwrap();
    host.shutdown().await;
    assert!(
        all_gone(&[pid], Duration::from_secs(5)),
        "the server process is gone after shutdown"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_streamable_http() {
    let s = servers();
    let server = Background::node(&[&s.everything(), "streamableHttp"], &[]);
    let d = ConfigDirs::new();
    let host = host(&d, json!({"remote": {"url": server.url("/mcp")}}), |_| {}).await;
    let echo = host
        .call("remote__echo", args(json!({"message": "via http"})))
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: via http");
    assert_eq!(
        host.servers().transport("remote"),
        Some(TransportKind::StreamableHttp)
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_legacy_sse_by_fallback_and_by_type() {
    let s = servers();
    let server = Background::node(&[&s.everything(), "sse"], &[]);
    let d = ConfigDirs::new();
    let host = host(
        &d,
        json!({"auto": {"url": server.url("/sse")}, "explicit": {"type": "sse", "url": server.url("/sse")}}),
        |_| {},
    )
    .await;
    for name in ["auto", "explicit"] {
        let echo = host
            .call(&format!("{name}__echo"), args(json!({"message": name})))
            .await
            .unwrap();
        assert_eq!(text(&echo), format!("Echo: {name}"));
        assert_eq!(
            host.servers().transport(name),
            Some(TransportKind::Sse),
            "{name}"
        );
    }
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn filesystem_memory_time_and_git() {
    let s = servers();
    let d = ConfigDirs::new();
    let work = d.root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "remember the milk").unwrap();
    let repo = d.root.path().join("repo");
    let git = |a: &[&str]| {
        assert!(
            std::process::Command::new("git")
                .args(a)
                .current_dir(&repo)
                .output()
                .unwrap()
                .status
                .success()
        )
    };
    std::fs::create_dir_all(&repo).unwrap();
    git(&["init", "-q"]);
    std::fs::write(repo.join("new.txt"), "x").unwrap();
    let host = host(
        &d,
        json!({
            "fs": {"command": "node", "args": [s.filesystem(), work.display().to_string()]},
            "memory": {"command": "node", "args": [s.memory()], "env": {"MEMORY_FILE_PATH": d.root.path().join("memory.json").display().to_string()}},
            "time": {"command": s.python_bin("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
            "git": {"command": s.python_bin("mcp-server-git")}
        }),
        |_| {},
    )
    .await;
    let file = host
        .call(
            "fs__read_text_file",
            args(json!({"path": work.join("notes.txt").display().to_string()})),
        )
        .await
        .unwrap();
    assert_eq!(text(&file), "remember the milk");
    host.call("memory__create_entities", args(json!({"entities": [{"name": "mcpw", "entityType": "project", "observations": ["written in Rust"]}]})))
        .await
        .unwrap();
    let graph = host.call("memory__read_graph", None).await.unwrap();
    assert!(text(&graph).contains("written in Rust"), "{}", text(&graph));
    let now = host
        .call("time__get_current_time", args(json!({"timezone": "UTC"})))
        .await
        .unwrap();
    assert!(text(&now).contains("UTC"), "{}", text(&now));
    let status = host
        .call(
            "git__git_status",
            args(json!({"repo_path": repo.display().to_string()})),
        )
        .await
        .unwrap();
    assert!(text(&status).contains("new.txt"), "{}", text(&status));
    assert_eq!(
        host.status()
            .iter()
            .filter(|s| s.state == ConnectionState::Connected)
            .count(),
        4
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn npx_servers_run_their_binary_directly() {
    servers();
    let npm_cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-servers/npm-cache");
    let mut d = ConfigDirs::new();
    d.env = d
        .env
        .clone()
        .with("npm_config_cache", npm_cache.display().to_string());
    let spec = "@modelcontextprotocol/server-everything@2026.8.31";
    let host = host(
        &d,
        json!({"e": {"command": "npx", "args": ["-y", spec, "stdio"]}}),
        |_| {},
    )
    .await;
    let echo = host
        .call("e__echo", args(json!({"message": "no npm parent"})))
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: no npm parent");
    let pid = host.servers().pid("e").unwrap();
    let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap();
    let argv: Vec<&str> = cmdline.split('\0').collect();
    assert_eq!(argv[0], "node", "no npm parent process: {argv:?}");
    assert!(
        argv[1].ends_with("server-everything/dist/index.js") && argv[2] == "stdio",
        "{argv:?}"
    );
    let resolved = std::fs::read_to_string(d.home().join(".cache/mcpw/npx.json")).unwrap();
    assert!(resolved.contains(spec), "the resolution is remembered");
    host.shutdown().await;
}

/// A first `npx` install has a limit of its own: an install slower than the
/// server's whole `startupTimeoutMs` still ends in a running server. (npm
/// is a stand-in on PATH that takes 4 s, then leaves the package in its npx
/// cache, as `npm exec` does.)
#[tokio::test(flavor = "multi_thread")]
async fn a_first_npx_install_does_not_count_against_the_startup_timeout() {
    let s = servers();
    let mut d = ConfigDirs::new();
    let shim = d.root.path().join("shim");
    std::fs::create_dir_all(&shim).unwrap();
    let npm = shim.join("npm");
    std::fs::write(
        &npm,
        format!(
            r#"#!/bin/sh
sleep 4
dir="$npm_config_cache/_npx/slow"
mkdir -p "$dir/node_modules/slow-server"
echo '{{"_npx":{{"packages":["slow-server"]}}}}' > "$dir/package.json"
echo '{{"name":"slow-server","bin":"server.mjs"}}' > "$dir/node_modules/slow-server/package.json"
ln -s "{}" "$dir/node_modules/slow-server/server.mjs"
"#,
            s.misbehave()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&npm, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", shim.display(), std::env::var("PATH").unwrap());
    d.env = d.env.clone().with("PATH", path).with(
        "npm_config_cache",
        d.root.path().join("npm-cache").display().to_string(),
    );
    let host = host(
        &d,
        json!({"slow": {"command": "npx", "args": ["-y", "slow-server", "ok"], "startupTimeoutMs": 3000}}),
        |_| {},
    )
    .await;
    host.connect("slow")
        .await
        .expect("connected after the slow install");
    let pid = host.servers().pid("slow").unwrap();
    let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(cmdline.contains("misbehave.mjs"), "{cmdline:?}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_page_of_tools_and_resources_is_listed() {
    let s = servers();
    let d = ConfigDirs::new();
    let host = host(
        &d,
        json!({"p": {"command": "node", "args": [s.misbehave(), "paged"]}}),
        |_| {},
    )
    .await;
    host.connect("p").await.unwrap();
    let entries = host.entries().await.unwrap();
    let (tools, resources) = kinds(&entries);
    assert_eq!(
        (tools, resources),
        (10, 5),
        "four pages of tools, two of resources"
    );
    assert_eq!(text(&host.call("p__tool_9", None).await.unwrap()), "tool_9");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_from_commands_reach_the_server_and_nothing_else() {
    let s = servers();
    let mut d = ConfigDirs::new();
    // Only the config text decides what runs, never a variable's value.
    d.env = d.env.clone().with("BANG", "!echo injected");
    let host = host(
        &d,
        json!({
            "e": {"command": "node", "args": [s.everything(), "stdio"],
                  "env": {"FROM_COMMAND": "!printf '  s3cr3t-from-cmd  '", "LITERAL_BANG": "!!not-run",
                          "FROM_VAR": "${BANG}"}},
            "broken": {"command": "node", "args": [s.everything(), "stdio"], "env": {"K": "!echo leaked; exit 7"}}
        }),
        |_| {},
    )
    .await;
    let env = text(&host.call("e__get-env", None).await.unwrap());
    assert!(
        env.contains("s3cr3t-from-cmd") && !env.contains("  s3cr3t"),
        "trimmed secret reached the server"
    );
    assert!(env.contains("!not-run"), "!! is a literal !");
    assert!(
        env.contains("!echo injected") && !env.contains("\"injected"),
        "a variable's value is data: {env}"
    );
    let err = host.connect("broken").await.unwrap_err().to_string();
    assert!(
        err.contains("env.K") && err.contains("exit status: 7"),
        "{err}"
    );
    assert!(
        !err.contains("leaked"),
        "the command's output is never shown: {err}"
    );
    assert_eq!(
        host.servers().pid("broken"),
        None,
        "the server was not started"
    );
    let status = format!("{:?}", host.status());
    assert!(!status.contains("s3cr3t") && !status.contains("leaked"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn excluded_tools_and_unexposed_resources_are_hidden() {
    let s = servers();
    let d = ConfigDirs::new();
    let host = host(
        &d,
        json!({
            "a": {"command": "node", "args": [s.everything(), "stdio"], "excludeTools": ["echo", "a__get-sum", "get_architecture_md"]},
            "b": {"command": "node", "args": [s.everything(), "stdio"], "exposeResources": false}
        }),
        |_| {},
    )
    .await;
    host.connect("a").await.unwrap();
    host.connect("b").await.unwrap();
    let names: Vec<String> = entry_names(&host).await;
    for hidden in ["a__echo", "a__get-sum", "a__get_architecture_md"] {
        assert!(!names.contains(&hidden.to_string()), "{hidden} is excluded");
    }
    assert!(
        names.contains(&"a__get-tiny-image".to_string())
            && names.contains(&"a__get_features_md".to_string())
    );
    assert!(names.contains(&"b__echo".to_string()));
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("b__get_") && n.ends_with("_md")),
        "b exposes no resources"
    );
    host.shutdown().await;
}

/// Each server gets the newest revision it speaks: the stateless 2026-07-28
/// one, opened with `server/discover`, where it can (the Python SDK's servers),
/// `initialize` where not (the TypeScript SDK's); a server the cache knows to
/// be of the `initialize` era is not probed again.
#[tokio::test(flavor = "multi_thread")]
async fn each_server_gets_the_newest_revision_it_speaks() {
    let s = servers();
    let d = ConfigDirs::new();
    let methods = d.root.path().join("methods");
    let config = json!({
        "time": {"command": s.python_bin("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "legacy": {"command": "node", "args": [s.misbehave(), "ok"], "env": {"METHODS_FILE": methods.display().to_string()}}
    });
    let received = || -> Vec<String> {
        std::fs::read_to_string(&methods)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    };
    let version = |host: &mcpw::host::Host, name: &str| {
        host.status()
            .into_iter()
            .find(|st| st.name == name)
            .and_then(|st| st.protocol_version)
    };

    let first = host(&d, config.clone(), |_| {}).await;
    let now = first
        .call("time__get_current_time", args(json!({"timezone": "UTC"})))
        .await
        .unwrap();
    assert!(text(&now).contains("UTC"), "{}", text(&now));
    let echo = first
        .call("legacy__echo", args(json!({"message": "old"})))
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: old");
    assert_eq!(version(&first, "time").as_deref(), Some("2026-07-28"));
    let legacy = version(&first, "legacy").unwrap();
    assert!(legacy.as_str() < "2026-07-28", "{legacy}");
    assert_eq!(
        received()[..2],
        ["server/discover", "initialize"],
        "probed, then initialized"
    );
    first.shutdown().await;

    // Another process with the same cache: `initialize` straight away.
    std::fs::remove_file(&methods).unwrap();
    let second = host(&d, config, |_| {}).await;
    assert_eq!(
        version(&second, "legacy"),
        Some(legacy.clone()),
        "known from the cache"
    );
    second
        .call("legacy__echo", args(json!({"message": "again"})))
        .await
        .unwrap();
    let again = received();
    assert_eq!(again.first().map(String::as_str), Some("initialize"));
    assert!(!again.iter().any(|m| m == "server/discover"), "{again:?}");
    // An explicit connect probes afresh (the server may have been upgraded).
    std::fs::remove_file(&methods).unwrap();
    second.connect("legacy").await.unwrap();
    assert_eq!(received()[..2], ["server/discover", "initialize"]);
    second.shutdown().await;
}
