//! What the end-to-end tests (`tests/e2e`) and the benchmarks share: a free
//! port, waiting for a state nothing announces, an `mcpw` command that sees
//! none of the developer's own setup; the test servers ([`servers`]), `mcpw
//! serve` in the background ([`serving`]), a team gateway's Redis and
//! haproxy ([`team`]), the benchmarks' statistics ([`stats`]); with the
//! `catalog` feature the search benchmark's catalog as a warm cache, and
//! with `oidc` a real OpenID provider for the sign-in tests ([`oidc`]).

#[cfg(feature = "catalog")]
pub mod catalog;
pub mod fs;
#[cfg(feature = "oidc")]
pub mod oidc;
pub mod servers;
pub mod serving;
pub mod stats;
pub mod team;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How often the waiting helpers look again: short, so a test waits little
/// past the moment the state holds.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// The repository's root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate lives in tests/support")
        .to_path_buf()
}

/// A free loopback port, for a server the test starts on it. The port is
/// bound, then released: another process may take it first, so a caller that
/// cannot afford that retries on another.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Polls `cond` (a state the test cannot subscribe to) until it holds; fails
/// the test, naming `what` it waited for, after `within`.
pub fn wait_until(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(POLL_EVERY);
    }
}

/// [`wait_until`] for async tests: `cond` may await (a request to the process
/// under test), and the runtime goes on between looks.
pub async fn eventually(what: &str, within: Duration, mut cond: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Variables through which `mcpw` would find the developer's own config,
/// caches, state, token or browser instead of the test's.
const LEAKING: [&str; 6] = [
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "MCPW_CONFIG",
    "MCPW_TOKEN",
    "BROWSER",
];

/// A model hub address that refuses at once: search by meaning is on by
/// default, and no test may reach the public hub for its model.
pub const OFFLINE_HUB: &str = "http://127.0.0.1:9";

/// The `mcpw` binary at `bin` (`env!("CARGO_BIN_EXE_mcpw")`, which only the
/// test or bench crate can name) with `HOME` at `home` and none of the
/// variables that would point it elsewhere: its config, caches and state are
/// the test's alone, and its model hub is [`OFFLINE_HUB`]. The rest of the
/// environment (`PATH`, `MCPW_LOG`) passes on.
pub fn isolated_mcpw(bin: impl AsRef<OsStr>, home: impl AsRef<Path>) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env("HOME", home.as_ref());
    cmd.env("HF_ENDPOINT", OFFLINE_HUB);
    for name in LEAKING {
        cmd.env_remove(name);
    }
    cmd
}

/// How long one run of a test client (the SDKs' clients, the Inspector,
/// pi, a browser check) may take.
pub const CLIENT_LIMIT: Duration = Duration::from_secs(300);

/// `program` under coreutils' `timeout`: stopped after [`CLIENT_LIMIT`]
/// (and killed 10 s later), so that a client that hangs fails its test
/// with what it printed instead of stalling the whole suite.
pub fn bounded(program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.arg("--kill-after=10")
        .arg(CLIENT_LIMIT.as_secs().to_string())
        .arg(program);
    cmd
}

/// Reads the HTTP/1.1 requests of one connection (keep-alive, bodies by
/// `Content-Length`), handing each head (lowercased) and body to `each`, and
/// answers each with `200 OK` and an empty body. For small receivers that
/// take posts (an OTLP collector, say); ends when the client closes.
pub fn answer_posts(mut stream: std::net::TcpStream, mut each: impl FnMut(&str, Vec<u8>)) {
    use std::io::{Read, Write};
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let mut read_more =
        |stream: &mut std::net::TcpStream, buf: &mut Vec<u8>| match stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                true
            }
        };
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            if !read_more(&mut stream, &mut buf) {
                return;
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap_or(0));
        while buf.len() < end + 4 + length {
            if !read_more(&mut stream, &mut buf) {
                return;
            }
        }
        let body: Vec<u8> = buf.drain(..end + 4 + length).skip(end + 4).collect();
        each(&head, body);
        let ok =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if stream.write_all(ok).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_port_can_be_bound() {
        let port = free_port();
        assert_ne!(port, 0);
        std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    }

    #[test]
    fn wait_until_returns_once_the_condition_holds() {
        let mut looks = 0;
        wait_until("the third look", Duration::from_secs(5), || {
            looks += 1;
            looks == 3
        });
        assert_eq!(looks, 3);
    }

    #[test]
    #[should_panic(expected = "timed out waiting for a state that never comes")]
    fn wait_until_names_what_it_waited_for_on_timeout() {
        wait_until(
            "a state that never comes",
            Duration::from_millis(50),
            || false,
        );
    }

    #[tokio::test]
    async fn eventually_returns_once_the_condition_holds() {
        let mut looks = 0;
        eventually("the third look", Duration::from_secs(5), async || {
            tokio::task::yield_now().await;
            looks += 1;
            looks == 3
        })
        .await;
        assert_eq!(looks, 3);
    }

    #[tokio::test]
    #[should_panic(expected = "timed out waiting for a reply that never comes")]
    async fn eventually_names_what_it_waited_for_on_timeout() {
        eventually(
            "a reply that never comes",
            Duration::from_millis(50),
            async || false,
        )
        .await;
    }

    #[test]
    fn the_mcpw_command_has_the_home_and_none_of_the_leaking_variables() {
        let cmd = isolated_mcpw("/bin/mcpw", "/tmp/home");
        assert_eq!(cmd.get_program(), "/bin/mcpw");
        let envs: Vec<_> = cmd.get_envs().collect();
        assert!(envs.contains(&(OsStr::new("HOME"), Some(OsStr::new("/tmp/home")))));
        for name in LEAKING {
            assert!(envs.contains(&(OsStr::new(name), None)), "{name}");
        }
    }
}
