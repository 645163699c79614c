//! A team gateway's parts, for its tests and benchmark: Redis and haproxy,
//! real servers from Debian's packages (installed on first use when
//! missing, as CI needs), each on a free loopback port, stopped on drop;
//! and replicas of `mcpw serve` sharing state through Redis.

use crate::serving::Serving;
use crate::{free_port, wait_until};
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// Installs redis-server and haproxy with apt-get unless they are there.
fn installed() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        crate::servers::debian(
            &["redis-server", "haproxy"],
            &["redis-server", "haproxy"],
            "the team gateway's tests and benchmark",
        )
    });
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

/// A Redis server with its data in a directory of its own (append-only, so
/// that a restart finds what was written).
pub struct Redis {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
}

impl Redis {
    pub fn start(dir: &Path) -> Redis {
        let mut redis = Redis::stopped(dir);
        redis.restart();
        redis
    }

    /// One not started yet (its port chosen).
    pub fn stopped(dir: &Path) -> Redis {
        installed();
        Redis {
            child: None,
            port: free_port(),
            dir: dir.to_path_buf(),
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn answers(&self) -> bool {
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    /// Stops it (SIGKILL: nothing is saved on the way out but what the
    /// append-only file already holds).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it (again) on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        std::fs::create_dir_all(&self.dir).unwrap();
        self.child = Some(spawn(
            Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
                .args([
                    "--save",
                    "",
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "always",
                ])
                .arg("--dir")
                .arg(&self.dir),
        ));
        wait_until("redis-server to answer", Duration::from_secs(20), || {
            self.answers()
        });
    }

    /// A Redis command through redis-cli, its output.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// haproxy balancing round-robin over replicas, with no stickiness; a
/// replica that refuses connections is retried on another at once, and one
/// whose `/readyz` fails is taken out.
pub struct Haproxy {
    child: Child,
    pub port: u16,
}

impl Haproxy {
    pub fn start(dir: &Path, backends: &[u16]) -> Haproxy {
        Haproxy::start_on(dir, free_port(), backends)
    }

    /// As [`Haproxy::start`], on `port`: chosen beforehand where its
    /// address must be known before the replicas start (a resource URI
    /// that their config and an identity provider name).
    pub fn start_on(dir: &Path, port: u16, backends: &[u16]) -> Haproxy {
        installed();
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, p)| format!("  server r{i} 127.0.0.1:{p} check inter 300ms fall 2 rise 1\n"))
            .collect();
        let config = format!(
            "global\n  maxconn 2000\n\
             defaults\n  mode http\n  timeout connect 1s\n  timeout client 60s\n  timeout server 60s\n\
             \x20 timeout tunnel 60s\n  option redispatch 1\n  retries 3\n  retry-on conn-failure\n  option http-server-close\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n  option httpchk GET /readyz\n  http-check expect status 200\n{servers}"
        );
        let file = dir.join(format!("haproxy-{port}.cfg"));
        std::fs::write(&file, config).unwrap();
        let child = spawn(Command::new("haproxy").arg("-db").arg("-f").arg(&file));
        wait_until("haproxy to listen", Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Haproxy { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `mcpw serve --http` sharing state through `redis`, with its own home
/// (config, local cache), on a port of its own; once it says it is ready.
/// `bin` is the `mcpw` binary (see [`Serving::start`]).
pub fn replica(bin: impl AsRef<OsStr>, home: &Path, redis: &str, args: &[&str]) -> (Serving, u16) {
    let port = free_port();
    (replica_on(bin, home, redis, port, args), port)
}

/// As [`replica`], on `port` (one the test chose beforehand, to name it in
/// a config).
pub fn replica_on(
    bin: impl AsRef<OsStr>,
    home: &Path,
    redis: &str,
    port: u16,
    args: &[&str],
) -> Serving {
    let serving = started_on(bin, home, redis, port, args);
    wait_until("the replica to be ready", Duration::from_secs(30), || {
        readiness(port).starts_with("HTTP/1.0 200")
    });
    serving
}

/// As [`replica`], without waiting until it is ready.
pub fn replica_started(
    bin: impl AsRef<OsStr>,
    home: &Path,
    redis: &str,
    args: &[&str],
) -> (Serving, u16) {
    let port = free_port();
    (started_on(bin, home, redis, port, args), port)
}

/// A replica started on `port`, not yet waited for.
fn started_on(
    bin: impl AsRef<OsStr>,
    home: &Path,
    redis: &str,
    port: u16,
    args: &[&str],
) -> Serving {
    let addr = format!("127.0.0.1:{port}");
    let mut all = vec!["--shared-state", redis, "--http", &addr];
    all.extend_from_slice(args);
    Serving::start(bin, home, &all)
}

/// The raw answer to `GET /readyz`.
fn readiness(port: u16) -> String {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut answer = String::new();
    if s.write_all(b"GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_ok()
    {
        let _ = s.read_to_string(&mut answer);
    }
    answer
}
