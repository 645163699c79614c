//! The one path every tool call takes, however it comes: a tool of a
//! session (direct, loaded by ToolSearch, or as a task), the proxy's `mcp`,
//! a script's `tools.<name>()`, a guest's `calls` import, and the Rust and
//! command-line API ([`crate::host::Host::call`], `mcpw call`). The order:
//!
//! 1. scope: the caller reaches the tool's server;
//! 2. rate limits: a limited call troubles neither the guards nor the user;
//! 3. the guards, before: deny, rewrite the arguments, or ask for approval;
//! 4. approval, where `approve` or a guard asks for it, by the caller's
//!    [`Approver`] (which may answer later: the call is then suspended);
//! 5. the call itself, on the upstream server;
//! 6. the guards, after: keep, replace or withhold the result;
//! 7. the observers, once: the audit line, metrics, the live page's history,
//!    statistics and the span's end.
//!
//! Reads (a resource, a prompt) take the steps that apply to them: scope,
//! the rate limits (those of the whole server), and the audit line. Guards
//! and approval see calls only.

mod approval;
mod caller;
mod stages;
#[cfg(test)]
mod tests;

pub use approval::Policy;
pub use caller::{Allowances, Answer, Approver, Caller, CallerSession, Question, Unattended, Via};
pub(crate) use stages::{CallSeen, Observed, Stages};

use crate::audit::Decision;
use crate::catalog::Entry;
use crate::host::{CallOptions, HostError, RawResult};
use crate::plugin::guard::{After, Before, GuardedCall};
use serde_json::{Map, Value};
// tokio's clock: tests pause it.
use tokio::time::Instant;

/// What became of a call.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per call, returned once: never kept
pub enum Ran {
    /// It ran: what the server sent (or a guard's replacement), or why the
    /// server could not be called.
    Done(Result<RawResult, HostError>),
    /// It did not run: why, as the agent reads it.
    Refused(String),
    /// It ran, and a guard withheld its result: why.
    Withheld(String),
    /// The caller's approver answers later: the call did not run yet, and
    /// runs when asked again with the answer.
    Suspended(String),
}

/// Runs the call of `entry` with `arguments` for `caller` along the whole
/// path (see the module's doc).
pub(crate) async fn run(
    stages: &impl Stages,
    caller: &Caller,
    entry: &Entry,
    arguments: Option<Map<String, Value>>,
    options: CallOptions,
) -> Ran {
    let started = Instant::now();
    // Only an observer that measures (the audit trail) reads them.
    let kept = arguments.as_ref().filter(|_| stages.measures());
    let mut seen = Observed::new(caller, entry, kept);
    let admitted = match admit(stages, caller, entry, arguments).await {
        Ok(admitted) => admitted,
        Err(Stopped::Refused(why)) => {
            seen.decided(Decision::Denied, Some(why.trim_start_matches("Error: ")));
            stages.observe(seen.ended(started, None, None));
            return Ran::Refused(why);
        }
        Err(Stopped::Later(state)) => {
            seen.decided(Decision::Pending, Some("the user is asked; the call waits"));
            stages.observe(seen.ended(started, None, None));
            return Ran::Suspended(state);
        }
    };
    if admitted.asked {
        seen.decided(Decision::Asked, Some("the user allowed it"));
    }
    let call_started = Instant::now();
    let result = stages.call(entry, admitted.arguments, options).await;
    let call = CallSeen::of(&result, call_started.elapsed(), stages.measures());
    let ran = match (result, admitted.guarded) {
        (Ok(RawResult::Tool(r)), Some(guarded)) => {
            let view = entry.tool.meta.as_ref().and_then(crate::apps::view_of);
            after(stages, guarded, r, view).await
        }
        (result, _) => Ran::Done(result),
    };
    stages.observe(seen.ended(started, Some(call), Some(&ran)));
    ran
}

/// What a read is of.
#[derive(Clone, Copy, Debug)]
pub enum Read<'a> {
    /// A resource, by the server's own URI.
    Resource(&'a str),
    /// A prompt, by the server's own name.
    Prompt(&'a str),
}

/// Runs a read of `server` for `caller`: its scope, the server's rate
/// limits, `work`, and the audit line.
pub(crate) async fn read<T>(
    stages: &impl Stages,
    caller: &Caller,
    server: &str,
    what: Read<'_>,
    work: impl std::future::Future<Output = Result<T, HostError>>,
) -> Result<T, HostError> {
    let started = Instant::now();
    let mut seen = Observed::read(caller, server, what);
    let refused = if !caller.reaches(server) {
        Some(format!("Error: server \"{server}\" not found."))
    } else if let Err(limited) = stages.rate(caller.bucket(), server, "").await {
        Some(format!("Error: {limited}. The read did not run."))
    } else {
        None
    };
    if let Some(why) = refused {
        seen.decided(Decision::Denied, Some(why.trim_start_matches("Error: ")));
        stages.observe(seen.ended(started, None, None));
        return Err(HostError::Refused(why));
    }
    let result = work.await;
    seen.ended(started, None, None);
    seen.error = result.as_ref().err().map(ToString::to_string);
    stages.observe(&seen);
    result
}

/// A call that passed the checks before it runs.
struct Admitted {
    /// The user was asked, and allowed it.
    asked: bool,
    /// The arguments to call with: the caller's, or a guard's rewrite.
    arguments: Option<Map<String, Value>>,
    /// The call as the guards saw it, when guards check its result.
    guarded: Option<GuardedCall>,
}

/// Why a call stops before it runs.
enum Stopped {
    Refused(String),
    Later(String),
}

/// Steps 1 to 4.
async fn admit(
    stages: &impl Stages,
    caller: &Caller,
    entry: &Entry,
    arguments: Option<Map<String, Value>>,
) -> Result<Admitted, Stopped> {
    let name = &entry.name;
    if !caller.reaches(&entry.tool.server) {
        return Err(Stopped::Refused(format!(
            "Error: tool \"{name}\" not found."
        )));
    }
    if let Err(limited) = stages
        .rate(caller.bucket(), &entry.tool.server, &entry.tool.name)
        .await
    {
        return Err(Stopped::Refused(format!(
            "Error: {limited}. The call of {name} did not run."
        )));
    }
    let (arguments, guarded, guard_asks) = match stages.guarded() {
        false => (arguments, None, None),
        true => before(stages, caller, entry, arguments).await?,
    };
    let policy = stages.approval(entry);
    let asked = approval::approve(caller, entry, arguments.as_ref(), &policy, guard_asks).await?;
    Ok(Admitted {
        asked,
        arguments,
        guarded,
    })
}

/// Step 3: the guards' verdict; the arguments to call with, the call as
/// they saw it, and why a guard wants the user asked.
async fn before(
    stages: &impl Stages,
    caller: &Caller,
    entry: &Entry,
    arguments: Option<Map<String, Value>>,
) -> Result<
    (
        Option<Map<String, Value>>,
        Option<GuardedCall>,
        Option<String>,
    ),
    Stopped,
> {
    let text = arguments.as_ref().map_or_else(
        || "{}".into(),
        |a| serde_json::to_string(a).unwrap_or_default(),
    );
    let mut call = GuardedCall {
        server: entry.tool.server.clone(),
        tool: entry.tool.name.clone(),
        name: entry.name.clone(),
        arguments: text,
        annotations: entry.tool.annotations.as_ref().map(|a| a.to_string()),
        client: caller.client.to_string(),
        session: caller.session_id(),
    };
    let (rewritten, ask) = match stages.guard_before(call.clone()).await {
        Before::Deny(reason) => {
            return Err(Stopped::Refused(format!(
                "Error: {reason}. The call of {} did not run.",
                entry.name
            )));
        }
        Before::Run { rewritten, ask } => (rewritten, ask),
    };
    let arguments = match rewritten {
        None => arguments,
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => {
                call.arguments = text;
                Some(m)
            }
            _ => {
                return Err(Stopped::Refused(
                    "Error: a guard rewrote the arguments into something not an object.".into(),
                ));
            }
        },
    };
    Ok((arguments, Some(call), ask))
}

/// Step 6: the guards' verdict on a tool's result. Only tools' results are
/// guarded: a resource tool's reading passes as it is. The tool's `view`
/// (an MCP App's) is named on the result the guards see, so that a
/// replacement decides whether the view is shown.
async fn after(
    stages: &impl Stages,
    call: GuardedCall,
    mut result: rmcp::model::CallToolResult,
    view: Option<&str>,
) -> Ran {
    if let Some(view) = view {
        crate::apps::name_view(
            &mut result.meta.get_or_insert_with(Default::default).0,
            view,
        );
    }
    let text = match serde_json::to_string(&result) {
        Ok(text) => text,
        Err(e) => return Ran::Withheld(e.to_string()),
    };
    match stages.guard_after(call, text).await {
        After::Keep => Ran::Done(Ok(RawResult::Tool(result))),
        After::Replace(json) => match serde_json::from_str(&json) {
            Ok(replaced) => Ran::Done(Ok(RawResult::Tool(replaced))),
            Err(e) => Ran::Withheld(format!(
                "a guard's replacement is not a tool result ({e}), so the result is withheld"
            )),
        },
        After::Deny(reason) => Ran::Withheld(reason),
    }
}

impl From<approval::NotApproved> for Stopped {
    fn from(n: approval::NotApproved) -> Stopped {
        match n {
            approval::NotApproved::Refused(why) => Stopped::Refused(why),
            approval::NotApproved::Later(state) => Stopped::Later(state),
        }
    }
}
