//! Gateway overhead benchmarks (`cargo bench -p mcpw --bench gateway`), each
//! measured beside its baseline in the same run, in alternating rounds so that
//! machine noise hits both alike:
//!
//! 1. Added latency of sequential `echo` calls over stdio (official TypeScript SDK
//!    client → server-everything): direct, through a plain byte relay, through
//!    the smallest rmcp forwarder (rmcp's own floor), through `mcpw serve
//!    --exposure direct`, and through the `mcp` proxy tool.
//! 2. `tools/list` of the gateway in tool-search mode, in-process over an
//!    in-memory transport, with the real 101-server / 1,287-tool catalog in a warm
//!    metadata cache (direct exposure beside it for context).
//! 3. 100 concurrent Streamable HTTP sessions × 10 `echo` calls: `mcpw serve
//!    --http` in front of server-everything (stdio) against server-everything's
//!    own Streamable HTTP mode; mcpw's RSS before and after.
//! 4. Warm start of `mcpw serve` (stdio) to the first `tools/list` answer, per
//!    exposure, with the 1,287-tool warm cache; RSS after it.
//! 5. A 10 MB tool result (`misbehave.mjs ok`, tool `big`): direct, through the
//!    byte relay, through `mcpw serve --exposure direct`.
//! 6. An upstream flooding notifications: `echo` latency during log-message
//!    floods, messages relayed, mcpw's CPU and memory; relists after a flood of
//!    `list_changed`.
//! 7. A server with 5,000 tools: first `tools/list` cold and warm, calls to its
//!    last tool, searches in tool-search and proxy exposure.
//! 8. A team gateway: sessions through haproxy to one replica and to two
//!    sharing Redis; failover when one is killed (needs redis-server and
//!    haproxy, installed from Debian's packages when missing).
//! 9. Added latency over Streamable HTTP: sequential `echo` calls (TypeScript
//!    SDK client) to server-everything's own endpoint and through `mcpw serve
//!    --http` in front of it.
//!
//! `BENCH_CALLS` sets the number of `echo` calls per path and round in row 1
//! (default 500). Every process started carries a tag in its environment; at the
//! end (or on a panic) any tagged process still alive is killed and reported.

#[path = "gateway/forwarder.rs"]
mod forwarder;
#[path = "gateway/http_latency.rs"]
mod http_latency;
#[path = "../../tests/e2e/team/infra.rs"]
#[allow(dead_code)] // the tests use the rest of it
mod infra;
#[path = "gateway/load.rs"]
mod load;
#[path = "../../tests/e2e/servers.rs"]
#[allow(dead_code)] // the tests use the rest of it
mod servers;
#[path = "gateway/team.rs"]
mod team;

#[path = "support/common.rs"]
mod common;

use mcpw::cache::{self, MetadataCache};
use mcpw::config::{self, ConfigSources};
use mcpw::gateway::{Exposure, Gateway, ServeState};
use mcpw::host::{Host, HostOptions};
use mcpw::paths::Environment;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Set when the bench binary runs as the byte relay of rows 1 and 5.
const RELAY_ENV: &str = "MCPW_BENCH_RELAY";
/// Marks every process this run starts (children inherit it), for the final sweep.
const TAG_ENV: &str = "MCPW_BENCH_TAG";

const ROUNDS: usize = 3;
const SDK_CALLS_DEFAULT: usize = 500;
const LIST_CALLS_TOOL_SEARCH: usize = 2000;
/// Fewer for direct exposure: each answer carries all 1,287 tools.
const LIST_CALLS_DIRECT: usize = 400;
const HTTP_SESSIONS: usize = 100;
const HTTP_CALLS_PER_SESSION: usize = 10;
const WARM_START_RUNS: usize = 10;
const BIG_BYTES: usize = 10_000_000;
const BIG_CALLS_PER_ROUND: usize = 8;
/// More rounds than the other rows: 10 MB calls are noisy and few.
const BIG_ROUNDS: usize = 5;
/// Catalog size the fixture is known to have (checked, so a wrong setup fails loudly).
const CATALOG_TOOLS: usize = 1287;

fn main() {
    // Relay mode must win over everything else: the bench re-executes itself.
    if std::env::var_os(RELAY_ENV).is_some() {
        relay_main();
    }
    if std::env::var_os(forwarder::ENV).is_some() {
        forwarder::main();
    }
    let _sweep = Sweep; // kills anything left behind, also when a row panics
    let n_calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SDK_CALLS_DEFAULT);
    let started = Instant::now();
    let everything = servers::servers().everything();
    let misbehave = servers::servers().misbehave();
    let tmp = tempfile::tempdir().expect("a temporary directory for the HOMEs");
    let relay = Relay::pick();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");

    // HOMEs: one config each, so mcpw never lists or starts a server a row does not use.
    let home_e = home_with(
        &tmp.path().join("everything"),
        json!({"e": {"command": "node", "args": [&everything, "stdio"]}}),
    );
    let home_m = home_with(
        &tmp.path().join("misbehave"),
        json!({"m": {"command": "node", "args": [&misbehave, "ok"]}}),
    );
    let home_lists = tmp.path().join("lists");
    let home_lists = home_with(
        &home_lists,
        json!({"m": {"command": "node", "args": [&misbehave, "ok"],
                     "env": {"METHODS_FILE": home_lists.join("methods").display().to_string()}}}),
    );
    let home_many = home_with(
        &tmp.path().join("many"),
        json!({"b": {"command": "node", "args": [&misbehave, "many"],
                     "env": {"TOOLS": load::MANY_TOOLS.to_string()}}}),
    );
    let home_cat = tmp.path().join("catalog");
    let catalog_servers = write_catalog_home(&home_cat);

    println!("mcpw gateway benchmarks (byte relay: {})", relay.describe());
    println!(
        "machine: {} cores; every row measures mcpw and its baseline in the same run\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // `BENCH_ROWS=1,4` runs only those rows.
    let rows = std::env::var("BENCH_ROWS").unwrap_or_default();
    let run = |row: &str| rows.is_empty() || rows.split(',').any(|r| r.trim() == row);
    let skipped = || "| (skipped) |".to_string();
    let r1 = if run("1") {
        row1_stdio_latency(&everything, &home_e, &relay, n_calls)
    } else {
        skipped()
    };
    let r2 = if run("2") {
        rt.block_on(row2_tools_list(&home_cat))
    } else {
        skipped()
    };
    let r3 = if run("3") {
        rt.block_on(row3_http_load(&everything, &home_e))
    } else {
        skipped()
    };
    let r4 = if run("4") {
        rt.block_on(row4_warm_start(&home_cat, catalog_servers))
    } else {
        skipped()
    };
    let r5 = if run("5") {
        row5_big_result(&misbehave, &home_m, &relay)
    } else {
        skipped()
    };
    let r6 = if run("6") {
        rt.block_on(load::row6_flood(&misbehave, &home_m, &home_lists))
    } else {
        skipped()
    };
    let r7 = if run("7") {
        rt.block_on(load::row7_many_tools(&misbehave, &home_many))
    } else {
        skipped()
    };
    let r8 = if run("8") {
        rt.block_on(team::row8_team(&misbehave, tmp.path()))
    } else {
        skipped()
    };
    let r9 = if run("9") {
        http_latency::row9_http_latency(&everything, tmp.path())
    } else {
        skipped()
    };
    drop(rt);
    if std::env::var_os("BENCH_KEEP").is_some() {
        println!("(homes kept in {})", tmp.keep().display());
    }

    println!("\n## Summary\n");
    println!("| # | Measurement | mcpw | Baseline | mcpw vs baseline |");
    println!("|---|---|---|---|---|");
    println!("{r1}\n{r2}\n{r3}\n{r4}\n{r5}\n{r6}\n{r7}\n{r8}\n{r9}");
    println!(
        "\n(total bench time {:.0} s; relay: {})",
        started.elapsed().as_secs_f64(),
        relay.describe()
    );
}

// ---------------------------------------------------------------------------
// Statistics and formatting

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    assert!(!sorted.is_empty(), "percentile of no samples");
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

// ---------------------------------------------------------------------------
// Processes

fn tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| format!("{}-{}", std::process::id(), mcpw::clock::now_ms()))
}

/// A value from /proc/<pid>/status in kB (`VmRSS`, `VmHWM`), 0 if unreadable.
fn proc_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Tagged processes still alive (other than this one).
fn tagged_pids() -> Vec<i32> {
    let needle = format!("{TAG_ENV}={}", tag());
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}

/// At the end of the run: kills whatever this run started that is still alive.
struct Sweep;

impl Drop for Sweep {
    fn drop(&mut self) {
        // Give exiting processes a moment to go on their own.
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut left = tagged_pids();
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            left = tagged_pids();
        }
        for pid in &left {
            // SAFETY: kill only sends a signal, to a process this run started.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        if left.is_empty() {
            println!("(no process of this run outlived it)");
        } else {
            println!(
                "WARNING: killed {} leftover process(es) of this run: {left:?}",
                left.len()
            );
        }
    }
}

/// A background process: SIGTERM on drop (mcpw then kills its servers), SIGKILL
/// if it has not exited after 5 s.
struct Proc {
    child: Child,
    what: String,
    stderr: Option<PathBuf>,
}

impl Proc {
    fn spawn(mut cmd: Command, what: &str, stderr: Option<PathBuf>) -> Proc {
        cmd.env(TAG_ENV, tag())
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        match &stderr {
            Some(p) => cmd.stderr(std::fs::File::create(p).expect("a stderr file")),
            None => cmd.stderr(Stdio::null()),
        };
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        Proc {
            child,
            what: what.into(),
            stderr,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `port` on loopback accepts connections; panics (with the
    /// process's stderr) if it exits or takes longer than 60 s.
    fn wait_for_port(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited ({status}) before listening on port {port}:\n{}",
                    self.what,
                    self.stderr_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} did not listen on port {port} within 60 s:\n{}",
                self.what,
                self.stderr_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stderr_text(&self) -> String {
        self.stderr
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // SAFETY: kill only sends a signal to our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a command to completion with a deadline; panics with its stderr on a timeout.
fn run_with_timeout(mut cmd: Command, what: &str, timeout: Duration) -> std::process::Output {
    cmd.env(TAG_ENV, tag())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for a child") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            panic!(
                "{what} took longer than {timeout:?}; killed. stderr:\n{}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

// ---------------------------------------------------------------------------
// The byte relay (the baseline for "a process in the middle")

/// Relay mode: `<bench> program args...` with `MCPW_BENCH_RELAY` set spawns the
/// program and copies bytes both ways, nothing else.
fn relay_main() -> ! {
    let mut args = std::env::args_os().skip(1);
    let program = args.next().expect("relay mode needs a command to run");
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_remove(RELAY_ENV)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // The server must not outlive the relay if the client kills it.
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("relay: cannot start the server");
    let mut to_child = child.stdin.take().expect("piped stdin");
    let mut from_child = child.stdout.take().expect("piped stdout");
    // Closing the child's stdin when ours ends lets the server exit as it would.
    std::thread::spawn(move || pump(&mut std::io::stdin().lock(), &mut to_child));
    let out = std::thread::spawn(move || pump(&mut from_child, &mut std::io::stdout().lock()));
    let status = child.wait().expect("relay: waiting for the server");
    let _ = out.join();
    std::process::exit(status.code().unwrap_or(1));
}

/// std::io::copy with a flush after every chunk, so nothing waits in a buffer.
fn pump(from: &mut impl Read, to: &mut impl Write) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
            return;
        }
    }
}

enum Relay {
    Socat,
    SelfExec(PathBuf),
}

impl Relay {
    fn pick() -> Relay {
        let socat = Command::new("socat")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if socat {
            Relay::Socat
        } else {
            Relay::SelfExec(std::env::current_exe().expect("the bench's own path"))
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Relay::Socat => "socat STDIO EXEC",
            Relay::SelfExec(_) => "built-in (bench re-executed as a 2-thread stdin/stdout copier)",
        }
    }

    /// A client.mjs `connect` that runs `command` behind the relay.
    fn connect(&self, command: &[&str]) -> Value {
        match self {
            Relay::Socat => {
                // socat splits EXEC on spaces and treats , : ! " ' \ specially.
                assert!(
                    command
                        .iter()
                        .all(|w| !w.contains([' ', ',', ':', '!', '"', '\'', '\\'])),
                    "a path socat cannot take in EXEC: {command:?} (uninstall socat or move the workspace)"
                );
                json!({"command": "socat", "args": ["STDIO", format!("EXEC:{}", command.join(" "))]})
            }
            Relay::SelfExec(exe) => {
                json!({"command": exe, "args": command, "env": {RELAY_ENV: "1"}})
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Configs

/// A HOME with `mcpServers` as its user config (`.config/mcpw/mcp.json`).
fn home_with(home: &Path, servers: Value) -> PathBuf {
    let dir = home.join(".config/mcpw");
    std::fs::create_dir_all(&dir).expect("create the config dir");
    std::fs::write(
        dir.join("mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .expect("write the config");
    home.to_path_buf()
}

/// Environment of an mcpw process under `home`, as client.mjs `connect.env` (it
/// merges it into its own): empty XDG variables fall back to HOME.
fn mcpw_env_json(home: &Path) -> Value {
    json!({"HOME": home.display().to_string(), "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": "",
           "XDG_STATE_HOME": "", "MCPW_CONFIG": "", "MCPW_TOKEN": ""})
}

/// `mcpw <args>` finding its config and caches under `home` only (and no project
/// config: it runs in `home`).
fn mcpw_command(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpw"));
    cmd.args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("MCPW_CONFIG")
        .env_remove("MCPW_TOKEN")
        .current_dir(home);
    cmd
}

/// The in-process view of the same HOME (row 2).
fn environment(home: &Path) -> Environment {
    Environment::from_process()
        .with("HOME", home.display().to_string())
        .with(
            "XDG_CONFIG_HOME",
            home.join(".config").display().to_string(),
        )
        .with("XDG_CACHE_HOME", home.join(".cache").display().to_string())
        .with(
            "XDG_STATE_HOME",
            home.join(".local/state").display().to_string(),
        )
}

fn load_config(home: &Path) -> mcpw::config::Config {
    let env = environment(home);
    let cfg = config::load(&ConfigSources {
        user_value: None,
        user_file: Some(home.join(".config/mcpw/mcp.json")),
        project_dir: None,
        env,
    });
    assert!(
        !cfg.has_errors(),
        "the bench config has errors: {:?}",
        cfg.diagnostics
    );
    cfg
}

/// The real catalog (101 servers, 1,287 tools) as servers that are never started,
/// all known from a warm metadata cache. Returns the number of servers.
fn write_catalog_home(home: &Path) -> usize {
    let catalog =
        mcpw::catalog::load_catalog(&common::workspace().join("tests/fixtures/catalog.json"))
            .expect("load tests/fixtures/catalog.json");
    assert_eq!(catalog.len(), CATALOG_TOOLS, "the catalog fixture changed");
    let mut by_server: std::collections::BTreeMap<&str, Vec<Box<serde_json::value::RawValue>>> =
        Default::default();
    for t in &catalog {
        let mut tool =
            json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema});
        if let Some(title) = &t.title {
            tool["title"] = json!(title);
        }
        if let Some(a) = &t.annotations {
            tool["annotations"] = a.clone();
        }
        let tool = serde_json::value::to_raw_value(&tool).expect("a tool is JSON");
        by_server.entry(&t.server).or_default().push(tool);
    }
    let servers: serde_json::Map<String, Value> = by_server
        .keys()
        .enumerate()
        .map(|(i, name)| {
            (
                name.to_string(),
                json!({"command": "/nonexistent/never-started", "args": [format!("--id={i}")]}),
            )
        })
        .collect();
    home_with(home, Value::Object(servers));
    let cfg = load_config(home);
    assert_eq!(
        cfg.servers.len(),
        by_server.len(),
        "every catalog server is configured"
    );
    let metadata = MetadataCache::new(home.join(".cache/mcpw/metadata.json"));
    let entries = cfg
        .servers
        .iter()
        .map(|s| {
            let entry = cache::Entry {
                config_hash: cache::config_hash(&s.raw),
                tools: by_server[s.name.as_str()].clone(),
                resources: vec![],
                resource_templates: vec![],
                prompts: vec![],
                cached_at: mcpw::clock::now_ms(),
                protocol_version: None,
            };
            (s.name.clone(), Some(entry))
        })
        .collect();
    metadata.update(entries).expect("write the metadata cache");
    by_server.len()
}

// ---------------------------------------------------------------------------
// The TypeScript SDK client (rows 1 and 5)

struct SdkPath {
    name: &'static str,
    connect: Value,
    tool: &'static str,
    args: Value,
    /// One call before the measured ones (mcpw connects its server lazily).
    warm_args: Value,
}

#[derive(Clone, Copy)]
struct SdkStats {
    p50: f64,
    p99: f64,
}

/// p50/p99 (ms) of `n` sequential calls measured inside client.mjs.
fn sdk_bench(path: &SdkPath, n: usize, cwd: &Path) -> SdkStats {
    let plan = json!({"connect": path.connect, "steps": [
        {"op": "callTool", "name": path.tool, "arguments": path.warm_args},
        {"op": "bench", "name": path.tool, "arguments": path.args, "n": n},
    ]});
    let mut cmd = Command::new("node");
    cmd.arg(servers::servers().client())
        .arg(plan.to_string())
        .current_dir(cwd);
    let what = format!("TS SDK client on path \"{}\"", path.name);
    let out = run_with_timeout(cmd, &what, Duration::from_secs(300));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: no JSON on stdout ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let warm = &v["results"][0];
    assert!(
        warm["isError"] != json!(true),
        "{what}: the warm-up call failed: {warm}"
    );
    let r = &v["results"][1];
    let p50 = r["p50"].as_f64();
    let p99 = r["p99"].as_f64();
    match (p50, p99) {
        (Some(p50), Some(p99)) => SdkStats { p50, p99 },
        _ => panic!("{what} failed: {v}"),
    }
}

/// `rounds` rounds over every path, the order rotated each round.
fn sdk_rounds(paths: &[SdkPath], n: usize, rounds: usize, cwd: &Path) -> Vec<Vec<SdkStats>> {
    let mut stats = vec![Vec::new(); paths.len()];
    for round in 0..rounds {
        for k in 0..paths.len() {
            let i = (k + round) % paths.len();
            stats[i].push(sdk_bench(&paths[i], n, cwd));
        }
    }
    stats
}

// ---------------------------------------------------------------------------
// Row 1: added latency over direct, stdio

fn row1_stdio_latency(everything: &str, home: &Path, relay: &Relay, n: usize) -> String {
    println!(
        "## 1. Sequential `echo` over stdio, TS SDK client, {n} calls × {ROUNDS} alternating rounds"
    );
    let echo = json!({"message": "ping"});
    let proxied = json!({"tool": "e__echo", "args": echo});
    let serve = |exposure: &str| {
        json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", exposure],
               "env": mcpw_env_json(home)})
    };
    let paths = [
        SdkPath {
            name: "direct",
            connect: json!({"command": "node", "args": [everything, "stdio"]}),
            tool: "echo",
            args: echo.clone(),
            warm_args: echo.clone(),
        },
        SdkPath {
            name: "byte relay",
            connect: relay.connect(&["node", everything, "stdio"]),
            tool: "echo",
            args: echo.clone(),
            warm_args: echo.clone(),
        },
        SdkPath {
            name: "minimal rmcp forwarder",
            connect: json!({"command": std::env::current_exe().expect("the bench's own path"),
                            "args": ["node", everything, "stdio"], "env": {forwarder::ENV: "1"}}),
            tool: "echo",
            args: echo.clone(),
            warm_args: echo.clone(),
        },
        SdkPath {
            name: "mcpw serve --exposure direct",
            connect: serve("direct"),
            tool: "e__echo",
            args: echo.clone(),
            warm_args: echo.clone(),
        },
        SdkPath {
            name: "mcpw serve (proxy, `mcp` tool)",
            connect: serve("proxy"),
            tool: "mcp",
            args: proxied.clone(),
            warm_args: proxied,
        },
    ];
    let stats = sdk_rounds(&paths, n, ROUNDS, home);
    // Added latency per round (same round = same machine state), then the median.
    let added = |i: usize| {
        median(
            &(0..ROUNDS)
                .map(|r| stats[i][r].p50 - stats[0][r].p50)
                .collect::<Vec<_>>(),
        )
    };
    println!(
        "{:<34} {:>9} {:>9} {:>14}   p50 per round (ms)",
        "path", "p50 ms", "p99 ms", "added p50 ms"
    );
    for (i, p) in paths.iter().enumerate() {
        let p50 = median(&stats[i].iter().map(|s| s.p50).collect::<Vec<_>>());
        let p99 = median(&stats[i].iter().map(|s| s.p99).collect::<Vec<_>>());
        let add = if i == 0 {
            "—".to_string()
        } else {
            format!("{:+.3}", added(i))
        };
        let rounds: Vec<String> = stats[i].iter().map(|s| format!("{:.3}", s.p50)).collect();
        println!(
            "{:<34} {p50:>9.3} {p99:>9.3} {add:>14}   {}",
            p.name,
            rounds.join(" ")
        );
    }
    let (relay_add, floor_add, direct_add, proxy_add) = (added(1), added(2), added(3), added(4));
    let ratio = |x: f64| {
        if relay_add > 0.0 {
            format!("{:.1}×", x / relay_add)
        } else {
            "n/a (relay added ≤ 0)".into()
        }
    };
    println!(
        "mcpw added p50 = {} (direct exposure), {} (proxy) of the relay's; direct exposure {:+.3} ms beyond the rmcp floor\n",
        ratio(direct_add),
        ratio(proxy_add),
        direct_add - floor_add
    );
    let p = |i: usize, f: fn(&SdkStats) -> f64| median(&stats[i].iter().map(f).collect::<Vec<_>>());
    format!(
        "| 1 | Added latency over direct, stdio `echo`, TS SDK client ({n} calls × {ROUNDS} rounds; direct p50 {:.3} ms) \
         | direct exposure {direct_add:+.3} ms (p50 {:.3} / p99 {:.3} ms); proxy `mcp` {proxy_add:+.3} ms (p50 {:.3} / p99 {:.3} ms) \
         | byte relay {relay_add:+.3} ms (p50 {:.3} / p99 {:.3} ms); minimal rmcp forwarder {floor_add:+.3} ms (p50 {:.3} / p99 {:.3} ms) | {} (direct), {} (proxy) of the relay |",
        p(0, |s| s.p50),
        p(3, |s| s.p50),
        p(3, |s| s.p99),
        p(4, |s| s.p50),
        p(4, |s| s.p99),
        p(1, |s| s.p50),
        p(1, |s| s.p99),
        p(2, |s| s.p50),
        p(2, |s| s.p99),
        ratio(direct_add),
        ratio(proxy_add),
    )
}

// ---------------------------------------------------------------------------
// Row 2: tools/list in-process

/// An rmcp client session with the gateway over an in-memory pipe.
async fn in_memory_session(
    shared: Arc<ServeState>,
) -> (
    RunningService<RoleClient, ()>,
    RunningService<rmcp::RoleServer, Gateway>,
) {
    let (server_half, client_half) = tokio::io::duplex(1 << 20);
    let server = tokio::spawn(Gateway::new(shared).serve(server_half));
    let client = ().serve(client_half).await.expect("rmcp client initialize over duplex");
    let server = server
        .await
        .expect("the gateway session task")
        .expect("gateway initialize over duplex");
    // Every list must be a round trip, whatever cache hint the gateway sends.
    client
        .peer()
        .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
        .await;
    (client, server)
}

async fn list_once(client: &RunningService<RoleClient, ()>) -> (Duration, usize) {
    let t = Instant::now();
    let r = client.list_tools(None).await.expect("tools/list");
    (t.elapsed(), r.tools.len())
}

async fn row2_tools_list(home: &Path) -> String {
    println!(
        "## 2. `tools/list`, in-process over an in-memory transport, 1,287 cached tools, no server started"
    );
    let env = environment(home);
    let mut options = HostOptions::for_env(&env);
    options.maintenance = false;
    options.metadata_cache = Some(home.join(".cache/mcpw/metadata.json"));
    let t = Instant::now();
    let host = Arc::new(
        Host::start(load_config(home), env, options)
            .await
            .expect("Host::start with the catalog config"),
    );
    println!(
        "(Host::start: {:.0} ms, includes compiling the default guest when not cached)",
        ms(t.elapsed())
    );
    let (ts, ts_server) =
        in_memory_session(ServeState::new(host.clone(), Exposure::ToolSearch)).await;
    let (direct, direct_server) =
        in_memory_session(ServeState::new(host.clone(), Exposure::Direct)).await;
    let mut ts_tools = 0;
    let mut direct_tools = 0;
    for _ in 0..5 {
        ts_tools = list_once(&ts).await.1;
        direct_tools = list_once(&direct).await.1;
    }
    assert_eq!(
        direct_tools, CATALOG_TOOLS,
        "direct exposure lists every cached tool"
    );
    // Interleaved blocks, so both exposures see the same machine state.
    let blocks = 8;
    let mut ts_samples = Vec::with_capacity(LIST_CALLS_TOOL_SEARCH);
    let mut direct_samples = Vec::with_capacity(LIST_CALLS_DIRECT);
    for _ in 0..blocks {
        for _ in 0..LIST_CALLS_TOOL_SEARCH / blocks {
            ts_samples.push(list_once(&ts).await.0);
        }
        for _ in 0..LIST_CALLS_DIRECT / blocks {
            direct_samples.push(list_once(&direct).await.0);
        }
    }
    // Server-side: the gateway's answer made and encoded as it is sent, without
    // a transport or a client.
    let session = Gateway::new(ServeState::new(host.clone(), Exposure::ToolSearch));
    let mut server_side = Vec::with_capacity(LIST_CALLS_TOOL_SEARCH);
    for _ in 0..LIST_CALLS_TOOL_SEARCH {
        let t = Instant::now();
        let tools = session.tool_list().await.expect("the tool-search list");
        let bytes = serde_json::to_vec(&rmcp::model::ListToolsResult::with_all_items(tools))
            .expect("an encodable answer");
        server_side.push(t.elapsed());
        assert!(!bytes.is_empty());
    }
    server_side.sort();
    for s in [ts, direct] {
        let _ = s.cancel().await;
    }
    for s in [ts_server, direct_server] {
        let _ = s.cancel().await;
    }
    host.shutdown().await;
    ts_samples.sort();
    direct_samples.sort();
    let line = |name: &str, s: &[Duration], tools: usize| {
        println!(
            "{name:<34} n={:<5} tools={tools:<5} p50 {:>9.1} µs   p99 {:>9.1} µs",
            s.len(),
            us(percentile(s, 0.5)),
            us(percentile(s, 0.99))
        );
    };
    line(
        "tool-search, server-side (made + encoded)",
        &server_side,
        ts_tools,
    );
    line("tool-search exposure (round trip)", &ts_samples, ts_tools);
    line("direct exposure (context)", &direct_samples, direct_tools);
    println!();
    format!(
        "| 2 | `tools/list` in tool-search mode, 101 servers / 1,287 cached tools, {} lists \
         | server-side (answer made and encoded) p50 {:.1} µs / p99 {:.1} µs; round trip through an rmcp client over an in-memory transport p50 {:.1} µs / p99 {:.1} µs (tools listed: {ts_tools}) | direct exposure round trip, {} lists: p50 {:.1} µs / p99 {:.1} µs (tools listed: {direct_tools}) | {:.2}× direct's p50 |",
        ts_samples.len(),
        us(percentile(&server_side, 0.5)),
        us(percentile(&server_side, 0.99)),
        us(percentile(&ts_samples, 0.5)),
        us(percentile(&ts_samples, 0.99)),
        direct_samples.len(),
        us(percentile(&direct_samples, 0.5)),
        us(percentile(&direct_samples, 0.99)),
        us(percentile(&ts_samples, 0.5)) / us(percentile(&direct_samples, 0.5)),
    )
}

// ---------------------------------------------------------------------------
// Row 3: concurrent HTTP sessions

#[derive(Default)]
struct Load {
    latencies: Vec<Duration>,
    errors: usize,
    session_errors: usize,
    first_error: Option<String>,
    calls: usize,
    wall: Duration,
}

impl Load {
    fn merge(&mut self, other: Load) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        self.session_errors += other.session_errors;
        self.first_error = self.first_error.take().or(other.first_error);
        self.calls += other.calls;
        self.wall += other.wall;
    }

    /// Sorts the latencies for percentiles; fails the row if no call succeeded.
    fn settle(&mut self) {
        self.latencies.sort();
        assert!(
            !self.latencies.is_empty(),
            "no call succeeded: {:?}",
            self.first_error
        );
    }

    fn calls_per_s(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }
}

/// One session: initialize, then `calls` sequential calls. Returns what it
/// measured and when its last call finished.
async fn http_session(
    url: String,
    tool: &'static str,
    calls: usize,
    start: Arc<tokio::sync::Barrier>,
) -> (Load, Instant) {
    start.wait().await;
    let mut load = Load {
        calls,
        ..Load::default()
    };
    let transport = StreamableHttpClientTransport::from_uri(url);
    let client = match tokio::time::timeout(Duration::from_secs(60), ().serve(transport)).await {
        Ok(Ok(c)) => c,
        failed => {
            let why = match failed {
                Ok(Err(e)) => format!("initialize: {e}"),
                _ => "initialize: timed out after 60 s".into(),
            };
            load.errors = calls;
            load.session_errors = 1;
            load.first_error = Some(why);
            return (load, Instant::now());
        }
    };
    let args = json!({"message": "ping"})
        .as_object()
        .cloned()
        .expect("an object");
    for _ in 0..calls {
        let params = CallToolRequestParams::new(tool).with_arguments(args.clone());
        let t = Instant::now();
        let failure =
            match tokio::time::timeout(Duration::from_secs(60), client.call_tool(params)).await {
                Ok(Ok(r)) if r.is_error != Some(true) => {
                    load.latencies.push(t.elapsed());
                    continue;
                }
                Ok(Ok(r)) => format!("tool error: {:?}", r.content),
                Ok(Err(e)) => format!("call: {e}"),
                Err(_) => "call: timed out after 60 s".into(),
            };
        load.errors += 1;
        load.first_error.get_or_insert(failure);
    }
    let done = Instant::now();
    let _ = client.cancel().await;
    (load, done)
}

/// `sessions` sessions started together, each making `calls` calls.
async fn http_load(url: &str, tool: &'static str, sessions: usize, calls: usize) -> Load {
    let start = Arc::new(tokio::sync::Barrier::new(sessions + 1));
    let tasks: Vec<_> = (0..sessions)
        .map(|_| tokio::spawn(http_session(url.to_string(), tool, calls, start.clone())))
        .collect();
    start.wait().await;
    let t0 = Instant::now();
    let mut load = Load::default();
    let mut last = t0;
    for t in tasks {
        let (session, done) = t.await.expect("a session task");
        load.merge(session);
        last = last.max(done);
    }
    load.wall = last - t0;
    load
}

/// Waits for a target to answer one whole session (and warms it: mcpw connects
/// its upstream server on the first call).
async fn http_warm_up(url: &str, tool: &'static str, what: &str) {
    let load = http_load(url, tool, 1, 3).await;
    assert!(
        load.errors == 0,
        "{what} did not answer a warm-up session at {url}: {:?}",
        load.first_error
    );
}

async fn row3_http_load(everything: &str, home: &Path) -> String {
    println!(
        "## 3. {HTTP_SESSIONS} concurrent Streamable HTTP sessions × {HTTP_CALLS_PER_SESSION} `echo` calls, {ROUNDS} alternating rounds"
    );
    // mcpw in front of server-everything over stdio.
    let mcpw_port = free_port();
    let addr = format!("127.0.0.1:{mcpw_port}");
    let mut mcpw = Proc::spawn(
        mcpw_command(home, &["serve", "--http", &addr, "--exposure", "direct"]),
        "mcpw serve --http",
        Some(home.join("mcpw-http.stderr")),
    );
    mcpw.wait_for_port(mcpw_port);
    let mcpw_url = format!("http://{addr}/mcp");
    // server-everything's own Streamable HTTP (port from $PORT, path /mcp).
    let se_port = free_port();
    let mut cmd = Command::new("node");
    cmd.args([everything, "streamableHttp"])
        .env("PORT", se_port.to_string())
        .current_dir(home);
    let mut se = Proc::spawn(
        cmd,
        "server-everything streamableHttp",
        Some(home.join("everything-http.stderr")),
    );
    se.wait_for_port(se_port);
    let se_url = format!("http://127.0.0.1:{se_port}/mcp");

    http_warm_up(&mcpw_url, "e__echo", "mcpw").await;
    http_warm_up(&se_url, "echo", "server-everything").await;
    let rss_before = proc_kb(mcpw.pid(), "VmRSS");
    let mut m = Load::default();
    let mut b = Load::default();
    for round in 0..ROUNDS {
        // Alternate which target goes first.
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_mcpw in order {
            if is_mcpw {
                m.merge(
                    http_load(&mcpw_url, "e__echo", HTTP_SESSIONS, HTTP_CALLS_PER_SESSION).await,
                );
            } else {
                b.merge(http_load(&se_url, "echo", HTTP_SESSIONS, HTTP_CALLS_PER_SESSION).await);
            }
        }
    }
    let rss_after = proc_kb(mcpw.pid(), "VmRSS");
    let rss_peak = proc_kb(mcpw.pid(), "VmHWM");
    drop(se);
    drop(mcpw);
    m.settle();
    b.settle();
    let line = |name: &str, l: &Load| {
        println!(
            "{name:<34} calls {:>5}  errors {:>4} (sessions failed {})  p50 {:>8.2} ms  p99 {:>8.2} ms  {:>7.0} calls/s",
            l.calls,
            l.errors,
            l.session_errors,
            ms(percentile(&l.latencies, 0.5)),
            ms(percentile(&l.latencies, 0.99)),
            l.calls_per_s()
        );
        if let Some(e) = &l.first_error {
            println!("{:<34} first error: {e}", "");
        }
    };
    line("server-everything streamableHttp", &b);
    line("mcpw serve --http (direct)", &m);
    println!(
        "mcpw RSS: {:.1} MiB before the load, {:.1} MiB after (peak {:.1} MiB)\n",
        mib(rss_before),
        mib(rss_after),
        mib(rss_peak)
    );
    format!(
        "| 3 | {HTTP_SESSIONS} concurrent HTTP sessions × {HTTP_CALLS_PER_SESSION} `echo` ({ROUNDS} rounds, rmcp client) \
         | `mcpw serve --http --exposure direct` → server-everything stdio: {} errors, p50 {:.2} ms / p99 {:.2} ms, {:.0} calls/s; RSS {:.1} → {:.1} MiB (peak {:.1}) \
         | server-everything streamableHttp: {} errors, p50 {:.2} ms / p99 {:.2} ms, {:.0} calls/s | p50 {:.2}×, throughput {:.2}× |",
        m.errors,
        ms(percentile(&m.latencies, 0.5)),
        ms(percentile(&m.latencies, 0.99)),
        m.calls_per_s(),
        mib(rss_before),
        mib(rss_after),
        mib(rss_peak),
        b.errors,
        ms(percentile(&b.latencies, 0.5)),
        ms(percentile(&b.latencies, 0.99)),
        b.calls_per_s(),
        ms(percentile(&m.latencies, 0.5)) / ms(percentile(&b.latencies, 0.5)),
        m.calls_per_s() / b.calls_per_s(),
    )
}

// ---------------------------------------------------------------------------
// Row 4: warm start

/// Spawn → first `tools/list` answer; then the child's RSS (kB) and the tool count.
async fn warm_start_once(home: &Path, exposure: &str) -> (Duration, u64, usize) {
    let mut cmd: tokio::process::Command =
        mcpw_command(home, &["serve", "--exposure", exposure]).into();
    cmd.env(TAG_ENV, tag()).kill_on_drop(true);
    let t = Instant::now();
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcpw serve");
    let pid = transport.id().expect("mcpw serve's pid");
    let client = match tokio::time::timeout(Duration::from_secs(60), ().serve(transport)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => panic!("mcpw serve --exposure {exposure}: initialize failed: {e}"),
        Err(_) => panic!("mcpw serve --exposure {exposure}: no initialize answer in 60 s"),
    };
    let tools = client
        .list_tools(None)
        .await
        .unwrap_or_else(|e| panic!("mcpw serve --exposure {exposure}: tools/list failed: {e}"));
    let elapsed = t.elapsed();
    let rss = proc_kb(pid, "VmRSS");
    let _ = client.cancel().await;
    (elapsed, rss, tools.tools.len())
}

async fn row4_warm_start(home: &Path, servers: usize) -> String {
    println!(
        "## 4. Warm start: spawn `mcpw serve` (stdio) → first `tools/list` answer, {servers} servers / 1,287 cached tools, {WARM_START_RUNS} runs each"
    );
    let exposures = ["proxy", "tool-search", "direct"];
    warm_start_once(home, "proxy").await; // compiles and caches the default guest if needed
    let mut samples: Vec<(Vec<Duration>, Vec<u64>, usize)> = exposures
        .iter()
        .map(|_| (Vec::new(), Vec::new(), 0))
        .collect();
    for round in 0..WARM_START_RUNS {
        for k in 0..exposures.len() {
            let i = (k + round) % exposures.len();
            let (d, rss, tools) = warm_start_once(home, exposures[i]).await;
            samples[i].0.push(d);
            samples[i].1.push(rss);
            samples[i].2 = tools;
        }
    }
    assert_eq!(
        samples[2].2, CATALOG_TOOLS,
        "direct exposure lists every cached tool"
    );
    let mut cells = Vec::new();
    for (name, (mut d, rss, tools)) in exposures.iter().zip(samples) {
        d.sort();
        let rss = median(&rss.iter().map(|&k| mib(k)).collect::<Vec<_>>());
        println!(
            "{name:<12} tools={tools:<5} p50 {:>7.1} ms   max {:>7.1} ms   RSS median {rss:.1} MiB",
            ms(percentile(&d, 0.5)),
            ms(*d.last().expect("samples"))
        );
        cells.push(format!(
            "{name} p50 {:.0} ms / max {:.0} ms, {rss:.1} MiB",
            ms(percentile(&d, 0.5)),
            ms(*d.last().expect("samples"))
        ));
    }
    println!();
    format!(
        "| 4 | Warm start of `mcpw serve` (stdio) to the first `tools/list` answer, {servers} servers / 1,287 tools in the warm cache, none started ({WARM_START_RUNS} runs) \
         | {} | — (no server process is started) | — |",
        cells.join("; ")
    )
}

// ---------------------------------------------------------------------------
// Row 5: a 10 MB tool result

fn row5_big_result(misbehave: &str, home: &Path, relay: &Relay) -> String {
    println!(
        "## 5. A {BIG_BYTES}-byte tool result (misbehave.mjs `big`), TS SDK client, {BIG_CALLS_PER_ROUND} calls × {BIG_ROUNDS} alternating rounds"
    );
    let big = json!({"bytes": BIG_BYTES});
    let small = json!({"bytes": 1});
    let paths = [
        SdkPath {
            name: "direct",
            connect: json!({"command": "node", "args": [misbehave, "ok"]}),
            tool: "big",
            args: big.clone(),
            warm_args: small.clone(),
        },
        SdkPath {
            name: "byte relay",
            connect: relay.connect(&["node", misbehave, "ok"]),
            tool: "big",
            args: big.clone(),
            warm_args: small.clone(),
        },
        SdkPath {
            name: "mcpw serve --exposure direct",
            connect: json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", "direct"],
                            "env": mcpw_env_json(home)}),
            tool: "m__big",
            args: big,
            warm_args: small,
        },
    ];
    let stats = sdk_rounds(&paths, BIG_CALLS_PER_ROUND, BIG_ROUNDS, home);
    let p50: Vec<f64> = stats
        .iter()
        .map(|s| median(&s.iter().map(|x| x.p50).collect::<Vec<_>>()))
        .collect();
    for (i, p) in paths.iter().enumerate() {
        let rounds: Vec<String> = stats[i].iter().map(|s| format!("{:.1}", s.p50)).collect();
        println!(
            "{:<34} p50 {:>8.1} ms   p50 per round: {}",
            p.name,
            p50[i],
            rounds.join(" ")
        );
    }
    println!(
        "mcpw/relay p50 = {:.2}×; mcpw/direct = {:.2}×\n",
        p50[2] / p50[1],
        p50[2] / p50[0]
    );
    format!(
        "| 5 | A 10 MB tool result (one text block), stdio, TS SDK client ({BIG_CALLS_PER_ROUND} calls × {BIG_ROUNDS} rounds; p50 = median of the rounds' p50) \
         | `mcpw serve --exposure direct`: p50 {:.1} ms | byte relay p50 {:.1} ms; direct p50 {:.1} ms | {:.2}× the relay ({:.2}× direct) |",
        p50[2],
        p50[1],
        p50[0],
        p50[2] / p50[1],
        p50[2] / p50[0]
    )
}
