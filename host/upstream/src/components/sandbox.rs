//! What a component server's instance may reach, built from its
//! `permissions`: its standard streams (mcpw's pipes), the folders granted
//! (preopened at the same path, read-only unless granted read-write), the
//! environment granted, outgoing connections to the hosts granted (mcpw
//! resolves their names; the component may look up those names alone, see
//! [`super::lookups`]; nothing else resolves or connects), and its memory.
//! Everything else is refused by WASI's own defaults: no other file, no
//! inherited environment, no socket.

use crate::config::permissions::{Access, Permissions};
use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::cli::{AsyncStdinStream, AsyncStdoutStream};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

/// How much a component may write ahead of mcpw reading it.
const WRITE_BUDGET: usize = 64 * 1024;

/// The component's ends of its standard streams.
pub(crate) struct Streams {
    pub stdin: tokio::io::DuplexStream,
    pub stdout: tokio::io::DuplexStream,
    pub stderr: tokio::io::DuplexStream,
}

/// The WASI context a command's instance gets: its standard streams are
/// mcpw's pipes; `env` is `permissions.env` with its secrets resolved, `name`
/// its `argv[0]`, `allowed` the addresses its hosts resolved to.
pub(crate) fn command_context(
    permissions: &Permissions,
    env: &[(String, String)],
    name: &str,
    streams: Streams,
    allowed: Arc<Allowed>,
) -> Result<WasiCtx, String> {
    let mut builder = granted(permissions, env, name, allowed)?;
    builder
        .stdin(AsyncStdinStream::new(streams.stdin))
        .stdout(AsyncStdoutStream::new(WRITE_BUDGET, streams.stdout))
        .stderr(AsyncStdoutStream::new(WRITE_BUDGET, streams.stderr));
    Ok(builder.build())
}

/// The WASI context of a proxy's instance (one request): no standard input
/// or output, its standard error kept in `stderr`.
pub(crate) fn http_context(
    permissions: &Permissions,
    env: &[(String, String)],
    name: &str,
    stderr: MemoryOutputPipe,
    allowed: Arc<Allowed>,
) -> Result<WasiCtx, String> {
    let mut builder = granted(permissions, env, name, allowed)?;
    builder.stderr(stderr);
    Ok(builder.build())
}

/// What both shapes are granted: folders, environment, sockets to the hosts.
fn granted(
    permissions: &Permissions,
    env: &[(String, String)],
    name: &str,
    allowed: Arc<Allowed>,
) -> Result<WasiCtxBuilder, String> {
    let mut builder = WasiCtx::builder();
    builder.args(&[name]).envs(env);
    for (folder, access) in &permissions.files {
        let perms = match access {
            Access::Read => FsPerms::ReadOnly,
            Access::ReadWrite => FsPerms::ReadWrite,
        };
        builder
            .preopened_dir(folder, folder, perms)
            .map_err(|e| format!("permissions.files: cannot open {folder}: {e}"))?;
    }
    // Sockets exist only for a component granted hosts; each address is
    // still checked below.
    let networked = !permissions.network.is_empty();
    builder
        .allow_tcp(networked)
        .allow_udp(networked)
        .allow_ip_name_lookup(networked);
    builder.socket_addr_check(move |addr, usage| {
        let ok = match usage {
            SocketAddrUse::TcpConnect | SocketAddrUse::UdpSend | SocketAddrUse::UdpReceive => {
                allowed.admits(addr)
            }
            // An implicit bind before a connect is part of connecting.
            SocketAddrUse::TcpBind | SocketAddrUse::UdpBind => addr.ip().is_unspecified(),
            // A server takes no connections of its own.
            SocketAddrUse::TcpListen | SocketAddrUse::TcpAccept => false,
        };
        if !ok {
            refused(format!("a connection to {addr} ({usage:?})"));
        }
        Box::pin(async move { ok })
    });
    Ok(builder)
}

/// What components of this process reached for and were refused, newest
/// last (the last hundred): what an author's check reports.
static REFUSED: std::sync::Mutex<std::collections::VecDeque<String>> =
    std::sync::Mutex::new(std::collections::VecDeque::new());

/// Logs and keeps a refusal. What a component chose (a name, a path) is cut
/// to 300 characters, and a refusal among the last hundred is not logged
/// again: a component cannot flood the log.
pub(crate) fn refused(what: String) {
    let what = crate::present::truncate_at_word(&what, 300);
    let mut kept = REFUSED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(at) = kept.iter().position(|k| *k == what) {
        kept.remove(at);
    } else {
        tracing::warn!("refused: {what}, which the component's permissions do not grant");
    }
    if kept.len() == 100 {
        kept.pop_front();
    }
    kept.push_back(what);
}

/// The refusals kept so far (see `refused`).
pub fn refusals() -> Vec<String> {
    let kept = REFUSED.lock().unwrap_or_else(|p| p.into_inner());
    kept.iter().cloned().collect()
}

/// The instance's memory limit, and the peak of what it used.
pub(crate) fn limits(permissions: &Permissions) -> Limiter {
    let limits = StoreLimitsBuilder::new()
        .memory_size(permissions.memory_mib as usize * 1024 * 1024)
        .instances(64)
        .build();
    Limiter { limits, held: 0 }
}

/// The largest memory an instance of this process has held, in bytes.
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The largest memory (all its linear memories together) any component
/// instance of this process has held, in bytes: what an author's check
/// reports of one component.
pub fn memory_peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// An instance's limits ([`StoreLimits`]), noting what its memories hold.
pub(crate) struct Limiter {
    limits: StoreLimits,
    /// The bytes of the instance's linear memories together.
    held: usize,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let grows = self.limits.memory_growing(current, desired, maximum)?;
        if grows {
            self.held += desired.saturating_sub(current);
            PEAK.fetch_max(self.held, Ordering::Relaxed);
        }
        Ok(grows)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// The hosts granted, by name, and the addresses they resolve to, each
/// with the port it allows (`None`: any).
#[derive(Debug, Default)]
pub(crate) struct Allowed {
    addrs: BTreeSet<(IpAddr, Option<u16>)>,
    names: BTreeSet<(String, Option<u16>)>,
}

impl Allowed {
    /// Whether a connection to `addr` is granted.
    pub(crate) fn admits(&self, addr: SocketAddr) -> bool {
        self.addrs.contains(&(addr.ip(), None))
            || self.addrs.contains(&(addr.ip(), Some(addr.port())))
    }

    /// Whether the component may look `name` up: a host it is granted (on
    /// some port), or an address it may reach.
    pub(crate) fn admits_name(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return self.addrs.iter().any(|(a, _)| *a == ip);
        }
        self.names.iter().any(|(n, _)| *n == name)
    }

    /// Whether a request to `host` (a name or an address) on `port` is granted.
    pub(crate) fn admits_host(&self, host: &str, port: u16) -> bool {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return self.admits(SocketAddr::new(ip, port));
        }
        let host = host.to_ascii_lowercase();
        self.names.contains(&(host.clone(), None)) || self.names.contains(&(host, Some(port)))
    }
}

/// Resolves each entry (`host` or `host:port`) once, when the component starts.
pub(crate) async fn resolve(entries: &[String]) -> Allowed {
    let mut allowed = Allowed::default();
    for entry in entries {
        let (host, port) = split(entry);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = host.parse::<IpAddr>() {
            allowed.addrs.insert((ip, port));
            continue;
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        allowed.names.insert((name, port));
        match tokio::net::lookup_host((host, port.unwrap_or(0))).await {
            Ok(addrs) => addrs.for_each(|a| {
                allowed.addrs.insert((a.ip(), port));
            }),
            Err(e) => tracing::warn!("permissions.network: {host} does not resolve ({e})"),
        }
    }
    allowed
}

/// `host:port` into its host and port; a bare host (or IPv6 address) has none.
fn split(entry: &str) -> (&str, Option<u16>) {
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => {
            (host, port.parse().ok())
        }
        _ => (entry, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn granted_hosts_admit_their_addresses_and_ports_only() {
        let entries = [
            "127.0.0.1:8080".to_string(),
            "::1".to_string(),
            "[::2]:9".to_string(),
        ];
        let allowed = resolve(&entries).await;
        assert!(allowed.admits("127.0.0.1:8080".parse().unwrap()));
        assert!(!allowed.admits("127.0.0.1:8081".parse().unwrap()));
        assert!(!allowed.admits("127.0.0.2:8080".parse().unwrap()));
        assert!(allowed.admits("[::1]:443".parse().unwrap()));
        assert!(allowed.admits("[::2]:9".parse().unwrap()));
        assert!(!allowed.admits("[::2]:10".parse().unwrap()));
        assert!(!resolve(&[]).await.admits("127.0.0.1:80".parse().unwrap()));
        let named = resolve(&["Api.Example.com:443".to_string()]).await;
        assert!(named.admits_host("api.example.com", 443));
        assert!(!named.admits_host("api.example.com", 80));
        assert!(!named.admits_host("example.com", 443));
        assert!(allowed.admits_host("127.0.0.1", 8080) && !allowed.admits_host("127.0.0.1", 1));
    }
}
