//! jq projections (`select`): an agent's jq expression evaluated on a JSON
//! value by the script guest, in a fresh instance under the script limits,
//! so that an expression that loops or grows without end stops the guest,
//! never the host.

use super::{PluginEngine, Scripter, wit_script};
use crate::plugin::limits::LimitHit;
use crate::plugin::state::GuestState;

/// Why a jq projection gave no value. Its text tells an agent what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectFailure {
    /// The expression is not valid jq.
    #[error("select: syntax error: {0}")]
    Syntax(String),
    /// The expression failed on this input.
    #[error("select: the expression failed on this input: {0}")]
    Runtime(String),
    /// The script guest does not evaluate this expression, or jq at all.
    #[error("select is not available: {0}")]
    Unsupported(String),
    /// A sandbox limit stopped it.
    #[error("select stopped: it exceeded its {0}; narrow the expression or its input")]
    Limit(LimitHit),
    /// The guest failed (a bug in the guest, not the expression).
    #[error("select failed: {0}")]
    Guest(String),
}

/// Memory a select gets beyond its input's share: the guest's own data and
/// the compiled jq standard library, with room for a modest output.
const HEADROOM: usize = 32 << 20;

/// Memory a select gets per byte of its input (as JSON text). The guest
/// holds the text copied in and the values parsed from it, then the output:
/// measured, 62 MB of objects with text need 300 MB for `length` and 365 MB
/// for `.`, and 37 MB of small arrays (`[1,true,null]`) 285 MB and 350 MB,
/// the worst case: a value parsed from a few bytes of text takes a hundred.
const PER_INPUT_BYTE: usize = 10;

/// Most memory a select gets however large its input, well within a 32-bit
/// guest's 4 GiB: a larger input is stopped by the memory limit.
const MEMORY_MAX: usize = 1 << 30;

/// The memory limit of a select on an input of `input_bytes`: the script
/// limit, or more when the input needs it. An input that fits the limit of a
/// script must not fail for its size alone, and any input is copied whole
/// into the guest before the expression runs.
pub(super) fn memory_for(script_memory: usize, input_bytes: usize) -> usize {
    let needed = input_bytes
        .saturating_mul(PER_INPUT_BYTE)
        .saturating_add(HEADROOM)
        .min(MEMORY_MAX);
    script_memory.max(needed)
}

impl Scripter {
    /// Evaluates the jq `expression` on `input` in the script guest: the
    /// single output, or an array of the outputs when there are none or
    /// several. Object keys keep their order.
    ///
    /// Each select runs in a fresh instance, under the script limits (the
    /// guest's running time, and its memory, raised for a large input), so a
    /// runaway expression ends as [`SelectFailure::Limit`]. Blocks: call from
    /// a blocking thread.
    pub fn select(
        &self,
        expression: &str,
        input: &serde_json::Value,
    ) -> Result<serde_json::Value, SelectFailure> {
        let input = input.to_string();
        let memory = memory_for(self.limits.memory_bytes, input.len());
        // Never a pooled instance: those are warmed for scripts (a select
        // does not use the engine), and limited to the scripts' memory.
        let mut fresh = self
            .instantiate(memory)
            .map_err(|e| SelectFailure::Guest(e.to_string()))?;
        // No calls wait on anything: its wall time is its running time.
        let budget = self.limits.cpu.min(self.limits.wall);
        fresh.store.data_mut().begin_call();
        fresh
            .store
            .set_epoch_deadline(PluginEngine::deadline_ticks(budget));
        let result = {
            let _running = PluginEngine::shared().enter();
            fresh
                .indices
                .load(&mut fresh.store, &fresh.instance)
                .and_then(|guest| guest.call_select(&mut fresh.store, expression, &input))
        };
        drop(input);
        match result {
            Ok(Ok(json)) => serde_json::from_str(&json).map_err(|e| {
                SelectFailure::Guest(format!(
                    "script guest {} gave output that is not JSON: {e}",
                    self.name()
                ))
            }),
            Ok(Err(e)) => Err(match e {
                wit_script::SelectError::Syntax(m) => SelectFailure::Syntax(m),
                wit_script::SelectError::Runtime(m) => SelectFailure::Runtime(m),
                wit_script::SelectError::Unsupported(m) => SelectFailure::Unsupported(m),
            }),
            Err(e) => Err(stopped(self.name(), fresh.store.data_mut(), e, budget)),
        }
    }
}

/// Why a select trapped: a limit the sandbox enforced, or a fault of the
/// guest.
fn stopped(
    guest: &str,
    state: &mut GuestState,
    e: wasmtime::Error,
    budget: std::time::Duration,
) -> SelectFailure {
    if let Some(hit) = state.limiter.hit.take() {
        return SelectFailure::Limit(hit);
    }
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => SelectFailure::Limit(LimitHit::Deadline(budget)),
        Some(wasmtime::Trap::StackOverflow) => {
            SelectFailure::Runtime("the expression recursed too deeply (stack overflow)".into())
        }
        _ => SelectFailure::Guest(format!("script guest {guest} trapped: {e:#}")),
    }
}
