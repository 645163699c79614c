//! The script role (code mode), of contract 0.1.1: a guest that runs the
//! scripts an agent writes, reaching the session's tools through
//! [`toolbox`]. Implement [`Script`] and export it with [`script!`](crate::script!).
//!
//! Its types are the 0.1.1 ones, apart from the policy roles' 0.1.0 types:
//! a script guest needs mcpw 0.1.1 or later, a policy guest any.

pub use crate::worlds::scripter::exports::mcpw::plugin::script::{Outcome, ScriptError};
pub use crate::worlds::scripter::mcpw::plugin::toolbox::{self, CallOutcome, Finished, ToolInfo};
pub use crate::worlds::scripter::mcpw::plugin::types::PluginError;

/// The script role. The host runs each script in a fresh instance, and
/// enforces the limits itself.
pub trait Script {
    /// Runs `code`, and every call it starts, to the end.
    fn run(code: String) -> Outcome;
    /// Gets ready so that the next [`Script::run`] starts at once (the host
    /// calls it on instances it keeps ready).
    fn warm() {}
    /// How to write a script for this guest: the code tool's description
    /// (at most about 600 tokens).
    fn usage() -> String;
    /// Each tool's declaration in the script's language, one per tool.
    fn declare(tools: Vec<ToolInfo>) -> Vec<String>;
}

/// Writes a record into mcpw's log through this world's own `log` import
/// (stderr natively).
pub fn log(level: crate::worlds::scripter::mcpw::plugin::log::Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::worlds::scripter::mcpw::plugin::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{level:?}: {message}");
}

/// [`crate::panic_hook`] for script guests: through the 0.1.1 `log`, so that
/// a script guest imports one version of the contract.
#[doc(hidden)]
pub fn panic_hook() {
    crate::panics_to(|message| {
        log(
            crate::worlds::scripter::mcpw::plugin::log::Level::Error,
            message,
        )
    });
}
