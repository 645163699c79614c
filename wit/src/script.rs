//! The script role (code mode), of contract 0.2.0: a guest that runs the
//! scripts an agent writes, reaching the session's tools through
//! [`toolbox`]. Implement [`Script`] and export it with [`script!`](crate::script!).
//!
//! Its types are its world's own (the `scripter` world of 0.2.0), apart from
//! the policy roles' types: a script guest built with this crate needs mcpw
//! 0.2.0 or later.

pub use crate::worlds::scripter::exports::mcpw::plugin::script::{
    Outcome, ScriptError, SelectError,
};
pub use crate::worlds::scripter::mcpw::plugin::toolbox::{
    self, CallOutcome, Finished, SkillFile, ToolInfo,
};
pub use crate::worlds::scripter::mcpw::plugin::types::{PluginError, ToolKind};

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
    /// Evaluates the jq `expression` on `input` (JSON text): the single
    /// output as JSON text, or a JSON array of the outputs when there are
    /// none or several. The host runs it in a fresh instance under the
    /// script limits.
    ///
    /// By default the guest does not evaluate jq: the host tells the agent
    /// so ([`SelectError::Unsupported`]).
    fn select(expression: String, input: String) -> Result<String, SelectError> {
        let _ = (expression, input);
        Err(SelectError::Unsupported(
            "this script guest does not evaluate jq expressions".into(),
        ))
    }
}

/// Writes a record into mcpw's log through this world's own `log` import
/// (stderr natively).
pub fn log(level: crate::worlds::scripter::mcpw::plugin::log::Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::worlds::scripter::mcpw::plugin::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{level:?}: {message}");
}

/// [`crate::panic_hook`] for script guests: through the 0.2.0 `log`, so that
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

/// What a script guest exports, over [`Script`] (its world's glue).
pub struct ScriptGlue<S>(std::marker::PhantomData<S>);

impl<S: Script> crate::worlds::scripter::exports::mcpw::plugin::script::Guest for ScriptGlue<S> {
    fn run(code: String) -> Outcome {
        panic_hook();
        S::run(code)
    }

    fn warm() {
        panic_hook();
        S::warm();
    }

    fn usage() -> String {
        S::usage()
    }

    fn declare(tools: Vec<ToolInfo>) -> Vec<String> {
        panic_hook();
        S::declare(tools)
    }

    fn select(expression: String, input: String) -> Result<String, SelectError> {
        panic_hook();
        S::select(expression, input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A script guest written before `select` existed.
    struct Older;

    impl Script for Older {
        fn run(_code: String) -> Outcome {
            Outcome {
                value: Ok("null".into()),
                logs: Vec::new(),
            }
        }
        fn usage() -> String {
            String::new()
        }
        fn declare(_tools: Vec<ToolInfo>) -> Vec<String> {
            Vec::new()
        }
    }

    #[test]
    fn a_guest_that_does_not_select_says_so() {
        match Older::select(".".into(), "{}".into()) {
            Err(SelectError::Unsupported(m)) => assert!(m.contains("jq"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
