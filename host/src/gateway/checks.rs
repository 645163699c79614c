//! The checks every call a session asks for passes, whichever way it comes
//! (a tool of its own, the proxy's `mcp`, a script): rate limits, the guards
//! and the user's approval before it runs, the guards on its result after,
//! and its line in the audit trail once it is decided.

use super::approval::{Asker, Refused};
use super::{ClientScope, Gateway};
use crate::audit::{Decision, Record, iso_time};
use crate::catalog::Entry;
use crate::host::{Host, RawResult};
use crate::plugin::guard::{After, Before, GuardedCall};
use serde_json::{Map, Value};
use std::time::Instant;

/// How a call reached mcpw.
#[derive(Clone, Copy)]
pub(crate) enum Via {
    /// A tool the client sees (direct or loaded by ToolSearch).
    Call,
    /// The proxy's `mcp` tool.
    Proxy,
    /// A script's `tools.<name>()`.
    Script,
}

impl Via {
    fn name(self) -> &'static str {
        match self {
            Via::Call => "call",
            Via::Proxy => "proxy",
            Via::Script => "script",
        }
    }
}

/// A call that passed its checks, to be told once it ends.
pub(crate) struct Admitted {
    record: Option<Record>,
    started: Instant,
    /// The arguments to call with: the client's, or a guard's rewrite.
    pub(crate) arguments: Option<Map<String, Value>>,
    /// The call as the guards saw it, when guards check its result.
    guarded: Option<GuardedCall>,
}

impl Gateway {
    /// Runs the checks before `entry` is called with `args`: the call may go
    /// ahead, or the refusal (told in the audit trail) says why not.
    pub(crate) async fn admit(
        &self,
        client: &ClientScope,
        entry: &Entry,
        args: Option<&Map<String, Value>>,
        asker: &Asker,
        via: Via,
    ) -> Result<Admitted, Refused> {
        let started = Instant::now();
        let record = self.record(client, entry, args, via);
        // A limited call troubles neither the guards nor the user.
        let checked = match self.shared.host.rate_check(client.name(), entry).await {
            Ok(()) => self.guard_and_approve(client, entry, args, asker).await,
            Err(limited) => Err(Refused(format!(
                "Error: {limited}. The call of {} did not run.",
                entry.name
            ))),
        };
        match checked {
            Ok((asked, arguments, guarded)) => Ok(Admitted {
                record: record.map(|mut r| {
                    if asked {
                        r.decision = Decision::Asked;
                        r.reason = Some("the user allowed it".into());
                    }
                    r
                }),
                started,
                arguments,
                guarded,
            }),
            Err(refused) => {
                if let Some(mut r) = record {
                    r.decision = Decision::Denied;
                    r.reason = Some(refused.0.trim_start_matches("Error: ").to_string());
                    r.duration_ms = started.elapsed().as_millis() as u64;
                    self.shared.host.audit().inspect(|log| log.write(&r));
                }
                Err(refused)
            }
        }
    }

    /// The guards' verdict, then the user's approval where a guard or
    /// `approve` asks for it: whether the user was asked, the arguments to
    /// call with, and the call as the guards saw it.
    async fn guard_and_approve(
        &self,
        client: &ClientScope,
        entry: &Entry,
        args: Option<&Map<String, Value>>,
        asker: &Asker,
    ) -> Result<(bool, Option<Map<String, Value>>, Option<GuardedCall>), Refused> {
        let host = &self.shared.host;
        if !host.guarded() {
            let asked = self.approve(entry, args, asker, None).await?;
            return Ok((asked, args.cloned(), None));
        }
        let text = args.map_or_else(|| "{}".into(), |a| Value::Object(a.clone()).to_string());
        let session = self.session_id();
        let (verdict, mut call) = host.guard_call(entry, text, client.name(), session).await;
        let (rewritten, ask) = match verdict {
            Before::Deny(reason) => {
                return Err(Refused(format!(
                    "Error: {reason}. The call of {} did not run.",
                    entry.name
                )));
            }
            Before::Run { rewritten, ask } => (rewritten, ask),
        };
        let arguments = match rewritten {
            None => args.cloned(),
            Some(text) => match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(m)) => {
                    call.arguments = text;
                    Some(m)
                }
                _ => {
                    return Err(Refused(
                        "Error: a guard rewrote the arguments into something not an object.".into(),
                    ));
                }
            },
        };
        let asked = self
            .approve(entry, arguments.as_ref(), asker, ask.as_deref())
            .await?;
        Ok((asked, arguments, Some(call)))
    }

    /// This session's id among the host's sessions (0 before `initialize`).
    fn session_id(&self) -> u64 {
        let session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        session.as_ref().map_or(0, |g| g.session().id)
    }

    /// The audit line of a call, before it is decided; none without a trail.
    fn record(
        &self,
        client: &ClientScope,
        entry: &Entry,
        args: Option<&Map<String, Value>>,
        via: Via,
    ) -> Option<Record> {
        let log = self.shared.host.audit()?;
        let arguments_bytes = args.map_or(2, |a| Value::Object(a.clone()).to_string().len());
        Some(Record {
            time: iso_time(crate::clock::now_ms()),
            session: Some(self.session_id()).filter(|&id| id != 0),
            client: client.name().to_string(),
            server: entry.tool.server.clone(),
            tool: entry.tool.name.clone(),
            via: via.name(),
            decision: Decision::Allowed,
            reason: None,
            duration_ms: 0,
            arguments_bytes,
            result_bytes: 0,
            error: None,
            arguments: log
                .keeps_arguments()
                .then(|| args.cloned().unwrap_or_default()),
        })
    }
}

impl Admitted {
    /// The guards' verdict on the call's result: it as it came, a guard's
    /// replacement, or the reason it is withheld. Only tools' results are
    /// guarded (a resource tool's reading passes as it is).
    pub(crate) async fn guard(&self, host: &Host, raw: RawResult) -> Result<RawResult, String> {
        let (Some(call), RawResult::Tool(result)) = (&self.guarded, &raw) else {
            return Ok(raw);
        };
        let text = serde_json::to_string(result).map_err(|e| e.to_string())?;
        match host.guard_result(call.clone(), text).await {
            After::Keep => Ok(raw),
            After::Replace(json) => serde_json::from_str(&json)
                .map(RawResult::Tool)
                .map_err(|e| format!("a guard's replacement is not a tool result ({e}), so the result is withheld")),
            After::Deny(reason) => Err(reason),
        }
    }

    /// Tells the call's end: `told` gives the size of its result and its
    /// error (worked out only when there is a trail to tell).
    pub(crate) fn finish(self, host: &Host, told: impl FnOnce() -> (usize, Option<String>)) {
        let (Some(mut r), Some(log)) = (self.record, host.audit()) else {
            return;
        };
        r.duration_ms = self.started.elapsed().as_millis() as u64;
        (r.result_bytes, r.error) = told();
        log.write(&r);
    }
}
