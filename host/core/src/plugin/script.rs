//! The script role (code mode): runs an agent's script in a script guest,
//! each run in a fresh instance taken from a small pool of warmed ones (filled
//! again in the background as they are taken), under the run's limits. The
//! script's calls go to a [`Toolbox`], which the gateway implements for a
//! session. The guest also projects JSON with an agent's jq expression
//! ([`Scripter::select`]), sandboxed the same way.

mod select;
#[cfg(test)]
mod tests;

use super::state::toolbox::wit_tool_info;
pub use super::state::toolbox::{CallRecord, Done, ScriptControl, SkillFile, ToolInfo, Toolbox};
pub(crate) use super::state::toolbox::{Run, Stop};
pub use crate::config::{SCRIPT_LIMIT_KEYS, ScriptLimits};
pub use select::SelectFailure;

use super::engine::PluginEngine;
use super::exports::{ScriptExports, ScriptIndices};
use super::guest::GuestModule;
use super::limits::LimitHit;
use super::state::{Clocks, GuestState};
use super::wit::latest::exports::mcpw::plugin::script as wit_script;
use super::wit::latest::mcpw::plugin::toolbox as wit_toolbox;
use super::{PluginError, Role};
use std::sync::{Arc, Mutex};
use wasmtime::Store;
use wasmtime::component::Instance;

/// Why a script did not give a value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScriptFailure {
    /// It does not parse.
    #[error("syntax error: {0}")]
    Syntax(String),
    /// It threw.
    #[error("{0}")]
    Thrown(String),
    /// It waits on nothing that can settle.
    #[error("{0}")]
    Stalled(String),
    /// Its value is not JSON.
    #[error("the script's value cannot be written as JSON: {0}")]
    InvalidValue(String),
    /// A limit stopped it.
    #[error("the script was stopped: it exceeded its {0}")]
    Limit(LimitHit),
    /// The client cancelled it.
    #[error("the script was cancelled")]
    Cancelled,
    /// The guest failed (a bug in the guest, not the script).
    #[error("{0}")]
    Guest(String),
}

/// What a run gave.
#[derive(Clone, Debug)]
pub struct ScriptReport {
    /// The script's value as JSON text, or why there is none.
    pub value: Result<String, ScriptFailure>,
    /// What it logged.
    pub logs: Vec<String>,
    /// Its calls, in the order they were started, with their outcomes.
    pub calls: Vec<CallRecord>,
}

/// Warmed instances kept ready: the next run's start costs a pop.
const POOL: usize = 2;

struct Warm {
    store: Store<GuestState>,
    instance: Instance,
    indices: ScriptIndices,
}

/// A script guest and its pool of warmed instances.
pub struct Scripter {
    module: Arc<GuestModule>,
    indices: ScriptIndices,
    limits: ScriptLimits,
    pool: Mutex<Vec<Warm>>,
    /// Whether a thread is filling the pool now.
    filling: std::sync::atomic::AtomicBool,
}

impl Scripter {
    /// A scripter over `module`, which must export the script role; pooled
    /// instances get `limits.memory_bytes`.
    pub fn new(module: Arc<GuestModule>, limits: ScriptLimits) -> Result<Arc<Self>, PluginError> {
        module.require(Role::Script)?;
        let indices = ScriptIndices::new(&module.pre).map_err(|e| PluginError::Load {
            guest: module.name().to_string(),
            message: format!("{e:#}"),
        })?;
        Ok(Arc::new(Scripter {
            module,
            indices,
            limits,
            pool: Mutex::new(Vec::new()),
            filling: Default::default(),
        }))
    }

    /// The configured limits.
    pub fn limits(&self) -> ScriptLimits {
        self.limits
    }

    /// The guest's name.
    pub fn name(&self) -> &str {
        self.module.name()
    }

    /// Fills the pool (blocking); call from a blocking thread.
    pub fn fill(&self) {
        while self.lock_pool().len() < POOL {
            match self.warm(self.limits.memory_bytes) {
                Ok(w) => self.lock_pool().push(w),
                Err(e) => {
                    tracing::warn!(
                        "cannot prepare an instance of script guest {}: {e}",
                        self.name()
                    );
                    return;
                }
            }
        }
    }

    /// Fills the pool again on a thread of its own, unless one is at it.
    fn refill(self: &Arc<Self>) {
        use std::sync::atomic::Ordering;
        if self.filling.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = self.clone();
        std::thread::spawn(move || {
            me.fill();
            me.filling.store(false, Ordering::Release);
        });
    }

    fn lock_pool(&self) -> std::sync::MutexGuard<'_, Vec<Warm>> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new instance with its engine ready.
    fn warm(&self, memory_bytes: usize) -> Result<Warm, PluginError> {
        let mut warm = self.instantiate(memory_bytes)?;
        let _running = PluginEngine::shared().enter();
        warm.indices
            .load(&mut warm.store, &warm.instance)
            .and_then(|guest| guest.call_warm(&mut warm.store))
            .map_err(|e| trap(self.name(), e))?;
        Ok(warm)
    }

    /// A new instance, its engine not started yet.
    fn instantiate(&self, memory_bytes: usize) -> Result<Warm, PluginError> {
        let limits = crate::plugin::Limits {
            memory_bytes,
            deadline: self.limits.cpu,
        };
        // A script sees no host clock: it could time other tenants' work.
        let mut store = self.module.store_with(&limits, Clocks::Stopped);
        let instance = {
            let _running = PluginEngine::shared().enter();
            self.module
                .pre
                .instantiate(&mut store)
                .map_err(|e| trap(self.name(), e))?
        };
        Ok(Warm {
            store,
            instance,
            indices: self.indices.clone(),
        })
    }

    /// The code tool's description from the guest: how to write a script.
    pub fn usage(&self) -> Result<String, PluginError> {
        self.with_instance(|store, guest| guest.call_usage(store))
    }

    /// Each tool's declaration in the script language.
    pub fn declare(&self, tools: &[ToolInfo]) -> Result<Vec<String>, PluginError> {
        let input: Vec<wit_toolbox::ToolInfo> = tools.iter().map(wit_tool_info).collect();
        let out = self.with_instance(|store, guest| guest.call_declare(store, &input))?;
        if out.len() != tools.len() {
            return Err(PluginError::BadOutput {
                guest: self.name().to_string(),
                role: Role::Script,
                message: format!(
                    "declare gave {} declarations for {} tools",
                    out.len(),
                    tools.len()
                ),
            });
        }
        Ok(out)
    }

    /// Runs a short call on a pooled instance, which goes back to the pool.
    fn with_instance<R>(
        &self,
        f: impl FnOnce(&mut Store<GuestState>, &ScriptExports) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let mut warm = match self.lock_pool().pop() {
            Some(w) => w,
            None => self.warm(self.limits.memory_bytes)?,
        };
        warm.store
            .set_epoch_deadline(PluginEngine::deadline_ticks(self.limits.cpu));
        warm.store.data_mut().begin_call();
        let result = {
            let _running = PluginEngine::shared().enter();
            warm.indices
                .load(&mut warm.store, &warm.instance)
                .and_then(|guest| f(&mut warm.store, &guest))
        };
        match result {
            Ok(r) => {
                self.lock_pool().push(warm);
                Ok(r)
            }
            Err(e) => Err(trap(self.name(), e)),
        }
    }

    /// Runs `code` to the end under `limits`, its calls going to `toolbox`.
    /// Blocks: call from a blocking thread. `control` cancels it.
    pub fn run(
        self: &Arc<Self>,
        code: &str,
        limits: ScriptLimits,
        toolbox: Arc<dyn Toolbox>,
        control: &ScriptControl,
    ) -> ScriptReport {
        let limits = limits.within(self.limits);
        let pooled = (limits.memory_bytes == self.limits.memory_bytes)
            .then(|| self.lock_pool().pop())
            .flatten();
        let warm = match pooled {
            Some(w) => {
                // The next script finds an instance ready too.
                self.refill();
                Ok(w)
            }
            None => self.warm(limits.memory_bytes),
        };
        run_in(self.name(), warm, code, limits, toolbox, control)
    }
}

impl std::fmt::Debug for Scripter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripter")
            .field("guest", &self.name())
            .finish()
    }
}

fn trap(guest: &str, e: wasmtime::Error) -> PluginError {
    PluginError::Trap {
        guest: guest.to_string(),
        message: format!("{e:#}"),
    }
}

/// Runs `code` in `warm` (a fresh instance) and reports what it did.
fn run_in(
    guest: &str,
    warm: Result<Warm, PluginError>,
    code: &str,
    limits: ScriptLimits,
    toolbox: Arc<dyn Toolbox>,
    control: &ScriptControl,
) -> ScriptReport {
    let mut warm = match warm {
        Ok(w) => w,
        Err(e) => return failed(ScriptFailure::Guest(e.to_string())),
    };
    warm.store.data_mut().script = Some(Run::new(toolbox.clone(), limits, control));
    if control.cancelled() {
        return failed(ScriptFailure::Cancelled);
    }
    warm.store.data_mut().begin_call();
    warm.store
        .set_epoch_deadline(PluginEngine::deadline_ticks(limits.cpu.min(limits.wall)));
    let result = {
        let _running = PluginEngine::shared().enter();
        warm.indices
            .load(&mut warm.store, &warm.instance)
            .and_then(|g| g.call_run(&mut warm.store, code))
    };
    toolbox.stop();
    report(guest, &mut warm.store, result, limits)
}

fn failed(failure: ScriptFailure) -> ScriptReport {
    ScriptReport {
        value: Err(failure),
        logs: Vec::new(),
        calls: Vec::new(),
    }
}

fn report(
    guest: &str,
    store: &mut wasmtime::Store<GuestState>,
    result: wasmtime::Result<wit_script::Outcome>,
    limits: ScriptLimits,
) -> ScriptReport {
    let state = store.data_mut();
    let calls = state
        .script
        .take()
        .map(Run::into_records)
        .unwrap_or_default();
    let (value, logs) = match result {
        Ok(outcome) => (value_of(outcome.value), outcome.logs),
        Err(e) => (Err(stopped(guest, state, e, limits)), Vec::new()),
    };
    let size = value.as_ref().map_or(0, String::len) + logs.iter().map(String::len).sum::<usize>();
    let value = if size > limits.output_bytes {
        Err(ScriptFailure::Limit(LimitHit::Output(limits.output_bytes)))
    } else {
        value
    };
    ScriptReport { value, logs, calls }
}

fn value_of(value: Result<String, wit_script::ScriptError>) -> Result<String, ScriptFailure> {
    value.map_err(|e| match e {
        wit_script::ScriptError::Syntax(m) => ScriptFailure::Syntax(m),
        wit_script::ScriptError::Thrown(m) => ScriptFailure::Thrown(m),
        wit_script::ScriptError::Stalled(m) => ScriptFailure::Stalled(m),
        wit_script::ScriptError::InvalidValue(m) => ScriptFailure::InvalidValue(m),
    })
}

/// Why a run trapped: a limit the host or the sandbox enforced, a
/// cancellation, or a fault of the guest.
fn stopped(
    guest: &str,
    state: &mut GuestState,
    e: wasmtime::Error,
    limits: ScriptLimits,
) -> ScriptFailure {
    if let Some(stop) = state.stopped.take() {
        return match stop {
            Stop::Limit(hit) => ScriptFailure::Limit(hit),
            Stop::Cancelled => ScriptFailure::Cancelled,
        };
    }
    if let Some(hit) = state.limiter.hit.take() {
        return ScriptFailure::Limit(hit);
    }
    if matches!(
        e.downcast_ref::<wasmtime::Trap>(),
        Some(wasmtime::Trap::Interrupt)
    ) {
        return ScriptFailure::Limit(LimitHit::Deadline(limits.cpu));
    }
    if matches!(
        e.downcast_ref::<wasmtime::Trap>(),
        Some(wasmtime::Trap::StackOverflow)
    ) {
        return ScriptFailure::Thrown("the script nested too deeply (stack overflow)".into());
    }
    ScriptFailure::Guest(format!("script guest {guest} trapped: {e:#}"))
}
