//! The guard role: guests that check every call a client asks for, before
//! it runs (allow, deny, ask the user, or other arguments), and every result
//! after, a read's and a prompt's too, each as a `CallToolResult` (keep, a
//! redacted copy, or withhold; see `mcpw_host::host::pipeline`). They are
//! chained in the order `settings.guards` lists them, each under the
//! sandbox's limits.
//!
//! A guard that cannot decide (a trap, a limit, its own error, an answer
//! that breaks the contract) fails closed: the call is refused, and the
//! result withheld unless `guardFailure: "open"` lets it through unguarded.

use super::exports::{GuardExports, GuardIndices};
use super::guest::{GuestInstance, GuestModule};
use super::state::GuestState;
use super::wit::latest::exports::mcpw::plugin::guard as wit_guard;
use super::{PluginError, Role};
use std::sync::{Arc, Mutex};
use wasmtime::Store;

/// A call as guards see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuardedCall {
    /// The server.
    pub server: String,
    /// The server's own tool name.
    pub tool: String,
    /// The name the agent used.
    pub name: String,
    /// The arguments: JSON text of an object.
    pub arguments: String,
    /// The tool's annotations (JSON text), if any.
    pub annotations: Option<String>,
    /// The client token's name ("" without one).
    pub client: String,
    /// The session (0: none).
    pub session: u64,
}

/// What the guards decided on a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Before {
    /// It runs, with the arguments as asked or as a guard rewrote them.
    Run {
        /// The rewritten arguments (JSON text of an object); none: as asked.
        rewritten: Option<String>,
        /// A guard asked that the user approve it first, and why.
        ask: Option<String>,
    },
    /// It does not run.
    Deny(String),
}

/// What the guards decided on a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum After {
    /// As the server sent it.
    Keep,
    /// This one instead: JSON text of a `CallToolResult`.
    Replace(String),
    /// None: only the reason.
    Deny(String),
}

/// One guard guest.
pub struct Guard {
    instance: Mutex<GuestInstance>,
    indices: GuardIndices,
}

impl Guard {
    /// Fails unless the guest exports the guard role.
    pub fn new(module: Arc<GuestModule>) -> Result<Guard, PluginError> {
        module.require(Role::Guard)?;
        let indices = GuardIndices::new(&module.pre).map_err(|e| PluginError::Load {
            guest: module.name().to_string(),
            message: format!("{e:#}"),
        })?;
        Ok(Guard {
            instance: Mutex::new(GuestInstance::new(module)),
            indices,
        })
    }

    /// The guest's name.
    pub fn name(&self) -> String {
        self.lock().module().name().to_string()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GuestInstance> {
        self.instance.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// This guard's verdict on `call`; an error when it cannot decide.
    pub fn before(&self, call: &GuardedCall) -> Result<wit_guard::Verdict, PluginError> {
        let input = wit_call(call);
        let (verdict, guest) = self.ask(|g, store| g.call_before(store, &input))?;
        if let wit_guard::Verdict::Rewrite(args) = &verdict {
            check_object(&guest, "rewritten arguments are", args)?;
        }
        Ok(verdict)
    }

    /// This guard's verdict on `outcome` (a `CallToolResult` as JSON text).
    pub fn after(
        &self,
        call: &GuardedCall,
        outcome: &str,
    ) -> Result<wit_guard::ResultVerdict, PluginError> {
        let input = wit_call(call);
        let (verdict, guest) = self.ask(|g, store| g.call_after(store, &input, outcome))?;
        if let wit_guard::ResultVerdict::Replace(result) = &verdict {
            check_object(&guest, "replacement result is", result)?;
        }
        Ok(verdict)
    }

    /// Runs one export of the guest: its answer and the guest's name, or why
    /// it gave none (a trap, a limit, its own error).
    fn ask<R>(
        &self,
        f: impl FnOnce(
            &GuardExports,
            &mut Store<GuestState>,
        ) -> wasmtime::Result<Result<R, wit_guard::GuardError>>,
    ) -> Result<(R, String), PluginError> {
        let mut instance = self.lock();
        let guest = instance.module().name().to_string();
        let answer = instance.run("guard", |store, inst| {
            let exports = self.indices.load(&mut *store, inst)?;
            f(&exports, store)
        })?;
        match answer {
            Ok(verdict) => Ok((verdict, guest)),
            Err(e) => Err(failed(&guest, e)),
        }
    }
}

fn wit_call(c: &GuardedCall) -> wit_guard::Call {
    wit_guard::Call {
        server: c.server.clone(),
        tool: c.tool.clone(),
        name: c.name.clone(),
        arguments: c.arguments.clone(),
        annotations: c.annotations.clone(),
        caller: wit_guard::Caller {
            client: c.client.clone(),
            session: c.session,
        },
    }
}

fn failed(guest: &str, e: wit_guard::GuardError) -> PluginError {
    let message = match e {
        wit_guard::GuardError::InvalidInput(m) => format!("invalid input: {m}"),
        wit_guard::GuardError::Failed(m) => m,
    };
    PluginError::Trap {
        guest: guest.to_string(),
        message: format!("the guard could not decide: {message}"),
    }
}

/// A guard's JSON must be an object, or the guard broke the contract
/// (`what`: "rewritten arguments are", say).
fn check_object(guest: &str, what: &str, text: &str) -> Result<(), PluginError> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        _ => Err(PluginError::BadOutput {
            guest: guest.to_string(),
            role: Role::Guard,
            message: format!("its {what} not a JSON object"),
        }),
    }
}

/// The guards of a config, in order.
#[derive(Default)]
pub struct Guards {
    chain: Vec<Guard>,
    fail_open: bool,
}

impl Guards {
    /// `chain`, in order; `fail_open` lets a result through when a guard
    /// cannot decide on it.
    pub fn new(chain: Vec<Guard>, fail_open: bool) -> Guards {
        Guards { chain, fail_open }
    }

    /// Whether there is any guard.
    pub fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }

    /// Every guard's verdict on `call`, in order: the first denial stops the
    /// chain; rewritten arguments are what the next guard sees.
    pub fn before(&self, call: &GuardedCall) -> Before {
        // Copied only when a guard rewrites the arguments.
        let mut call = std::borrow::Cow::Borrowed(call);
        let mut ask: Option<String> = None;
        for guard in &self.chain {
            match guard.before(&call) {
                Ok(wit_guard::Verdict::Allow) => {}
                Ok(wit_guard::Verdict::Deny(reason)) => {
                    return Before::Deny(format!(
                        "guard {} refused it: {reason}",
                        short(&guard.name())
                    ));
                }
                Ok(wit_guard::Verdict::Ask(reason)) => {
                    ask.get_or_insert(reason);
                }
                Ok(wit_guard::Verdict::Rewrite(arguments)) => call.to_mut().arguments = arguments,
                Err(e) => {
                    tracing::warn!("{e}; the call is refused");
                    return Before::Deny(format!(
                        "a guard could not decide on it ({e}), so it is refused"
                    ));
                }
            }
        }
        let rewritten = match call {
            std::borrow::Cow::Owned(c) => Some(c.arguments),
            std::borrow::Cow::Borrowed(_) => None,
        };
        Before::Run { rewritten, ask }
    }

    /// Every guard's verdict on `outcome`, in order: each sees the result the
    /// one before it kept; the first denial stops the chain.
    pub fn after(&self, call: &GuardedCall, outcome: &str) -> After {
        let mut current: Option<String> = None;
        for guard in &self.chain {
            let seen = current.as_deref().unwrap_or(outcome);
            match guard.after(call, seen) {
                Ok(wit_guard::ResultVerdict::Keep) => {}
                Ok(wit_guard::ResultVerdict::Replace(result)) => current = Some(result),
                Ok(wit_guard::ResultVerdict::Deny(reason)) => {
                    return After::Deny(format!(
                        "guard {} withheld the result: {reason}",
                        short(&guard.name())
                    ));
                }
                Err(e) if self.fail_open => {
                    tracing::warn!("{e}; the result goes on unguarded (guardFailure is \"open\")");
                }
                Err(e) => {
                    tracing::warn!("{e}; the result is withheld");
                    return After::Deny(format!(
                        "a guard could not decide on the result ({e}), so it is withheld"
                    ));
                }
            }
        }
        current.map_or(After::Keep, After::Replace)
    }
}

/// A guard's file name, not its whole path.
fn short(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}
