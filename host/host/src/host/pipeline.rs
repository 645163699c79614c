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
//! 7. the observers, once: the audit line (with the arguments the guards
//!    let through, never what they took out), metrics, the live page's
//!    history, statistics and the span's end.
//!
//! Reads (a resource, a prompt) take the steps that apply to them: scope,
//! the rate limits (those of the whole server), the guards before (a
//! question of theirs is put to the user as a call's; a rewrite may change a
//! prompt's arguments only), the guards after, and the audit line; the
//! `approve` settings are about calls only. A task's
//! result, when it comes, takes the guards after and the audit line
//! (`task_result`); the client's answers to a task's questions take the
//! guards before on their way to the server (`task_update`).
//!
//! Every result is a [`RawResult`], and the guards see each one as a tool's
//! `CallToolResult`: a reading's contents as embedded resources, a prompt's
//! messages as content blocks; a guard's replacement goes back into the
//! result's own shape (`as_tool` says how).

mod approval;
mod as_tool;
mod caller;
mod client_policy;
mod stages;
#[cfg(test)]
mod tests;

pub use approval::Policy;
pub use caller::{Allowances, Answer, Approver, Caller, CallerSession, Question, Unattended, Via};
pub use client_policy::{CallRule, ClientPolicy, Presented};
pub(crate) use stages::{CallSeen, Observed, Stages};

use crate::audit::Decision;
use crate::catalog::Entry;
use crate::host::{CallOptions, HostError, RawResult};
use crate::plugin::guard::{After, Before, GuardedCall};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};
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
    let mut seen = Observed::new(caller, entry);
    let admitted = match admit(stages, caller, entry, arguments, &mut seen).await {
        Ok(admitted) => admitted,
        Err(Stopped::Refused(why)) => {
            seen.decided(Decision::Denied, Some(why.trim_start_matches("Error: ")));
            stages.observe(seen.ended(started, None, None));
            return Ran::Refused(why);
        }
    };
    if admitted.asked {
        seen.decided(Decision::Asked, Some("the user allowed it"));
    }
    let call_started = Instant::now();
    let result = stages
        .call(caller, entry, admitted.arguments, options)
        .await;
    let call = CallSeen::of(&result, call_started.elapsed(), stages.measures());
    let ran = match (result, admitted.guarded) {
        (Ok(raw), Some(guarded)) => after_call(stages, guarded, entry, raw).await,
        (result, _) => Ran::Done(result),
    };
    stages.observe(seen.ended(started, Some(call), Some(&ran)));
    ran
}

/// The result `result` of a call of `entry` that ran as a task, when the
/// task brings it: the guards see it after, as any tool's, and it is
/// observed once (the audit line, the metrics). `arguments`: those the call
/// ran with (as the guards let them through); `started`: when it was asked
/// for. A poll of the task before it is not observed.
pub(crate) async fn task_result(
    stages: &impl Stages,
    caller: &Caller,
    entry: &Entry,
    arguments: Option<&Map<String, Value>>,
    result: CallToolResult,
    started: Instant,
) -> Ran {
    let mut seen = Observed::new(caller, entry);
    seen.let_through(arguments, stages.measures());
    let result = Ok(RawResult::Tool(result));
    let call = CallSeen::of(&result, started.elapsed(), stages.measures());
    let ran = match (result, stages.guarded()) {
        (Ok(raw), true) => {
            let guarded = guarded_call(caller, entry, arguments_text(arguments));
            after_call(stages, guarded, entry, raw).await
        }
        (result, _) => Ran::Done(result),
    };
    stages.observe(seen.ended(started, Some(call), Some(&ran)));
    ran
}

/// The client's answers to the questions of a task that a call of `entry`
/// made (`tasks/update`'s `params`, with the server's own task id), on
/// their way to its server. The guards before see them as a request of
/// `tasks/update` under the tool's name, and may refuse them, rewrite the
/// answers (never the task), or have the user asked. What goes on, or why
/// not, as the client reads it.
pub(crate) async fn task_update(
    stages: &impl Stages,
    caller: &Caller,
    entry: &Entry,
    params: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    if !stages.guarded() {
        return Ok(params);
    }
    let text = Value::Object(params.clone()).to_string();
    let call = GuardedCall {
        tool: "tasks/update".into(),
        annotations: None,
        ..guarded_call(caller, entry, text)
    };
    let name = &entry.name;
    let (rewritten, ask) = match stages.guard_before(call.clone()).await {
        Before::Deny(reason) => {
            return Err(format!(
                "{reason}. The answers to the task of {name} were not sent."
            ));
        }
        Before::Run { rewritten, ask } => (rewritten, ask),
    };
    let params = match rewritten {
        None => params,
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) if m.get("taskId") == params.get("taskId") => m,
            _ => {
                return Err(format!(
                    "a guard rewrote the answers to the task of {name} into something else (another task, or not params); they were not sent."
                ));
            }
        },
    };
    if let Some(reason) = ask {
        let asked = approval::ask_about(caller, &call, Some(params.clone()), &reason).await;
        if let Err(approval::NotApproved::Refused(why)) = asked {
            return Err(why.trim_start_matches("Error: ").to_string());
        }
    }
    Ok(params)
}

/// What a read is of.
#[derive(Clone, Copy, Debug)]
pub enum Read<'a> {
    /// A resource.
    Resource {
        /// The server's own URI.
        uri: &'a str,
        /// The URI the caller read it by.
        asked: &'a str,
        /// It is a skill's file (its audit line says so).
        skill: bool,
    },
    /// A prompt.
    Prompt {
        /// The server's own name.
        name: &'a str,
        /// The name the caller got it by.
        asked: &'a str,
        /// The arguments it is got with.
        arguments: Option<&'a Map<String, Value>>,
    },
}

impl Read<'_> {
    /// The read as the guards see it: the request `server` got, its method
    /// as the tool and its params as the arguments (see `guard.wit`).
    fn guarded(&self, caller: &Caller, server: &str) -> GuardedCall {
        let (method, asked) = match *self {
            Read::Resource { asked, .. } => ("resources/read", asked),
            Read::Prompt { asked, .. } => ("prompts/get", asked),
        };
        let params = self.params();
        GuardedCall {
            server: server.to_string(),
            tool: method.to_string(),
            name: asked.to_string(),
            arguments: params.to_string(),
            annotations: None,
            client: caller.client.to_string(),
            session: caller.session_id(),
        }
    }

    /// The request's params, as the server gets them.
    fn params(&self) -> Value {
        match *self {
            Read::Resource { uri, .. } => json!({ "uri": uri }),
            Read::Prompt {
                name, arguments, ..
            } => {
                let mut params = json!({ "name": name });
                if let Some(arguments) = arguments {
                    params["arguments"] = Value::Object(arguments.clone());
                }
                params
            }
        }
    }

    /// The arguments a prompt is got with.
    fn arguments(&self) -> Option<&Map<String, Value>> {
        match *self {
            Read::Prompt { arguments, .. } => arguments,
            Read::Resource { .. } => None,
        }
    }

    /// The same read, of a prompt got with `arguments`.
    fn with_arguments<'b>(self, arguments: Option<&'b Map<String, Value>>) -> Read<'b>
    where
        Self: 'b,
    {
        match self {
            Read::Prompt { name, asked, .. } => Read::Prompt {
                name,
                asked,
                arguments,
            },
            resource => resource,
        }
    }

    /// The arguments of a guard's rewrite `text` of this read's params:
    /// `None` when it reads something else (another URI or prompt) or is
    /// not params at all.
    fn rewritten(&self, text: &str) -> Option<Option<Map<String, Value>>> {
        let Ok(Value::Object(mut params)) = serde_json::from_str::<Value>(text) else {
            return None;
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => None,
            Some(Value::Object(a)) if matches!(self, Read::Prompt { .. }) => Some(a),
            Some(_) => return None,
        };
        let Value::Object(original) = self.params() else {
            return None;
        };
        let same = original
            .iter()
            .filter(|(k, _)| *k != "arguments")
            .all(|(k, v)| params.get(k) == Some(v))
            && params.len() == original.keys().filter(|k| *k != "arguments").count();
        same.then_some(arguments)
    }

    /// The URI a resource's reading is of ("" for a prompt).
    fn uri(&self) -> &str {
        match *self {
            Read::Resource { uri, .. } => uri,
            Read::Prompt { .. } => "",
        }
    }
}

/// Runs a read of `server` for `caller`: its scope, the server's rate
/// limits, the guards before (which may refuse it, ask the user, or rewrite
/// a prompt's arguments), `work` with the arguments they let through, the
/// guards on what it got, and the audit line.
pub(crate) async fn read<F>(
    stages: &impl Stages,
    caller: &Caller,
    server: &str,
    what: Read<'_>,
    work: impl FnOnce(Option<Map<String, Value>>) -> F,
) -> Result<RawResult, HostError>
where
    F: std::future::Future<Output = Result<RawResult, HostError>>,
{
    let started = Instant::now();
    let mut seen = Observed::read(caller, server, what);
    let refused = if !caller.reaches(server) {
        Some(format!("Error: server \"{server}\" not found."))
    } else if let Err(limited) = stages.rate(caller, server, "").await {
        Some(format!("Error: {limited}. The read did not run."))
    } else {
        None
    };
    let admitted = match refused {
        Some(why) => Err(Stopped::Refused(why)),
        None if stages.guarded() => before_read(stages, caller, server, what).await,
        None => Ok(what.arguments().cloned()),
    };
    let arguments = match admitted {
        Ok(arguments) => arguments,
        Err(Stopped::Refused(why)) => {
            seen.decided(Decision::Denied, Some(why.trim_start_matches("Error: ")));
            stages.observe(seen.ended(started, None, None));
            return Err(HostError::Refused(why));
        }
    };
    let what = what.with_arguments(arguments.as_ref());
    let result = match work(arguments.clone()).await {
        Ok(raw) if stages.guarded() => after_read(stages, caller, server, what, raw).await,
        result => result,
    };
    // A skill's file refused (its bytes not those listed, or changed by a
    // guard) is a read mcpw denied: its audit line says so, and why.
    if let Err(HostError::Skill(why)) = &result {
        seen.decided(Decision::Denied, Some(why));
    }
    seen.ended(started, None, None);
    seen.error = result.as_ref().err().map(ToString::to_string);
    stages.observe(&seen);
    result
}

/// The guards' verdict on a read before it runs: the prompt's arguments to
/// get it with (a guard's rewrite, where one made it), or why it stops. A
/// guard's question is put to the user as a call's is; a rewrite may change
/// a prompt's arguments only, never what is read.
async fn before_read(
    stages: &impl Stages,
    caller: &Caller,
    server: &str,
    what: Read<'_>,
) -> Result<Option<Map<String, Value>>, Stopped> {
    let call = what.guarded(caller, server);
    let shown = call.name.clone();
    let (rewritten, ask) = match stages.guard_before(call.clone()).await {
        Before::Deny(reason) => {
            return Err(Stopped::Refused(format!(
                "Error: {reason}. The read of {shown} did not run."
            )));
        }
        Before::Run { rewritten, ask } => (rewritten, ask),
    };
    let arguments = match rewritten {
        None => what.arguments().cloned(),
        Some(text) => what.rewritten(&text).ok_or_else(|| {
            Stopped::Refused(format!(
                "Error: a guard rewrote the read of {shown} into another read (only a prompt's arguments may be rewritten); it did not run."
            ))
        })?,
    };
    if let Some(reason) = ask {
        // The user is shown the read as it would go: with a guard's rewrite.
        let params = what.with_arguments(arguments.as_ref()).params();
        approval::ask_about(caller, &call, params.as_object().cloned(), &reason).await?;
    }
    Ok(arguments)
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
}

/// Steps 1 to 4; `seen` is told the arguments the guards let through (with
/// no guard, those asked): a call they stop carries none.
async fn admit(
    stages: &impl Stages,
    caller: &Caller,
    entry: &Entry,
    arguments: Option<Map<String, Value>>,
    seen: &mut Observed,
) -> Result<Admitted, Stopped> {
    let name = &entry.name;
    let guards = stages.guarded();
    if !guards {
        seen.let_through(arguments.as_ref(), stages.measures());
    }
    if !caller.reaches(&entry.tool.server) {
        return Err(Stopped::Refused(format!(
            "Error: tool \"{name}\" not found."
        )));
    }
    if let Err(limited) = stages
        .rate(caller, &entry.tool.server, &entry.tool.name)
        .await
    {
        return Err(Stopped::Refused(format!(
            "Error: {limited}. The call of {name} did not run."
        )));
    }
    let (arguments, guarded, guard_asks) = match guards {
        false => (arguments, None, None),
        true => {
            let checked = before(stages, caller, entry, arguments).await?;
            seen.let_through(checked.0.as_ref(), stages.measures());
            checked
        }
    };
    let policy = stages.approval(entry).with_client(caller, entry);
    let asked = approval::approve(caller, entry, arguments.as_ref(), &policy, guard_asks).await?;
    Ok(Admitted {
        asked,
        arguments,
        guarded,
    })
}

/// `arguments` as the guards read them: JSON text of an object.
fn arguments_text(arguments: Option<&Map<String, Value>>) -> String {
    arguments.map_or_else(
        || "{}".into(),
        |a| serde_json::to_string(a).unwrap_or_default(),
    )
}

/// The call of `entry` with `arguments` (JSON text) for `caller`, as the
/// guards see it.
fn guarded_call(caller: &Caller, entry: &Entry, arguments: String) -> GuardedCall {
    GuardedCall {
        server: entry.tool.server.clone(),
        tool: entry.tool.name.clone(),
        name: entry.name.clone(),
        arguments,
        annotations: entry.tool.annotations.as_ref().map(|a| a.to_string()),
        client: caller.client.to_string(),
        session: caller.session_id(),
    }
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
    let mut call = guarded_call(caller, entry, arguments_text(arguments.as_ref()));
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

/// Step 6 for a call of `entry`, as the guards saw it: what becomes of its
/// result `raw`.
async fn after_call(stages: &impl Stages, call: GuardedCall, entry: &Entry, raw: RawResult) -> Ran {
    let view = entry.tool.meta.as_ref().and_then(crate::apps::view_of);
    let uri = entry.tool.resource_uri.as_deref().unwrap_or_default();
    match after(stages, call, raw, view, uri).await {
        Ok(raw) => Ran::Done(Ok(raw)),
        Err(why) => Ran::Withheld(why),
    }
}

/// The guards' verdict on what a read got. A skill's file passes whole or
/// not at all: what they pass on must be the bytes its server sent, hashed
/// before they see them, whatever its listing says (a dynamic skill's file
/// has no digest listed, and is held to this all the same).
async fn after_read(
    stages: &impl Stages,
    caller: &Caller,
    server: &str,
    what: Read<'_>,
    raw: RawResult,
) -> Result<RawResult, HostError> {
    let (sent, asked) = match (&raw, what) {
        (
            RawResult::Resource(r),
            Read::Resource {
                skill: true, asked, ..
            },
        ) => (Some(crate::host::skills::Sent::of(r)), asked),
        _ => (None, ""),
    };
    let guarded = what.guarded(caller, server);
    let raw = after(stages, guarded, raw, None, what.uri())
        .await
        .map_err(HostError::Withheld)?;
    let kept = match (sent, &raw) {
        (None, _) => return Ok(raw),
        (Some(sent), RawResult::Resource(r)) => sent.and_then(|s| s.same(r)),
        (Some(_), _) => Err("it is no longer a file".to_string()),
    };
    kept.map(|()| raw).map_err(|e| {
        HostError::Skill(format!(
            "{asked} refused: {e} (a guard changed it; a skill's file passes whole or not at all)"
        ))
    })
}

/// The guards' verdict on a result of any kind, which they see as
/// a tool's ([`as_tool`]); what goes on, or why it is withheld. A tool's
/// `view` (an MCP App's) is named on the result the guards see, so that a
/// replacement decides whether the view is shown; `uri`: what a reading
/// is of.
async fn after(
    stages: &impl Stages,
    call: GuardedCall,
    mut raw: RawResult,
    view: Option<&str>,
    uri: &str,
) -> Result<RawResult, String> {
    if let (Some(view), RawResult::Tool(result)) = (view, &mut raw) {
        crate::apps::name_view(
            &mut result.meta.get_or_insert_with(Default::default).0,
            view,
        );
    }
    let text = match as_tool::seen(&raw) {
        None => return Ok(raw),
        Some(Ok(text)) => text,
        Some(Err(e)) => return Err(e.to_string()),
    };
    match stages.guard_after(call, text).await {
        After::Keep => Ok(raw),
        After::Replace(json) => match serde_json::from_str::<CallToolResult>(&json) {
            Ok(replaced) => as_tool::back(raw, replaced, uri),
            Err(e) => Err(format!(
                "a guard's replacement is not a tool result ({e}), so the result is withheld"
            )),
        },
        After::Deny(reason) => Err(reason),
    }
}

impl From<approval::NotApproved> for Stopped {
    fn from(n: approval::NotApproved) -> Stopped {
        match n {
            approval::NotApproved::Refused(why) => Stopped::Refused(why),
        }
    }
}
