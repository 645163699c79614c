//! The servers and processes the end-to-end tests run: the test servers
//! (installed by [`mcpw_test_support::servers`]), servers in the background,
//! `mcpw` itself, and rmcp servers in the test's own runtime.

use mcpw_test_support::isolated_mcpw;
pub(crate) use mcpw_test_support::servers::{PiLine, Servers, debian};
pub(crate) use mcpw_test_support::serving::Serving;
pub(crate) use mcpw_test_support::{free_port, wait_until};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `mcpw` binary under test.
pub(crate) const MCPW: &str = env!("CARGO_BIN_EXE_mcpw");

/// The test servers, installed on first use.
pub(crate) fn servers() -> &'static Servers {
    mcpw_test_support::servers::servers(env!("CARGO_TARGET_TMPDIR"))
}

/// Does process `pid` hold the socket listening on TCP `port`? (Another
/// process may be listening there: connecting proves nothing.)
fn listens(pid: u32, port: u16) -> bool {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter_map(|line| {
                    let cols: Vec<&str> = line.split_whitespace().collect();
                    let local = u16::from_str_radix(cols.get(1)?.rsplit(':').next()?, 16).ok()?;
                    let inode = cols.get(9)?;
                    // State 0A is LISTEN.
                    (local == port && *cols.get(3)? == "0A").then(|| format!("socket:[{inode}]"))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|link| inodes.iter().any(|i| link.to_string_lossy() == *i))
        })
}

/// A server process running in the background, killed on drop.
pub(crate) struct Background {
    child: Child,
    pub port: u16,
}

impl Background {
    /// Starts `node args...` with `PORT` set and waits until it listens there.
    /// A free port may be taken by another test before node binds it: then
    /// node exits, and it is started again on another port.
    pub(crate) fn node(args: &[&str], env: &[(&str, &str)]) -> Background {
        for _ in 0..5 {
            let port = free_port();
            let mut child = Command::new("node")
                .args(args)
                .env("PORT", port.to_string())
                .envs(env.iter().copied())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if listens(child.id(), port) {
                    return Background { child, port };
                }
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("server {args:?} did not listen on a free port");
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `mcpw` binary with its config, caches and state under `home`, none of
/// them from this process's environment.
pub(crate) fn mcpw_in(home: &Path) -> Command {
    isolated_mcpw(MCPW, home)
}

/// A script of `tests/servers/` run by the test servers' Python with `args`,
/// in `home` as `mcpw` would be (see [`mcpw_in`]) and under `timeout`, as
/// every test client runs: a hang fails its test alone.
pub(crate) fn python_script(home: &Path, script: &str, args: &[&str]) -> std::process::Output {
    isolated_mcpw("timeout", home)
        .args([
            "--kill-after=10",
            &mcpw_test_support::CLIENT_LIMIT.as_secs().to_string(),
        ])
        .arg(servers().python_bin("python"))
        .arg(
            crate::common::workspace()
                .join("tests/servers")
                .join(script),
        )
        .args(args)
        .output()
        .unwrap()
}

/// What a command printed, its standard output then its standard error.
pub(crate) fn said(out: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Is process `pid` alive (and not a zombie)?
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// The pids a misbehave server wrote to its pid file.
pub(crate) fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Waits until no pid in `pids` is alive; false after `within`.
pub(crate) fn all_gone(pids: &[u32], within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if pids.iter().all(|p| !alive(*p)) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Serves `server`, an MCP server made with rmcp (one state shared by every
/// session), over Streamable HTTP on a loopback port, for as long as the
/// test's runtime runs; returns its URL.
pub(crate) async fn rmcp_upstream<S>(server: S) -> String
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
{
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let service: StreamableHttpService<S, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(server.clone()),
        std::sync::Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://127.0.0.1:{port}/mcp")
}

/// An rmcp tool definition taking the JSON object `schema`.
pub(crate) fn rmcp_tool(
    name: &str,
    description: &str,
    schema: serde_json::Value,
) -> rmcp::model::Tool {
    let serde_json::Value::Object(schema) = schema else {
        panic!("a schema is an object");
    };
    rmcp::model::Tool::new(
        name.to_string(),
        description.to_string(),
        std::sync::Arc::new(schema),
    )
}
