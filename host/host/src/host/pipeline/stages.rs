//! The stages of the path as the host runs them, behind a trait so that
//! their order is tested with fakes; and what the observers are told of a
//! call once it is decided or done.

use super::approval::Policy;
use super::{Caller, Ran, Via};
use crate::audit::{Decision, Record, iso_time};
use crate::catalog::Entry;
use crate::host::{CallOptions, HostError, RateLimited, RawResult};
use crate::plugin::guard::{After, Before, GuardedCall};
use serde_json::{Map, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What each stage does.
pub(crate) trait Stages: Sync {
    /// Takes a call of `server`'s `tool` (`""` for a read) from the
    /// rate-limit buckets of `caller`.
    fn rate(
        &self,
        caller: &Caller,
        server: &str,
        tool: &str,
    ) -> impl Future<Output = Result<(), RateLimited>> + Send;
    /// Whether any guard checks calls.
    fn guarded(&self) -> bool;
    /// The guards' verdict before the call.
    fn guard_before(&self, call: GuardedCall) -> impl Future<Output = Before> + Send;
    /// Who must approve a call of `entry`.
    fn approval(&self, entry: &Entry) -> Policy;
    /// The call itself, on the upstream server, with `caller`'s login
    /// where the server takes each person's own.
    fn call(
        &self,
        caller: &Caller,
        entry: &Entry,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> impl Future<Output = Result<RawResult, HostError>> + Send;
    /// The guards' verdict on a result, as a tool's (JSON text of a
    /// `CallToolResult`).
    fn guard_after(&self, call: GuardedCall, result: String) -> impl Future<Output = After> + Send;
    /// Whether an observer needs the sizes of results (the audit trail,
    /// the statistics): measuring one serializes it.
    fn measures(&self) -> bool;
    /// Tells the observers of a call once it is decided or done.
    fn observe(&self, seen: &Observed);
}

/// What the observers are told of one call.
#[derive(Clone, Debug)]
pub(crate) struct Observed {
    /// When it was asked for (ms since the epoch).
    pub time_ms: u64,
    pub client: Arc<str>,
    /// What `/metrics` names the client by: its token's name and its
    /// groups (never a person).
    pub labels: Option<Arc<super::ClientPolicy>>,
    /// The session (0: none).
    pub session: u64,
    pub via: Via,
    pub server: String,
    /// The server's own name of the tool (empty for a read).
    pub tool: String,
    /// The agent-facing name.
    pub name: String,
    /// The resource read (the server's own URI), for a read of one.
    pub resource: Option<String>,
    /// The skill's file read (the server's own URI), for a read of one.
    pub skill: Option<String>,
    /// The prompt got (the server's own name), for a read of one.
    pub prompt: Option<String>,
    /// The arguments the guards let through (a guard's rewrite), or, with
    /// no guard, as asked; none for a call the guards did not let through,
    /// and for a read. Kept only for an observer that measures.
    pub arguments: Option<Map<String, Value>>,
    pub decision: Decision,
    pub reason: Option<String>,
    /// From asking to the end.
    pub duration: Duration,
    /// The upstream call, when it ran.
    pub call: Option<CallSeen>,
    /// What the caller got wrong or was refused (the audit line's error).
    pub error: Option<String>,
}

/// The upstream call of an observed call.
#[derive(Clone, Debug)]
pub(crate) struct CallSeen {
    pub elapsed: Duration,
    /// How it failed (`tool_error`, `rpc_error`, `unreached`), and why.
    pub failure: Option<(&'static str, String)>,
    /// The result's size as JSON.
    pub result_bytes: usize,
    /// Its content's size as JSON (the statistics count it).
    pub content_bytes: u64,
}

impl CallSeen {
    /// `measure`: with the sizes of its result (else 0).
    pub(crate) fn of(
        result: &Result<RawResult, HostError>,
        elapsed: Duration,
        measure: bool,
    ) -> CallSeen {
        let (result_bytes, content_bytes) = match result {
            _ if !measure => (0, 0),
            Ok(RawResult::Tool(r)) => (json_size(r), json_size(&r.content) as u64),
            Ok(RawResult::Resource(r)) => (json_size(r), json_size(&r.contents) as u64),
            Ok(RawResult::Prompt(p)) => (json_size(p), json_size(&p.messages) as u64),
            Ok(RawResult::Task(t)) => (json_size(t), 0),
            Ok(RawResult::Rpc(_)) | Err(_) => (0, 0),
        };
        let failure = match result {
            Ok(RawResult::Tool(r)) if r.is_error == Some(true) => {
                Some(("tool_error", "the tool reported an error".to_string()))
            }
            Ok(RawResult::Rpc(e)) => Some(("rpc_error", e.clone())),
            Err(e) => Some(("unreached", e.to_string())),
            Ok(_) => None,
        };
        CallSeen {
            elapsed,
            failure,
            result_bytes,
            content_bytes,
        }
    }
}

/// A value's size as JSON.
fn json_size<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(0, |v| v.len())
}

impl Observed {
    /// A call of `entry`, before it is decided.
    pub(crate) fn new(caller: &Caller, entry: &Entry) -> Self {
        Observed {
            tool: entry.tool.name.clone(),
            name: entry.name.clone(),
            ..Observed::of(caller, &entry.tool.server)
        }
    }

    /// The call goes on with `arguments`: what the guards let through, the
    /// only arguments an observer is told of (kept when one measures).
    pub(crate) fn let_through(&mut self, arguments: Option<&Map<String, Value>>, kept: bool) {
        self.arguments = arguments.filter(|_| kept).cloned();
    }

    /// A read of `server`, before it is decided.
    pub(crate) fn read(caller: &Caller, server: &str, what: super::Read<'_>) -> Self {
        let (resource, skill, prompt) = match what {
            super::Read::Resource {
                uri, skill: true, ..
            } => (None, Some(uri.to_string()), None),
            super::Read::Resource { uri, .. } => (Some(uri.to_string()), None, None),
            super::Read::Prompt { name, .. } => (None, None, Some(name.to_string())),
        };
        Observed {
            resource,
            skill,
            prompt,
            ..Observed::of(caller, server)
        }
    }

    /// What every observed call or read starts with: who, when and where.
    fn of(caller: &Caller, server: &str) -> Self {
        Observed {
            time_ms: crate::clock::now_ms(),
            client: caller.client.clone(),
            labels: caller.policy.clone(),
            session: caller.session_id(),
            via: caller.via,
            server: server.to_string(),
            tool: String::new(),
            name: String::new(),
            resource: None,
            skill: None,
            prompt: None,
            arguments: None,
            decision: Decision::Allowed,
            reason: None,
            duration: Duration::ZERO,
            call: None,
            error: None,
        }
    }

    pub(crate) fn decided(&mut self, decision: Decision, reason: Option<&str>) {
        self.decision = decision;
        self.reason = reason.map(str::to_string);
    }

    /// Ended: `call` as the upstream call went, `ran` as the caller got it.
    pub(crate) fn ended(
        &mut self,
        started: Instant,
        call: Option<CallSeen>,
        ran: Option<&Ran>,
    ) -> &Self {
        self.duration = started.elapsed();
        self.error = match ran {
            Some(Ran::Withheld(why)) => Some(why.clone()),
            _ => call
                .as_ref()
                .and_then(|c| c.failure.as_ref())
                .map(|f| f.1.clone()),
        };
        self.call = call;
        self
    }

    /// The audit line of it; `arguments`: the line carries them.
    pub(crate) fn record(&self, arguments: bool) -> Record {
        Record {
            time: iso_time(self.time_ms),
            session: Some(self.session).filter(|&id| id != 0),
            client: self.client.to_string(),
            server: self.server.clone(),
            tool: self.tool.clone(),
            resource: self.resource.clone(),
            skill: self.skill.clone(),
            prompt: self.prompt.clone(),
            via: self.via.name(),
            decision: self.decision,
            reason: self.reason.clone(),
            duration_ms: self.duration.as_millis() as u64,
            arguments_bytes: self.arguments.as_ref().map_or(2, json_size),
            result_bytes: self.call.as_ref().map_or(0, |c| c.result_bytes),
            error: self.error.clone(),
            arguments: arguments.then(|| self.arguments.clone()).flatten(),
        }
    }
}
