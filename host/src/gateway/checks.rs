//! The checks every call a session asks for passes, whichever way it comes
//! (a tool of its own, the proxy's `mcp`, a script): rate limits and the
//! user's approval before it runs, and its line in the audit trail once it
//! is decided.

use super::approval::{Asker, Refused};
use super::{ClientScope, Gateway};
use crate::audit::{Decision, Record, iso_time};
use crate::catalog::Entry;
use crate::host::Host;
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
        // A limited call does not trouble the user with a question.
        let checked = match self.shared.host.rate_check(client.name(), entry).await {
            Ok(()) => self.approve(entry, args, asker).await,
            Err(limited) => Err(Refused(format!(
                "Error: {limited}. The call of {} did not run.",
                entry.name
            ))),
        };
        match checked {
            Ok(asked) => Ok(Admitted {
                record: record.map(|mut r| {
                    if asked {
                        r.decision = Decision::Asked;
                        r.reason = Some("the user allowed it".into());
                    }
                    r
                }),
                started,
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
        let session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        Some(Record {
            time: iso_time(crate::clock::now_ms()),
            session: session.as_ref().map(|g| g.session().id),
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
