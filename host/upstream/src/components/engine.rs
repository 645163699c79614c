//! The wasmtime [`Engine`] of component servers, apart from the guests' one:
//! servers are long-running and asynchronous (their WASI streams are tokio
//! pipes, and `wasi:http` and `wasi:keyvalue` hosts are async), where guests
//! are short synchronous calls. Compiled components are cached on disk by
//! digest and kept pre-instantiated, so a warm start only instantiates.

use super::ServerState;
use crate::plugin::compile_cache::CompileCache;
use crate::plugin::ticker::{Ticker, Ticking};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use wasmtime::component::Linker;
use wasmtime::{Config, Engine, OptLevel, Store, UpdateDeadline};
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi_http::p2::bindings::ProxyPre;

/// A component ready to instantiate, by the shape it has.
#[derive(Clone)]
pub enum Prepared {
    /// A `wasi:cli/command`: MCP on its standard streams.
    Command(CommandPre<ServerState>),
    /// A `wasi:http/proxy`: Streamable HTTP through its incoming handler.
    Http(ProxyPre<ServerState>),
}

/// How often the epoch advances while an instance lives: how often a busy
/// component yields its thread to other tasks.
pub(crate) const TICK: Duration = Duration::from_millis(10);

/// The engine, its linker, the components ready to instantiate, and the
/// epoch ticker.
pub struct ServerEngine {
    engine: Engine,
    linker: Linker<ServerState>,
    ready: Mutex<HashMap<[u8; 32], Prepared>>,
    ticker: Ticker,
}

impl ServerEngine {
    /// The engine every component server of the process runs on.
    pub fn shared() -> &'static ServerEngine {
        static SHARED: OnceLock<ServerEngine> = OnceLock::new();
        SHARED.get_or_init(ServerEngine::new)
    }

    fn new() -> ServerEngine {
        let mut config = Config::new();
        // Servers are components (`wasi:cli/command` today). Their WASI host is
        // async (wasmtime's async support is always on): a server waiting on
        // its input holds no thread.
        config.wasm_component_model(true);
        // The epoch makes a busy server yield its thread at every tick, so one that
        // computes never starves the gateway, and lets a stop reach it.
        config.epoch_interruption(true);
        // A server runs for long: worth optimising once at compile time.
        config.cranelift_opt_level(OptLevel::Speed);
        let engine = Engine::new(&config).expect("the server engine configuration is valid");
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("link WASI");
        // Name lookups only of the hosts granted, in front of WASI's own.
        linker.allow_shadowing(true);
        super::lookups::add_to_linker(&mut linker, ServerState::lookups)
            .expect("link wasi:sockets/ip-name-lookup");
        // Writes into folders granted read-only, seen before WASI refuses them.
        super::writes::add_to_linker(&mut linker).expect("link wasi:filesystem/types");
        linker.allow_shadowing(false);
        // Outgoing requests of either shape pass the permissions' hooks.
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).expect("link wasi:http");
        // State that outlives an instance, in buckets of the server's own.
        super::keyvalue::add_to_linker(&mut linker, ServerState::keyvalue)
            .expect("link wasi:keyvalue");
        // Ticks while an instance lives: an idle process pays nothing.
        let ticker = Ticker::spawn(&engine, TICK, "mcpw-server-epoch");
        ServerEngine {
            engine,
            linker,
            ready: Mutex::default(),
            ticker,
        }
    }

    /// `wasm` compiled (from `cache` when it holds it) and pre-instantiated,
    /// once per digest.
    pub fn prepare(&self, wasm: &[u8], cache: &CompileCache) -> Result<Prepared, String> {
        let digest: [u8; 32] = Sha256::digest(wasm).into();
        if let Some(pre) = lock(&self.ready).get(&digest) {
            return Ok(pre.clone());
        }
        let (component, _) = cache
            .load(&self.engine, wasm)
            .map_err(|e| format!("not a component mcpw can run: {e:#}"))?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| format!("it needs what mcpw does not provide: {e:#}"))?;
        let prepared = match ProxyPre::new(pre.clone()) {
            Ok(proxy) => Prepared::Http(proxy),
            Err(_) => Prepared::Command(CommandPre::new(pre).map_err(|e| {
                format!("neither a `wasi:cli/command` nor a `wasi:http/proxy` component: {e:#}")
            })?),
        };
        lock(&self.ready).insert(digest, prepared.clone());
        Ok(prepared)
    }

    /// A store for an instance holding `state`, within its memory, yielding
    /// its thread at every tick (so that a busy component never starves the
    /// gateway, and a stop reaches it).
    pub fn store(&self, state: ServerState) -> Store<ServerState> {
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Yield(1)));
        store
    }

    /// Counts an instance as live until the guard drops, so the epoch ticks.
    pub fn live(&self) -> Ticking {
        self.ticker.enter()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
