//! The guard role, of contract 0.1.1: a check on every call a client asks
//! for, before it runs, and on every result after (a tool's, a resource's,
//! a prompt's, a task's, each seen as a `CallToolResult`; `guard.wit` says
//! how). Implement [`Guard`] and export it with [`guard!`](crate::guard!).
//!
//! A guard sees what calls carry, so its world imports nothing of the host
//! but `log`. The host chains guards in the order the config lists them, and
//! refuses a call (or withholds a result) when a guard cannot decide.

pub use crate::worlds::guarder::exports::mcpw::plugin::guard::{
    Call, Caller, GuardError, ResultVerdict, Verdict,
};

/// The guard role.
pub trait Guard {
    /// Decides on `call` before it runs.
    fn before(call: Call) -> Result<Verdict, GuardError>;
    /// Decides on the result of `call`, or of a read (whose `tool` is
    /// `resources/read` or `prompts/get`): `outcome` is JSON text of the
    /// MCP `CallToolResult` the server sent, or of the reading or prompt
    /// seen as one.
    fn after(call: Call, outcome: String) -> Result<ResultVerdict, GuardError>;
}

/// Writes a record into mcpw's log through this world's own `log` import
/// (stderr natively).
pub fn log(level: crate::worlds::guarder::mcpw::plugin::log::Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::worlds::guarder::mcpw::plugin::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{level:?}: {message}");
}

/// [`crate::panic_hook`] for guards, through the 0.1.1 `log`.
#[doc(hidden)]
pub fn panic_hook() {
    crate::panics_to(|message| {
        log(
            crate::worlds::guarder::mcpw::plugin::log::Level::Error,
            message,
        )
    });
}

/// What a guard guest exports, over [`Guard`] (its world's glue).
pub struct GuardGlue<G>(std::marker::PhantomData<G>);

impl<G: Guard> crate::worlds::guarder::exports::mcpw::plugin::guard::Guest for GuardGlue<G> {
    fn before(call: Call) -> Result<Verdict, GuardError> {
        panic_hook();
        G::before(call)
    }

    fn after(call: Call, outcome: String) -> Result<ResultVerdict, GuardError> {
        panic_hook();
        G::after(call, outcome)
    }
}
