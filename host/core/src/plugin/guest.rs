//! A loaded guest component and its live, sandboxed instance.
//!
//! An instance is created lazily; after a trap (including a limit hit) it is
//! dropped, and the next call creates a fresh one.

use super::compile_cache::{CompileCache, Compiled};
use super::engine::PluginEngine;
use super::limits::{LimitHit, Limits};
use super::services::HostServices;
use super::state::{Clocks, GuestState};
use super::{PluginError, Role};
use crate::config::Grants;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::Store;
use wasmtime::component::{Component, Instance, InstancePre};

/// What a guest is loaded with.
#[derive(Clone)]
pub struct LoadOptions {
    /// Sandbox limits.
    pub limits: Limits,
    /// Capabilities beyond `log`.
    pub grants: Grants,
    /// The host's side of the imports.
    pub services: Arc<dyn HostServices>,
    /// Where compiled guests are cached.
    pub cache: CompileCache,
}

/// A compiled guest, ready to instantiate.
pub struct GuestModule {
    name: Arc<str>,
    pub(crate) pre: InstancePre<GuestState>,
    component: Component,
    compiled: Compiled,
    options: LoadOptions,
}

const WASM_MAGIC: &[u8; 4] = b"\0asm";
/// Layer/version bytes of a core module; components use a different layer.
const CORE_VERSION: [u8; 4] = [1, 0, 0, 0];

impl GuestModule {
    /// Compiles (or loads from the cache) and links a guest. `name` identifies it
    /// in errors and logs (a path, or `default`).
    pub fn load(
        name: &str,
        wasm: &[u8],
        options: LoadOptions,
    ) -> Result<Arc<GuestModule>, PluginError> {
        let name: Arc<str> = name.into();
        let fail = |message: String| PluginError::Load {
            guest: name.to_string(),
            message,
        };
        if wasm.len() < 8 || &wasm[..4] != WASM_MAGIC {
            return Err(fail("not a WebAssembly file".into()));
        }
        if wasm[4..8] == CORE_VERSION {
            return Err(fail(
                "this is a core WebAssembly module, not a component; build it for wasm32-wasip2 \
                 (or wrap it with `wasm-tools component new`)"
                    .into(),
            ));
        }
        let engine = PluginEngine::shared();
        let (component, compiled) = options
            .cache
            .load(engine.engine(), wasm)
            .map_err(|e| fail(format!("cannot compile: {e:#}")))?;
        let pre = engine
            .linker()
            .instantiate_pre(&component)
            .map_err(|e| fail(link_message(&e)))?;
        Ok(Arc::new(GuestModule {
            name,
            pre,
            component,
            compiled,
            options,
        }))
    }

    /// A store for an instance of this guest under `limits`: its memory cap,
    /// and a deadline on the guest's own running time (and, for a script run,
    /// on the run's wall time and cancellation).
    fn new_store(&self, limits: &Limits) -> Store<GuestState> {
        self.store_with(limits, Clocks::Host)
    }

    /// [`GuestModule::new_store`] with the given clocks.
    pub(crate) fn store_with(&self, limits: &Limits, clocks: Clocks) -> Store<GuestState> {
        let o = &self.options;
        let state = GuestState::new(
            self.name.clone(),
            limits,
            o.grants,
            o.services.clone(),
            clocks,
        );
        let mut store = Store::new(PluginEngine::shared().engine(), state);
        store.limiter(|s| &mut s.limiter);
        // The deadline is the guest's own running time: when the epoch
        // passes it, time spent waiting in host calls (a server's answer)
        // is given back, and only a guest past its budget traps.
        let budget = limits.deadline;
        store.epoch_deadline_callback(move |mut store| {
            let state = store.data_mut();
            if let Some(stop) = state.script.as_ref().and_then(|r| r.interrupt()) {
                state.stopped = Some(stop);
                return Err(wasmtime::Trap::Interrupt.into());
            }
            let used = state.guest_time();
            if used >= budget {
                return Err(wasmtime::Trap::Interrupt.into());
            }
            // A script run wakes at least every 100 ms to see its wall time
            // and a cancellation.
            let mut ticks = PluginEngine::deadline_ticks(budget - used);
            if state.script.is_some() {
                ticks = ticks.min(PluginEngine::deadline_ticks(Duration::from_millis(100)));
            }
            Ok(wasmtime::UpdateDeadline::Continue(ticks))
        });
        store.set_epoch_deadline(PluginEngine::deadline_ticks(limits.deadline));
        store
    }

    /// The guest's name in errors and logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it was compiled now or came from the cache.
    pub fn compiled(&self) -> Compiled {
        self.compiled
    }

    /// The compiled component.
    pub fn component(&self) -> &Component {
        &self.component
    }

    /// The roles this guest exports.
    pub fn roles(&self) -> Vec<Role> {
        Role::ALL.into_iter().filter(|&r| self.fills(r)).collect()
    }

    /// Whether the guest exports `role`, in any version the host speaks.
    fn fills(&self, role: Role) -> bool {
        role.export_names()
            .iter()
            .any(|name| self.component.get_export_index(None, name).is_some())
    }

    /// Fails with a clear message unless the guest exports `role`.
    pub fn require(&self, role: Role) -> Result<(), PluginError> {
        if self.fills(role) {
            return Ok(());
        }
        let exports: Vec<String> = self
            .component
            .component_type()
            .exports(PluginEngine::shared().engine())
            .map(|(name, _)| name.to_string())
            .collect();
        Err(PluginError::MissingRole {
            guest: self.name.to_string(),
            role,
            exports,
        })
    }
}

fn link_message(e: &wasmtime::Error) -> String {
    let text = format!("{e:#}");
    if text.contains("matching implementation was not found in the linker") {
        format!(
            "it imports something mcpw does not provide ({text}); guests may import `mcpw:plugin` 0.1 or 0.2 and WASI 0.2"
        )
    } else {
        format!("cannot link: {text}")
    }
}

struct Live {
    store: Store<GuestState>,
    instance: Instance,
}

/// A live instance of a guest, re-created after any trap.
pub(crate) struct GuestInstance {
    module: Arc<GuestModule>,
    live: Option<Live>,
    generation: u64,
}

impl GuestInstance {
    pub(crate) fn new(module: Arc<GuestModule>) -> Self {
        GuestInstance {
            module,
            live: None,
            generation: 0,
        }
    }

    pub(crate) fn module(&self) -> &Arc<GuestModule> {
        &self.module
    }

    /// Changes whenever the instance is replaced; guest resources of an older
    /// generation are gone.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Drops the live instance and its memory; the next call makes a new one.
    pub(crate) fn release(&mut self) {
        if self.live.take().is_some() {
            self.generation += 1;
        }
    }

    fn instantiate(&mut self) -> Result<&mut Live, PluginError> {
        if self.live.is_none() {
            let m = &self.module;
            let mut store = m.new_store(&m.options.limits);
            let _running = PluginEngine::shared().enter();
            match m.pre.instantiate(&mut store) {
                Ok(instance) => self.live = Some(Live { store, instance }),
                Err(e) => return Err(classify(&m.name, &m.options.limits, e, store.data_mut())),
            }
        }
        Ok(self.live.as_mut().expect("instantiated above"))
    }

    /// Runs one call into the guest under the sandbox's deadline. On a trap the
    /// instance is dropped and the error names the guest and the limit it hit.
    /// `what` names the call in its trace span.
    pub(crate) fn run<R>(
        &mut self,
        what: &'static str,
        f: impl FnOnce(&mut Store<GuestState>, &Instance) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let limits = self.module.options.limits;
        let name = self.module.name.clone();
        let span = crate::observe::start(
            || format!("guest {what}"),
            || {
                use crate::observe::AttributeValue::{Number, Text};
                let role = match what {
                    "search" | "build" => "ranking",
                    "names" => "naming",
                    "select" => "directTools",
                    "guard" => "guard",
                    _ => "",
                };
                vec![
                    ("mcpw.guest.name", Text(name.to_string())),
                    ("mcpw.guest.call", Text(what.into())),
                    ("mcpw.guest.role", Text(role.into())),
                    (
                        "mcpw.guest.deadline_ms",
                        Number(limits.deadline.as_millis() as i64),
                    ),
                    (
                        "mcpw.guest.memory_limit_bytes",
                        Number(limits.memory_bytes as i64),
                    ),
                ]
            },
        );
        let live = self.instantiate()?;
        live.store.data_mut().begin_call();
        live.store
            .set_epoch_deadline(PluginEngine::deadline_ticks(limits.deadline));
        let result = {
            let _running = PluginEngine::shared().enter();
            f(&mut live.store, &live.instance)
        };
        match result {
            Ok(r) => Ok(r),
            Err(e) => {
                let err = classify(&name, &limits, e, live.store.data_mut());
                if let Some(span) = &span {
                    let kind = match err {
                        PluginError::Limit { .. } => "guest_limit",
                        _ => "guest_trap",
                    };
                    span.fail(kind, err.to_string());
                }
                tracing::debug!("{err}; the guest instance is replaced");
                self.live = None;
                self.generation += 1;
                Err(err)
            }
        }
    }
}

fn classify(
    guest: &str,
    limits: &Limits,
    e: wasmtime::Error,
    state: &mut GuestState,
) -> PluginError {
    let guest = guest.to_string();
    if let Some(hit) = state.limiter.hit.take() {
        return PluginError::Limit { guest, hit };
    }
    if matches!(
        e.downcast_ref::<wasmtime::Trap>(),
        Some(wasmtime::Trap::Interrupt)
    ) {
        return PluginError::Limit {
            guest,
            hit: LimitHit::Deadline(limits.deadline),
        };
    }
    let mut message = match e.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{e:#}"),
    };
    if let Some(panic) = state.last_error.take() {
        message = format!("{message} ({panic})");
    }
    PluginError::Trap { guest, message }
}
