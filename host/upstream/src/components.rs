//! MCP servers as WebAssembly components: a server definition may name a
//! component (`"component": "./server.wasm"`) instead of a command or a URL.
//! mcpw runs it in its own process under wasmtime, a `wasi:cli/command` whose
//! standard input and output are pipes to mcpw, and speaks MCP to it as to a
//! stdio server: naming, the cache, lifecycle, search, guards, approval and
//! the rest apply unchanged.
//!
//! The instance reaches only what `permissions` grant (`sandbox`); its
//! memory is bounded, and a request it answers for longer than `timeoutMs`
//! (`meter`) stops it, the next request starting a fresh instance.

mod engine;
pub mod keyvalue;
mod lookups;
mod meter;
mod proxy;
mod sandbox;
mod source;
mod writes;

pub use engine::{Prepared, ServerEngine};
pub use proxy::HttpServer;
pub use sandbox::{memory_peak, refusals};

use crate::config::permissions::Permissions;
use crate::plugin::compile_cache::CompileCache;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::DuplexStream;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// How much of a message may wait in a pipe between mcpw and a component.
const PIPE_BYTES: usize = 256 * 1024;

/// What an instance's store holds.
pub struct ServerState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: sandbox::Limiter,
    http: wasmtime_wasi_http::WasiHttpCtx,
    hooks: proxy::Outgoing,
    kv: keyvalue::Scope,
}

impl ServerState {
    fn new(
        wasi: WasiCtx,
        permissions: &Permissions,
        allowed: Arc<sandbox::Allowed>,
        kv: keyvalue::Scope,
    ) -> ServerState {
        ServerState {
            wasi,
            table: ResourceTable::new(),
            limits: sandbox::limits(permissions),
            http: wasmtime_wasi_http::WasiHttpCtx::new(),
            hooks: proxy::Outgoing { allowed },
            kv,
        }
    }

    /// The instance's name lookups: WASI's, for the hosts it is granted.
    fn lookups(&mut self) -> lookups::Lookups<'_> {
        lookups::Lookups {
            sockets: wasmtime_wasi::sockets::WasiSocketsCtxView {
                ctx: self.wasi.sockets(),
                table: &mut self.table,
            },
            allowed: &self.hooks.allowed,
        }
    }

    /// The instance's `wasi:keyvalue` host.
    fn keyvalue(&mut self) -> keyvalue::KeyValue<'_> {
        keyvalue::KeyValue::new(&self.kv, &mut self.table)
    }
}

impl WasiView for ServerState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wasmtime_wasi_http::WasiHttpView for ServerState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// A started component server, by its shape.
pub enum Started {
    /// A `wasi:cli/command` instance, spoken to over its standard streams.
    Command(Instance),
    /// A `wasi:http/proxy` component, an instance per request.
    Http(Arc<HttpServer>),
}

/// What is told each message a component wrote.
pub type Answered = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// A running instance, as mcpw talks to it.
pub struct Instance {
    /// What the component writes (its standard output), to be read as a
    /// stdio server's is, telling [`Instance::answered`] each message.
    pub read: DuplexStream,
    /// Told each message the component wrote: its answers end the time
    /// `timeoutMs` bounds.
    pub answered: Answered,
    /// What the component reads (its standard input).
    pub write: meter::Sent<DuplexStream>,
    /// Its standard error.
    pub stderr: DuplexStream,
    /// Stops it when dropped.
    pub stop: Stop,
}

/// Where a component server is started from, and for whom.
pub struct Start<'a> {
    /// The component: a file, or an `https://` URL.
    pub file: &'a str,
    /// The sha256 its bytes must have (required for a URL).
    pub sha256: Option<&'a str>,
    /// What it may reach.
    pub permissions: &'a Permissions,
    /// `permissions.env` with its secrets resolved.
    pub env: &'a [(String, String)],
    /// Where compiled components are kept.
    pub cache_dir: PathBuf,
    /// The server's name (logs, its `wasi:keyvalue` buckets).
    pub server: &'a str,
    /// Where its `wasi:keyvalue` values are kept.
    pub stores: Arc<keyvalue::Stores>,
}

impl Start<'_> {
    fn scope(&self) -> keyvalue::Scope {
        keyvalue::Scope {
            stores: self.stores.clone(),
            server: self.server.to_string(),
        }
    }
}

/// Stops an instance when dropped (its connection closed).
pub struct Stop(tokio::task::AbortHandle);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts a component server: a command's instance, or a proxy ready for
/// requests. `stopped` is told why an instance stopped on its own (a trap, a
/// request past its time); `stderr` each line a proxy's instance wrote.
pub async fn start(
    from: Start<'_>,
    stopped: impl Fn(String) + Send + 'static,
    stderr: impl Fn(String) + Send + Sync + 'static,
) -> Result<Started, String> {
    let wasm = source::load(from.file, from.sha256, &from.cache_dir).await?;
    let cache = CompileCache::new(Some(from.cache_dir.clone()));
    // Compiling takes a while the first time: not on an async worker.
    let prepared =
        tokio::task::spawn_blocking(move || ServerEngine::shared().prepare(&wasm, &cache))
            .await
            .map_err(|e| e.to_string())??;
    let allowed = Arc::new(sandbox::resolve(&from.permissions.network).await);
    let name = Path::new(from.file)
        .file_name()
        .map_or("component".into(), |n| n.to_string_lossy().into_owned());
    match prepared {
        Prepared::Command(pre) => {
            command(pre, &from, allowed, &name, stopped).map(Started::Command)
        }
        Prepared::Http(pre) => Ok(Started::Http(Arc::new(HttpServer {
            pre,
            permissions: from.permissions.clone(),
            env: from.env.to_vec(),
            name,
            allowed,
            kv: from.scope(),
            stderr: Box::new(stderr),
        }))),
    }
}

/// Starts a command's instance over pipes to mcpw.
fn command(
    pre: wasmtime_wasi::p2::bindings::CommandPre<ServerState>,
    from: &Start<'_>,
    allowed: Arc<sandbox::Allowed>,
    name: &str,
    stopped: impl Fn(String) + Send + 'static,
) -> Result<Instance, String> {
    let (stdin, guest_stdin) = tokio::io::duplex(PIPE_BYTES);
    let (guest_stdout, stdout) = tokio::io::duplex(PIPE_BYTES);
    let (guest_stderr, stderr) = tokio::io::duplex(PIPE_BYTES);
    let streams = sandbox::Streams {
        stdin: guest_stdin,
        stdout: guest_stdout,
        stderr: guest_stderr,
    };
    let wasi =
        sandbox::command_context(from.permissions, from.env, name, streams, allowed.clone())?;
    let state = ServerState::new(wasi, from.permissions, allowed, from.scope());
    let meter = Arc::new(meter::Meter::default());
    let timeout = Duration::from_millis(from.permissions.timeout_ms);
    let ending = Ending {
        server: from.server.to_string(),
        stopped: Box::new(stopped),
    };
    let run = run(pre, state, meter.clone(), timeout, ending);
    let stop = Stop(tokio::spawn(run).abort_handle());
    Ok(Instance {
        read: stdout,
        answered: {
            let meter = meter.clone();
            Arc::new(move |line: &[u8]| meter.answered(line))
        },
        write: meter::Sent::new(stdin, meter),
        stderr,
        stop,
    })
}

/// Who is told how an instance ended.
struct Ending {
    server: String,
    stopped: Box<dyn Fn(String) + Send>,
}

impl Ending {
    fn stopped(&self, why: String) {
        tracing::warn!(server = %self.server, "{why}");
        (self.stopped)(why);
    }
}

/// Runs the instance to its end: the component returns (its input closed),
/// traps (its memory, a bug), or answers a request for too long.
async fn run(
    pre: wasmtime_wasi::p2::bindings::CommandPre<ServerState>,
    state: ServerState,
    meter: Arc<meter::Meter>,
    timeout: Duration,
    ending: Ending,
) {
    let engine = ServerEngine::shared();
    let _live = engine.live();
    let mut store = engine.store(state);
    let running = async {
        let command = pre.instantiate_async(&mut store).await?;
        command.wasi_cli_run().call_run(&mut store).await
    };
    let ended = tokio::select! {
        ended = running => ended,
        () = overdue(&meter, timeout) => {
            ending.stopped(format!(
                "the component answered a request for longer than its timeoutMs ({} ms) and was stopped; the next request starts it again",
                timeout.as_millis()
            ));
            return;
        }
    };
    match ended {
        Ok(Ok(())) => tracing::debug!(server = %ending.server, "the component ended"),
        Ok(Err(())) => ending.stopped("the component exited with an error".into()),
        Err(trap) => ending.stopped(format!("the component stopped: {trap:#}")),
    }
}

/// Resolves once a request has been outstanding for longer than `timeout`.
async fn overdue(meter: &meter::Meter, timeout: Duration) {
    let every = (timeout / 10).clamp(engine::TICK, Duration::from_secs(1));
    loop {
        tokio::time::sleep(every).await;
        if meter.longest().is_some_and(|t| t > timeout) {
            return;
        }
    }
}
