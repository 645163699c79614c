//! `mcpw serve`: the gateway over stdio (default) or Streamable HTTP.

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use mcpw::config::{Config, ConfigSources};
use mcpw::gateway::http::{self, ClientToken, HttpOptions};
use mcpw::gateway::{Exposure, Gated, Gateway, Session};
use mcpw::host::{Host, HostOptions};
use rmcp::ServiceExt;
use rmcp::transport::async_rw::AsyncRwTransport;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Serve Streamable HTTP on ADDR (`PORT`, `:PORT` or `IP:PORT`; loopback unless a token is set) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Bearer token of a client that sees every server (default: $MCPW_TOKEN). Binding beyond
    /// loopback needs this or the config's serve.tokens; once any is set, every request needs one.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// proxy (one `mcp` tool), tool-search, direct, code, or auto: direct while the tools fit
    /// settings.autoExposureBudget tokens, else tool-search (default: settings.exposure, else proxy).
    #[arg(long, value_name = "MODE")]
    exposure: Option<String>,
    /// With --http: sessions open at once (default 1000); one more `initialize` is refused with HTTP 503.
    #[arg(long, value_name = "N")]
    max_sessions: Option<std::num::NonZeroUsize>,
    /// With --http: on SIGTERM or SIGINT, how long requests in flight may take to finish
    /// (default 25); meanwhile new sessions get HTTP 503 and /readyz answers "draining".
    #[arg(long, value_name = "SECS")]
    drain_timeout: Option<u64>,
    /// With --http: how long a session may stay idle before it is closed and its
    /// memory released (default 300).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    session_idle: Option<u64>,
    /// On stdio: serve the live page, and the views of MCP Apps the client cannot show, on a
    /// loopback ADDR (default 127.0.0.1:0, a free port) behind a token of its own; the page's
    /// address (token included) goes to stderr, each view's to its result's `_meta["mcpw/view"]`.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    page: Option<String>,
}

impl ServeArgs {
    /// Serving one session on standard input and output (no `--http`).
    pub(crate) fn on_stdio(&self) -> bool {
        self.http.is_none()
    }
}

fn parse_addr(flag: &str, s: &str) -> Result<SocketAddr> {
    let s = s.trim();
    if let Ok(port) = s.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse()
        .with_context(|| format!("{flag} {s:?}: expected PORT, :PORT or IP:PORT"))
}

/// How often the config files are checked for changes.
const CONFIG_POLL: std::time::Duration = std::time::Duration::from_secs(2);

type Fingerprint = Vec<(std::path::PathBuf, Option<(std::time::SystemTime, u64)>)>;

/// Every config file mcpw read or looked for, the project approvals' file
/// and the pinned tools' (an approval or an edit changes what loads).
fn watched(cfg: &Config) -> Vec<std::path::PathBuf> {
    let files = cfg.sources.iter().map(|s| s.path.clone());
    let pins = mcpw::pins::Pins::of(cfg).path().to_path_buf();
    files.chain([cfg.trust.file.clone(), pins]).collect()
}

/// Each file with its size and change time.
fn fingerprint(files: &[std::path::PathBuf]) -> Fingerprint {
    files
        .iter()
        .map(|path| {
            let meta = std::fs::metadata(path).ok();
            (
                path.clone(),
                meta.and_then(|m| Some((m.modified().ok()?, m.len()))),
            )
        })
        .collect()
}

/// Applies edits of the config files to the running gateway: servers added,
/// changed or removed take effect without a restart. A config with errors is
/// reported and ignored until fixed.
/// `seen` is the fingerprint of `files` taken when the config was read, so
/// that an edit (or an approval) made while the host started is not missed.
async fn follow_config(
    host: Arc<Host>,
    sources: ConfigSources,
    (mut files, mut seen): (Vec<std::path::PathBuf>, Fingerprint),
) {
    let mut settling: Option<Fingerprint> = None;
    let mut tick = tokio::time::interval(CONFIG_POLL);
    tick.tick().await;
    loop {
        tick.tick().await;
        let probe = files.clone();
        let Ok(now) = tokio::task::spawn_blocking(move || fingerprint(&probe)).await else {
            continue;
        };
        if now == seen {
            settling = None;
            continue;
        }
        // Only files that stayed the same for a whole poll are read: an editor
        // may be halfway through saving (a truncated file, a rename).
        if settling.as_ref() != Some(&now) {
            settling = Some(now);
            continue;
        }
        settling = None;
        let pins = mcpw::pins::Pins::of(&host.config()).path().to_path_buf();
        let pins_at = |f: &Fingerprint| f.iter().find(|(p, _)| *p == pins).map(|(_, at)| *at);
        let pins_changed = pins_at(&now) != pins_at(&seen);
        seen = now;
        let from = sources.clone();
        let Ok(cfg) = tokio::task::spawn_blocking(move || mcpw::config::load(&from)).await else {
            continue;
        };
        if watched(&cfg) != files {
            files = watched(&cfg);
            seen = fingerprint(&files);
        }
        if let Some(notice) = cfg.trust.notice()
            && cfg.trust.waiting != host.config().trust.waiting
        {
            tracing::warn!("{notice}");
        }
        if cfg.has_errors() {
            for d in cfg
                .diagnostics
                .iter()
                .filter(|d| d.severity == mcpw::config::Severity::Error)
            {
                tracing::warn!("config not reloaded: {d}");
            }
            continue;
        }
        if cfg.serve != host.config().serve {
            tracing::warn!("the config's serve.tokens changed: restart `mcpw serve` to apply it");
        }
        let (now, was) = (&cfg.settings, &host.config().settings);
        if (&now.guards, now.guards_fail_open) != (&was.guards, was.guards_fail_open) {
            tracing::warn!("settings.guards changed: restart `mcpw serve` to apply it");
        }
        let changed = host.reload(cfg).await;
        if pins_changed {
            host.pins_changed();
        }
        if !changed.is_empty() {
            tracing::info!("config reloaded; servers changed: {}", changed.join(", "));
            // As at start: the catalog should know every server's tools, and eager
            // servers connect. Sessions hear of the new tools as they arrive.
            let h = host.clone();
            tokio::spawn(async move { h.servers().connect_changed(&changed).await });
        }
    }
}

type Reader = Box<dyn tokio::io::AsyncRead + Send + Unpin>;
type Writer = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// Standard input and output for the MCP session. When they are pipes or
/// sockets (as MCP clients start servers: Node.js gives socket pairs), they
/// are read and written without blocking, on the runtime itself: tokio's
/// `stdin()` and `stdout()` hand every read and write to a blocking thread, a
/// thread switch per message each way.
fn stdio() -> (Reader, Writer) {
    #[cfg(unix)]
    if let Some(both) = nonblocking::stdio() {
        return both;
    }
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

#[cfg(unix)]
mod nonblocking {
    use super::{Reader, Writer};
    use std::os::fd::{FromRawFd, OwnedFd};

    enum Kind {
        Pipe,
        Socket,
    }

    fn kind(fd: i32) -> Option<Kind> {
        // SAFETY: fstat fills the zeroed struct for an open descriptor.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return None;
        }
        match st.st_mode & libc::S_IFMT {
            libc::S_IFIFO => Some(Kind::Pipe),
            libc::S_IFSOCK => Some(Kind::Socket),
            _ => None,
        }
    }

    /// A duplicate, so that the standard descriptor itself stays open.
    fn dup(fd: i32) -> Option<OwnedFd> {
        // SAFETY: dup of an open descriptor; the new one is owned here.
        let new = unsafe { libc::dup(fd) };
        (new >= 0).then(|| unsafe { OwnedFd::from_raw_fd(new) })
    }

    fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let std = std::os::unix::net::UnixStream::from(fd);
        std.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(std).ok()
    }

    /// Standard input and output, both made non-blocking, or neither (one
    /// made non-blocking cannot go back to tokio's blocking reader or writer):
    /// `None` when either is not a pipe or a socket.
    pub(super) fn stdio() -> Option<(Reader, Writer)> {
        let (input_kind, output_kind) = (kind(0)?, kind(1)?);
        let (input, output) = (dup(0)?, dup(1)?);
        let reader: Reader = match input_kind {
            Kind::Pipe => Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(input).ok()?),
            Kind::Socket => Box::new(socket(input)?),
        };
        let writer: Writer = match output_kind {
            Kind::Pipe => Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(output).ok()?),
            Kind::Socket => Box::new(socket(output)?),
        };
        Some((reader, writer))
    }
}

pub(crate) async fn serve(args: ServeArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = super::load_config(sources);
    // Fingerprinted now: what changes while the host starts is seen as new.
    let files = watched(&cfg);
    let seen = fingerprint(&files);
    let read = (files, seen);
    if let Some(notice) = cfg.trust.notice() {
        tracing::warn!("{notice}");
    }
    let exposure = Exposure::chosen(args.exposure.as_deref(), cfg.settings.exposure)
        .map_err(|e| anyhow!(e))?;
    let exposure_name = exposure.name();
    let (http_addr, admitted) = admission(&args, &cfg, sources).await?;
    let host =
        Arc::new(Host::start(cfg, sources.env.clone(), HostOptions::for_env(&sources.env)).await?);
    if http_addr.is_some() {
        prune_people(&host, &admitted.tokens);
    }
    let shared = start_background(&host, sources, read, exposure, http_addr.is_none());
    match http_addr {
        Some(addr) => serve_http(&args, addr, admitted, shared, exposure_name).await?,
        None => {
            if let Some(addr) = &args.page {
                open_page(&shared, addr).await?;
            }
            let files = sources.env.state_dir().join("results");
            serve_stdio(shared, exposure_name, files).await?
        }
    }
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Whom serving over HTTP admits: the client tokens, and the secrets that
/// `serve.oauth`'s issuers introspect opaque tokens with.
#[derive(Default)]
struct Admission {
    tokens: Vec<ClientToken>,
    oauth_secrets: http::IntrospectionSecrets,
}

/// The HTTP address, if any, and whom it admits. Settled before the host
/// starts, so that a bad address or a missing token stops nothing.
async fn admission(
    args: &ServeArgs,
    cfg: &Config,
    sources: &ConfigSources,
) -> Result<(Option<SocketAddr>, Admission)> {
    if args.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        bail!("--token is empty: give the bearer token clients must send");
    }
    let token = args.token.clone().or_else(|| {
        sources
            .env
            .get("MCPW_TOKEN")
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    });
    let http_addr = args
        .http
        .as_deref()
        .map(|a| parse_addr("--http", a))
        .transpose()?;
    // Tokens matter over HTTP only; their commands run before anything starts.
    let admission = match http_addr {
        Some(_) => Admission {
            tokens: http::client_tokens(token, &cfg.serve, &sources.env).await?,
            oauth_secrets: http::oauth_secrets(cfg.serve.oauth.as_ref(), &sources.env).await?,
        },
        None => Admission::default(),
    };
    let tokens = &admission.tokens;
    if let Some(addr) = http_addr
        && !addr.ip().is_loopback()
        && tokens.is_empty()
        && cfg.serve.oauth.is_none()
    {
        bail!("{}", http::ServeError::TokenRequired(addr));
    }
    if !tokens.is_empty() {
        let names: Vec<&str> = tokens.iter().map(|t| t.scope.name()).collect();
        tracing::info!("clients admitted by token: {}", names.join(", "));
    }
    Ok((http_addr, admission))
}

/// Forgets, in the background, the people's own logins of principals this
/// gateway no longer admits (a token gone from `serve.tokens`, an issuer
/// gone from `serve.oauth.issuers`): no one can use them any more.
fn prune_people(host: &Arc<Host>, tokens: &[ClientToken]) {
    let names: Vec<String> = tokens.iter().map(|t| t.scope.name().to_string()).collect();
    let host = host.clone();
    tokio::spawn(async move {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        host.prune_people(&names).await
    });
}

/// Starts what runs beside the sessions: connecting servers, following the
/// config files and warming up the catalog, so that serving need not wait.
fn start_background(
    host: &Arc<Host>,
    sources: &ConfigSources,
    read: (Vec<std::path::PathBuf>, Fingerprint),
    exposure: Exposure,
    on_stdio: bool,
) -> Arc<Gateway> {
    if on_stdio {
        // The one stdio session's client says what servers may ask of it.
        host.servers().sessions().connect_after_first();
    }
    let starting = host.clone();
    tokio::spawn(async move { starting.connect_at_start().await });
    tokio::spawn(follow_config(host.clone(), sources.clone(), read));
    let shared = Gateway::new(host.clone(), exposure);
    let warming = shared.clone();
    tokio::spawn(async move { warming.warm_up(&Session::new(warming.clone())).await });
    shared
}

/// Serves Streamable HTTP on `addr` until a stop is requested, then drains
/// the requests in flight.
async fn serve_http(
    args: &ServeArgs,
    addr: SocketAddr,
    admitted: Admission,
    shared: Arc<Gateway>,
    exposure_name: &str,
) -> Result<()> {
    let max_sessions = args
        .max_sessions
        .map_or(http::DEFAULT_MAX_SESSIONS, |n| n.get());
    let drain = args
        .drain_timeout
        .map_or(http::DEFAULT_DRAIN, std::time::Duration::from_secs);
    // The stop after the drain must fit in the time a signal leaves.
    mcpw::processes::set_grace(drain + std::time::Duration::from_secs(10));
    let options = HttpOptions {
        addr,
        tokens: admitted.tokens,
        max_sessions,
        drain,
        session_idle: args
            .session_idle
            .map_or(http::DEFAULT_SESSION_IDLE, std::time::Duration::from_secs),
        oauth: shared.host().config().serve.oauth.clone(),
        oauth_secrets: admitted.oauth_secrets,
    };
    let shutdown = async {
        mcpw::processes::stop_requested().await;
        eprintln!("mcpw: stopping");
    };
    http::serve(
        shared,
        options,
        |a| eprintln!("mcpw: serving MCP on http://{a}/mcp ({exposure_name})"),
        shutdown,
    )
    .await?;
    Ok(())
}

/// Serves the live page beside the stdio session (`--page`).
async fn open_page(shared: &Arc<Gateway>, addr: &str) -> Result<()> {
    let addr = parse_addr("--page", addr)?;
    if !addr.ip().is_loopback() {
        bail!(
            "--page {addr}: the page beside a stdio session is for this machine: give a loopback address"
        );
    }
    let stop = mcpw::processes::stop_requested();
    let url = http::serve_page(shared.clone(), addr, stop)
        .await
        .context("serving the live page")?;
    eprintln!("mcpw: live page on {url}");
    Ok(())
}

/// Serves the one MCP session on standard input and output until the client
/// leaves or a stop is requested.
async fn serve_stdio(
    shared: Arc<Gateway>,
    exposure_name: &str,
    result_files: std::path::PathBuf,
) -> Result<()> {
    tracing::info!("serving MCP on stdio ({exposure_name})");
    // The client's requests are read while fewer than this many wait for
    // their answers: one that does not read them is not read either.
    let max = shared.host().config().settings.max_requests_in_flight;
    let (read, write) = stdio();
    let transport = Gated::new(AsyncRwTransport::new_server(read, write), max);
    let service = Session::with_result_files(shared, result_files)
        .serve(transport)
        .await
        .context("MCP initialize on stdio")?;
    tokio::select! {
        _ = service.waiting() => {}
        _ = mcpw::processes::stop_requested() => eprintln!("mcpw: stopping"),
    }
    Ok(())
}
