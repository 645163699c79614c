//! What each way of running guests costs a guest call
//! (`cargo bench -p mcpw-core --bench engines`): the default guest's naming
//! export called as the plugin engine calls guests today (synchronously,
//! from a blocking thread), and as it would be called if guests moved onto
//! the component servers' way (`call_async` in a tokio task, on an engine
//! whose stores yield at each epoch tick). The difference is what every
//! naming, ranking and guard call would pay for a server engine shared with
//! the guests.
//!
//! `BENCH_CALLS` sets the number of calls of each way (default 20000).

use mcpw_test_support::stats::percentile;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, Func, Linker, ResourceTable, Val};
use wasmtime::{Config, Engine, OptLevel, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// An engine configured as the plugin engine is (the same knobs for both
/// ways, so that only the way of calling differs).
fn engine() -> Engine {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.cranelift_opt_level(OptLevel::Speed);
    config.max_wasm_stack(512 * 1024);
    Engine::new(&config).expect("an engine")
}

fn store(engine: &Engine) -> Store<State> {
    let state = State {
        wasi: WasiCtx::builder().build(),
        table: ResourceTable::new(),
    };
    let mut store = Store::new(engine, state);
    store.set_epoch_deadline(1);
    store
}

/// The guest's imports of the `mcpw:plugin` host as functions that fail:
/// `names` calls none of them, and WASI stays linked as the host links it.
fn stub_host<T: 'static>(linker: &mut Linker<T>, component: &Component) {
    use wasmtime::component::types::ComponentItem;
    let engine = component.engine().clone();
    for (name, item) in component.component_type().imports(&engine) {
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            continue;
        };
        if !name.starts_with("mcpw:plugin/") {
            continue;
        }
        let mut at = linker.instance(name).expect("an instance");
        for (func, item) in instance.exports(&engine) {
            if let ComponentItem::ComponentFunc(_) = item.ty {
                at.func_new(func, |_, _, _, _| {
                    Err(wasmtime::format_err!("not linked here"))
                })
                .expect("a stub");
            }
        }
    }
}

/// `names([], {prefix: server, reserved: []})`.
fn arguments() -> [Val; 2] {
    let options = Val::Record(vec![
        ("prefix".into(), Val::Enum("server".into())),
        ("reserved".into(), Val::List(vec![])),
    ]);
    [Val::List(vec![]), options]
}

/// The guest's `names` function: the exported naming interface, whichever
/// version of the contract the guest exports.
fn names(
    component: &Component,
    store: &mut Store<State>,
    instance: &wasmtime::component::Instance,
) -> Func {
    let engine = store.engine().clone();
    let interface = component
        .component_type()
        .exports(&engine)
        .map(|(name, _)| name.to_string())
        .find(|n| n.starts_with("mcpw:plugin/naming@"))
        .expect("the default guest names tools");
    let at = instance
        .get_export_index(&mut *store, None, &interface)
        .expect("the naming interface");
    let func = instance
        .get_export_index(&mut *store, Some(&at), "names")
        .expect("names");
    instance.get_func(&mut *store, func).expect("a function")
}

fn sync_calls(calls: usize) -> Vec<Duration> {
    let engine = engine();
    let component = Component::new(&engine, mcpw_core::plugin::DEFAULT_GUEST).expect("the guest");
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("WASI");
    stub_host(&mut linker, &component);
    let mut store = store(&engine);
    let instance = linker
        .instantiate(&mut store, &component)
        .expect("instance");
    let func = names(&component, &mut store, &instance);
    let args = arguments();
    let mut results = [Val::Bool(false)];
    (0..calls)
        .map(|_| {
            let start = Instant::now();
            func.call(&mut store, &args, &mut results).expect("a call");
            start.elapsed()
        })
        .collect()
}

fn async_calls(calls: usize) -> Vec<Duration> {
    let engine = engine();
    let component = Component::new(&engine, mcpw_core::plugin::DEFAULT_GUEST).expect("the guest");
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("WASI");
    stub_host(&mut linker, &component);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut store = store(&engine);
        // As the server engine: yield at each epoch tick.
        store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Yield(1)));
        let instance = linker
            .instantiate_async(&mut store, &component)
            .await
            .expect("instance");
        let func = names(&component, &mut store, &instance);
        let args = arguments();
        let mut results = [Val::Bool(false)];
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            let start = Instant::now();
            func.call_async(&mut store, &args, &mut results)
                .await
                .expect("a call");
            times.push(start.elapsed());
        }
        times
    })
}

fn report(name: &str, mut times: Vec<Duration>) -> f64 {
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let p50 = us(percentile(&times, 0.5));
    println!(
        "{name:<34} p50 {p50:>7.2} µs   p99 {:>7.2} µs",
        us(percentile(&times, 0.99))
    );
    p50
}

fn main() {
    let calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    // Warm both paths first (code, caches), then measure each.
    sync_calls(calls / 10);
    async_calls(calls / 10);
    let sync = report("guest call, sync (today)", sync_calls(calls));
    let asynchronous = report("guest call, async + epoch yield", async_calls(calls));
    println!(
        "async adds {:.2} µs a call ({:+.0}%)",
        asynchronous - sync,
        (asynchronous / sync - 1.0) * 100.0
    );
}
