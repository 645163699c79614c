//! What the rows of the gateway bench share: statistics, the processes they
//! start (and the sweep that ends them), the byte relay, the HOMEs and configs,
//! the TypeScript SDK client, concurrent Streamable HTTP sessions and an rmcp
//! client over stdio.

use mcpw::config::{self, ConfigSources};
use mcpw::paths::Environment;
use mcpw_test_support::catalog as bench_catalog;
pub(crate) use mcpw_test_support::free_port;
use mcpw_test_support::isolated_mcpw;
use mcpw_test_support::servers::{Servers, servers as installed};
pub(crate) use mcpw_test_support::stats::{ms, percentile, proc_kb};
use mcpw_test_support::workspace;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Set when the bench binary runs as the byte relay of rows 1 and 5.
pub(crate) const RELAY_ENV: &str = "MCPW_BENCH_RELAY";
/// Marks every process this run starts (children inherit it), for the final sweep.
pub(crate) const TAG_ENV: &str = "MCPW_BENCH_TAG";

pub(crate) const ROUNDS: usize = 3;

/// The test servers, installed on first use.
pub(crate) fn servers() -> &'static Servers {
    installed(env!("CARGO_TARGET_TMPDIR"))
}
/// Catalog size the fixture is known to have (checked, so a wrong setup fails loudly).
pub(crate) const CATALOG_TOOLS: usize = bench_catalog::TOOLS;

// ---------------------------------------------------------------------------
// Statistics and formatting

pub(crate) fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The `q` quantile of sorted samples, in ms.
pub(crate) fn p(d: &[Duration], q: f64) -> f64 {
    ms(percentile(d, q))
}

pub(crate) fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub(crate) fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

// ---------------------------------------------------------------------------
// Processes

pub(crate) fn tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| format!("{}-{}", std::process::id(), mcpw::clock::now_ms()))
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
pub(crate) struct Sweep;

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
pub(crate) struct Proc {
    child: Child,
    what: String,
    stderr: Option<PathBuf>,
}

impl Proc {
    pub(crate) fn spawn(mut cmd: Command, what: &str, stderr: Option<PathBuf>) -> Proc {
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

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `port` on loopback accepts connections; panics (with the
    /// process's stderr) if it exits or takes longer than 60 s.
    pub(crate) fn wait_for_port(&mut self, port: u16) {
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
pub(crate) fn run_with_timeout(
    mut cmd: Command,
    what: &str,
    timeout: Duration,
) -> std::process::Output {
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

// ---------------------------------------------------------------------------
// The byte relay (the baseline for "a process in the middle")

/// Relay mode: `<bench> program args...` with `MCPW_BENCH_RELAY` set spawns the
/// program and copies bytes both ways, nothing else.
pub(crate) fn relay_main() -> ! {
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

pub(crate) enum Relay {
    Socat,
    SelfExec(PathBuf),
}

impl Relay {
    pub(crate) fn pick() -> Relay {
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

    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Relay::Socat => "socat STDIO EXEC",
            Relay::SelfExec(_) => "built-in (bench re-executed as a 2-thread stdin/stdout copier)",
        }
    }

    /// A client.mjs `connect` that runs `command` behind the relay.
    pub(crate) fn connect(&self, command: &[&str]) -> Value {
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
pub(crate) fn home_with(home: &Path, servers: Value) -> PathBuf {
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
pub(crate) fn mcpw_env_json(home: &Path) -> Value {
    json!({"HF_ENDPOINT": mcpw_test_support::OFFLINE_HUB, "HOME": home.display().to_string(), "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": "",
           "XDG_STATE_HOME": "", "MCPW_CONFIG": "", "MCPW_TOKEN": ""})
}

/// `mcpw <args>` finding its config and caches under `home` only (and no project
/// config: it runs in `home`).
pub(crate) fn mcpw_command(home: &Path, args: &[&str]) -> Command {
    let mut cmd = isolated_mcpw(env!("CARGO_BIN_EXE_mcpw"), home);
    cmd.args(args).current_dir(home);
    cmd
}

/// `mcpw serve --exposure <exposure>` under `home`, for an rmcp client.
pub(crate) fn serve(home: &Path, exposure: &str) -> tokio::process::Command {
    mcpw_command(home, &["serve", "--exposure", exposure]).into()
}

/// The in-process view of the same HOME (row 2).
pub(crate) fn environment(home: &Path) -> Environment {
    Environment::from_process()
        .with("HOME", home.display().to_string())
        .with("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB.to_string())
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

pub(crate) fn load_config(home: &Path) -> mcpw::config::Config {
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
pub(crate) fn write_catalog_home(home: &Path) -> usize {
    let catalog = workspace().join("tests/fixtures/catalog.json");
    let servers = bench_catalog::write(home, &catalog, json!({}));
    assert_eq!(
        load_config(home).servers.len(),
        servers,
        "every catalog server is configured"
    );
    servers
}

// ---------------------------------------------------------------------------
// The TypeScript SDK client (rows 1, 5 and 9)

pub(crate) struct SdkPath {
    pub name: &'static str,
    pub connect: Value,
    pub tool: &'static str,
    pub args: Value,
    /// One call before the measured ones (mcpw connects its server lazily).
    pub warm_args: Value,
}

#[derive(Clone, Copy)]
pub(crate) struct SdkStats {
    pub p50: f64,
    pub p99: f64,
}

/// p50/p99 (ms) of `n` sequential calls measured inside client.mjs.
fn sdk_bench(path: &SdkPath, n: usize, cwd: &Path) -> SdkStats {
    let plan = json!({"connect": path.connect, "steps": [
        {"op": "callTool", "name": path.tool, "arguments": path.warm_args},
        {"op": "bench", "name": path.tool, "arguments": path.args, "n": n},
    ]});
    let mut cmd = Command::new("node");
    cmd.arg(servers().client())
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
pub(crate) fn sdk_rounds(
    paths: &[SdkPath],
    n: usize,
    rounds: usize,
    cwd: &Path,
) -> Vec<Vec<SdkStats>> {
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
// Concurrent Streamable HTTP sessions (rows 3 and 8)

#[derive(Default)]
pub(crate) struct Load {
    pub latencies: Vec<Duration>,
    pub errors: usize,
    pub session_errors: usize,
    pub first_error: Option<String>,
    pub calls: usize,
    wall: Duration,
}

impl Load {
    pub(crate) fn merge(&mut self, other: Load) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        self.session_errors += other.session_errors;
        self.first_error = self.first_error.take().or(other.first_error);
        self.calls += other.calls;
        self.wall += other.wall;
    }

    /// Sorts the latencies for percentiles; fails the row if no call succeeded.
    pub(crate) fn settle(&mut self) {
        self.latencies.sort();
        assert!(
            !self.latencies.is_empty(),
            "no call succeeded: {:?}",
            self.first_error
        );
    }

    pub(crate) fn calls_per_s(&self) -> f64 {
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
pub(crate) async fn http_load(
    url: &str,
    tool: &'static str,
    sessions: usize,
    calls: usize,
) -> Load {
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
pub(crate) async fn http_warm_up(url: &str, tool: &'static str, what: &str) {
    let load = http_load(url, tool, 1, 3).await;
    assert!(
        load.errors == 0,
        "{what} did not answer a warm-up session at {url}: {:?}",
        load.first_error
    );
}

// ---------------------------------------------------------------------------
// An rmcp client over stdio (rows 6 and 7)

/// A client that counts the log messages it gets.
#[derive(Clone, Default)]
pub(crate) struct Counting(Arc<AtomicUsize>);

// Log messages are deprecated in the newest MCP revision; older servers still send them.
#[allow(deprecated)]
impl rmcp::ClientHandler for Counting {
    async fn on_logging_message(
        &self,
        _: rmcp::model::LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

pub(crate) type Client = RunningService<RoleClient, Counting>;

/// Starts `cmd` as a stdio MCP server and connects to it; returns its pid too.
pub(crate) async fn connect(
    mut cmd: tokio::process::Command,
    what: &str,
) -> (Client, u32, Arc<AtomicUsize>) {
    cmd.env(TAG_ENV, tag()).kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let pid = transport.id().expect("a pid");
    let logs = Counting::default();
    let counter = logs.0.clone();
    let client = match tokio::time::timeout(Duration::from_secs(60), logs.serve(transport)).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => panic!("{what}: initialize failed: {e}"),
        Err(_) => panic!("{what}: no initialize answer in 60 s"),
    };
    (client, pid, counter)
}

pub(crate) fn request(tool: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(map) = arguments else {
        unreachable!("arguments are an object")
    };
    CallToolRequestParams::new(tool.to_string()).with_arguments(map)
}

pub(crate) async fn call(client: &Client, tool: &str, arguments: Value) -> Duration {
    let t = Instant::now();
    let out = client
        .call_tool(request(tool, arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool} failed: {e}"));
    assert_ne!(
        out.is_error,
        Some(true),
        "{tool} answered an error: {out:?}"
    );
    t.elapsed()
}
