//! The one wasmtime [`Engine`] of the process, its shared [`Linker`], and the
//! epoch ticker that enforces per-call deadlines.

use super::state::GuestState;
use super::ticker::{Ticker, Ticking};
use super::wit::latest::All as HostWorld;
use super::wit::since_v0_1_1::All as OlderWorld;
use std::sync::OnceLock;
use std::time::Duration;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, OptLevel};

/// How often the epoch advances while a guest runs: the resolution of deadlines.
pub const TICK: Duration = Duration::from_millis(5);

/// The process-wide engine, linker and ticker.
pub struct PluginEngine {
    engine: Engine,
    linker: Linker<GuestState>,
    ticker: Ticker,
}

impl PluginEngine {
    /// The engine shared by every guest of the process, created on first use.
    pub fn shared() -> &'static PluginEngine {
        static SHARED: OnceLock<PluginEngine> = OnceLock::new();
        SHARED.get_or_init(PluginEngine::new)
    }

    fn new() -> PluginEngine {
        let mut config = Config::new();
        // Guests are components that speak the `mcpw:plugin` WIT contract.
        config.wasm_component_model(true);
        // Per-call wall-clock deadlines: the ticker thread advances the epoch and a
        // store past its deadline traps. Costs a little guest speed; fuel costs more.
        config.epoch_interruption(true);
        // Ranking code runs on every search: worth optimising once at compile time.
        config.cranelift_opt_level(OptLevel::Speed);
        // Guest calls are synchronous (no async_support) and made from blocking
        // threads, never from async tasks.
        // Deep guest recursion must trap cleanly well inside the 2 MiB stacks of
        // tokio's blocking threads and of test threads.
        config.max_wasm_stack(512 * 1024);
        let engine = Engine::new(&config).expect("the plugin engine configuration is valid");
        let linker = build_linker(&engine);
        let ticker = Ticker::spawn(&engine, TICK, "mcpw-epoch");
        PluginEngine {
            engine,
            linker,
            ticker,
        }
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn linker(&self) -> &Linker<GuestState> {
        &self.linker
    }

    /// Marks a guest call as running until the guard drops, so the ticker ticks.
    pub(crate) fn enter(&self) -> Ticking {
        self.ticker.enter()
    }

    /// The epoch deadline, in ticks, for a wall-clock budget. One extra tick
    /// covers the part of the current tick that has already elapsed.
    pub(crate) fn deadline_ticks(budget: Duration) -> u64 {
        (budget.as_micros() / TICK.as_micros()) as u64 + 1
    }
}

/// WASI preview 2 (the Rust standard library of a wasm32-wasip2 guest needs its
/// interfaces to link; the context behind them grants nothing) plus the
/// `mcpw:plugin` host interfaces of every version the host speaks (0.1.x and
/// the latest: each guest links against the one it imports).
fn build_linker(engine: &Engine) -> Linker<GuestState> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("link WASI");
    HostWorld::add_to_linker::<GuestState, HasSelf<GuestState>>(&mut linker, |state| state)
        .expect("link the mcpw host interfaces");
    OlderWorld::add_to_linker::<GuestState, HasSelf<GuestState>>(&mut linker, |state| state)
        .expect("link the mcpw 0.1 host interfaces");
    linker
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_is_never_shorter_than_the_budget() {
        assert_eq!(PluginEngine::deadline_ticks(Duration::ZERO), 1);
        assert_eq!(PluginEngine::deadline_ticks(TICK), 2);
        assert_eq!(PluginEngine::deadline_ticks(Duration::from_millis(100)), 21);
    }
}
