//! Call latency and start-up benchmarks (`cargo bench -p mcpw --bench calls`).
//!
//! 1. p50/p99 of sequential `echo` calls to server-everything over stdio, through
//!    mcpw's call path (`Host::call`) and through a bare rmcp client, side by side
//!    in one run.
//! 2. The same through `mcpw serve`, measured by the official TypeScript SDK
//!    client: directly to server-everything, through `mcpw serve --exposure
//!    direct`, and through the `mcp` proxy tool, side by side in one run.
//! 3. Wall time of `mcpw tools` with a warm metadata cache of 100 servers (none is
//!    started).
//!
//! `BENCH_CALLS` sets the number of calls (default 1000).

use mcpw::cache::{self, MetadataCache};
use mcpw::config::{self, ConfigSources};
use mcpw::host::{Host, HostOptions};
use mcpw::paths::Environment;
use mcpw_test_support::servers::{Servers, servers as installed};
use mcpw_test_support::stats::percentile;
use mcpw_test_support::workspace;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use std::time::{Duration, Instant};

/// The test servers, installed on first use.
fn servers() -> &'static Servers {
    installed(env!("CARGO_TARGET_TMPDIR"))
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<28} n={:<5} p50 {:>7.3} ms   p99 {:>7.3} ms   mean {:>7.3} ms",
        samples.len(),
        ms(percentile(&samples, 0.50)),
        ms(percentile(&samples, 0.99)),
        ms(samples.iter().sum::<Duration>()) / samples.len() as f64
    );
}

async fn bare_rmcp(everything: &str, n: usize) -> Vec<Duration> {
    let mut cmd = tokio::process::Command::new("node");
    cmd.args([everything, "stdio"]);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let args = json!({"message": "ping"}).as_object().cloned().unwrap();
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(args.clone()))
            .await
            .unwrap();
        samples.push(t.elapsed());
    }
    client.cancel().await.unwrap();
    samples
}

async fn through_mcpw(everything: &str, n: usize, home: &std::path::Path) -> Vec<Duration> {
    let file = home.join("calls.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {"e": {"command": "node", "args": [everything, "stdio"]}}})
            .to_string(),
    )
    .unwrap();
    let env = Environment::from_process()
        .with("HOME", home.display().to_string())
        .with("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB.to_string());
    let cfg = config::load(&ConfigSources {
        user_value: None,
        user_file: Some(file),
        project_dir: None,
        env: env.clone(),
    });
    let mut options = HostOptions::for_env(&env);
    options.maintenance = false;
    let host = Host::start(cfg, env, options).await.unwrap();
    let args = json!({"message": "ping"}).as_object().cloned();
    host.call("e__echo", args.clone()).await.unwrap(); // connect outside the measurement
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let out = host.call("e__echo", args.clone()).await.unwrap();
        samples.push(t.elapsed());
        assert!(!out.is_error);
    }
    host.shutdown().await;
    samples
}

/// A config of 100 servers and a warm cache for them, then `mcpw tools` timed.
fn warm_start(home: &std::path::Path) -> Vec<Duration> {
    let servers: serde_json::Map<String, serde_json::Value> = (0..100)
        .map(|i| {
            (
                format!("server-{i:03}"),
                json!({"command": "/nonexistent/never-started", "args": [format!("--id={i}")]}),
            )
        })
        .collect();
    let dir = home.join(".config/mcpw");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    let env = Environment::from_process()
        .with("HOME", home.display().to_string())
        .with("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB.to_string())
        .with(
            "XDG_CONFIG_HOME",
            dir.parent().unwrap().display().to_string(),
        );
    let cfg = config::load(&ConfigSources {
        user_value: None,
        user_file: Some(dir.join("mcp.json")),
        project_dir: None,
        env: env.clone(),
    });
    let catalog =
        mcpw::catalog::load_catalog(&workspace().join("tests/fixtures/catalog.json")).unwrap();
    let metadata = MetadataCache::new(home.join(".cache/mcpw/metadata.json"));
    let entries = cfg
        .servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            // 13 tools per server, taken from the real catalog: 1,300 tools in all.
            let tools = (0..13)
                .map(|k| {
                    let t = &catalog[(i * 13 + k) % catalog.len()];
                    let t = json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema});
                    serde_json::value::to_raw_value(&t).unwrap()
                })
                .collect();
            (s.name.clone(), Some(cache::Entry { config_hash: cache::config_hash(&s.raw), tools, resources: vec![], resource_templates: vec![], prompts: vec![], skills: vec![], directory_read: false, cached_at: mcpw::clock::now_ms(), protocol_version: None }))
        })
        .collect();
    metadata.update(entries).unwrap();
    let run = || {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpw"))
            .args(["tools", "--json"])
            .env("HOME", home)
            .env("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("MCPW_CONFIG")
            .current_dir(home)
            .output()
            .unwrap();
        let elapsed = t.elapsed();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            tools.as_array().unwrap().len(),
            1300,
            "every tool known from the cache"
        );
        elapsed
    };
    run(); // compiles and caches the default guest
    (0..20).map(|_| run()).collect()
}

/// p50/p99 of `echo` measured inside the TypeScript SDK client.
fn sdk_client(
    connect: serde_json::Value,
    tool: &str,
    args: serde_json::Value,
    n: usize,
) -> (f64, f64) {
    let plan = json!({"connect": connect, "steps": [{"op": "bench", "name": tool, "arguments": args, "n": n}]});
    let out = std::process::Command::new("node")
        .arg(servers().client())
        .arg(plan.to_string())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let r = &v["results"][0];
    assert!(r["p50"].is_number(), "{v}");
    (r["p50"].as_f64().unwrap(), r["p99"].as_f64().unwrap())
}

fn through_serve(everything: &str, n: usize, home: &std::path::Path) {
    let dir = home.join("serve");
    std::fs::create_dir_all(dir.join(".config/mcpw")).unwrap();
    std::fs::write(
        dir.join(".config/mcpw/mcp.json"),
        json!({"mcpServers": {"e": {"command": "node", "args": [everything, "stdio"]}}})
            .to_string(),
    )
    .unwrap();
    let env = json!({"HF_ENDPOINT": mcpw_test_support::OFFLINE_HUB, "HOME": dir.display().to_string(), "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": "", "MCPW_CONFIG": ""});
    let serve = |exposure: &str| json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", exposure], "env": env});
    let direct = json!({"command": "node", "args": [everything, "stdio"]});
    let echo = json!({"message": "ping"});
    let rows = [
        (
            "SDK client → server",
            sdk_client(direct, "echo", echo.clone(), n),
        ),
        (
            "SDK client → mcpw serve (direct)",
            sdk_client(serve("direct"), "e__echo", echo.clone(), n),
        ),
        (
            "SDK client → mcpw serve (mcp proxy)",
            sdk_client(
                serve("proxy"),
                "mcp",
                json!({"tool": "e__echo", "args": echo}),
                n,
            ),
        ),
    ];
    for (name, (p50, p99)) in rows {
        println!("{name:<36} n={n:<5} p50 {p50:>7.3} ms   p99 {p99:>7.3} ms");
    }
}

fn main() {
    let n: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let everything = servers().everything();
    let home = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("sequential echo calls to server-everything (stdio), {n} each, same run:");
    // Interleave the two measurements twice, so machine noise hits both alike.
    let mut bare = Vec::new();
    let mut mcpw = Vec::new();
    for _ in 0..2 {
        bare.extend(rt.block_on(bare_rmcp(&everything, n / 2)));
        mcpw.extend(rt.block_on(through_mcpw(&everything, n / 2, home.path())));
    }
    report("bare rmcp client", bare);
    report("mcpw Host::call", mcpw);
    println!("\n`echo` measured by the TypeScript SDK client, {n} calls each, same run:");
    through_serve(&everything, n, home.path());
    println!("\n`mcpw tools --json`, 100 servers / 1,300 tools, warm cache, no server started:");
    report("mcpw tools (process)", warm_start(home.path()));
}
