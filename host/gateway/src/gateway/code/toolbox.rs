//! The tools of one session as a script's [`Toolbox`]: each call resolved
//! among the tools the client sees and made the way its own calls are.

use crate::gateway::{ClientScope, Session};
use crate::host::CallOptions;
use crate::host::pipeline::{Caller, Via};
use crate::host::scripts::{
    ScriptCalls, read_skill, script_arguments, script_call, service_error, tool_info,
};
use crate::plugin::script::{Done, SkillFile, ToolInfo, Toolbox};
use crate::plugin::{CallOutcome, SearchOptions, ServiceError};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext, RoleServer};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

pub(super) struct SessionToolbox {
    gw: Session,
    client: ClientScope,
    /// The session the calls are made for (servers' requests go back to it).
    options: CallOptions,
    calls: ScriptCalls,
    /// The script's progress, when the client asked for it: one step per
    /// finished call.
    progress: Option<Arc<Progress>>,
    /// Who the script's calls are made for: the session's client, which
    /// approves them where settings ask.
    caller: Caller,
}

/// Where a script's progress goes, and how far it got.
struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    finished: AtomicU32,
}

impl Progress {
    /// Tells the client that one more call finished, before the script
    /// sees it (so no progress follows the script's result).
    async fn step(&self, name: &str, outcome: &Result<CallOutcome, ServiceError>) {
        let n = self.finished.fetch_add(1, Ordering::AcqRel) + 1;
        let message = match outcome {
            Ok(o) if o.is_error => format!("{name}: tool error"),
            Ok(_) => format!("{name}: done"),
            Err(e) => format!("{name}: {e}"),
        };
        let param =
            ProgressNotificationParam::new(self.token.clone(), f64::from(n)).with_message(message);
        let _ = self.peer.notify_progress(param).await;
    }
}

impl SessionToolbox {
    pub(super) fn new(
        gw: &Session,
        client: &ClientScope,
        ctx: &RequestContext<RoleServer>,
    ) -> Self {
        // Inner calls' own progress is not forwarded: the tokens of several
        // calls would interleave under the script's one.
        let options = CallOptions {
            origin: gw.origin(ctx),
            ..CallOptions::default()
        };
        SessionToolbox {
            gw: gw.clone(),
            client: client.clone(),
            options,
            calls: ScriptCalls::new(),
            caller: gw.caller(client, Via::Script, ctx),
            progress: ctx.meta.get_progress_token().map(|token| {
                Arc::new(Progress {
                    peer: ctx.peer.clone(),
                    token,
                    finished: AtomicU32::new(0),
                })
            }),
        }
    }
}

impl Toolbox for SessionToolbox {
    fn start(&self, name: &str, arguments: &str, done: Done) {
        let (gw, client, options) = (self.gw.clone(), self.client.clone(), self.options.clone());
        let (name, arguments) = (name.to_string(), arguments.to_string());
        let (progress, caller) = (self.progress.clone(), self.caller.clone());
        self.calls.spawn(async move {
            let outcome = match gw.shared.resolve_for(&client, &name).await {
                // A result this session kept, read as the agent reads it.
                Err(_) if name == crate::gateway::results::TOOL_NAME => {
                    read_kept(&gw, &arguments).await
                }
                Ok(entry) => {
                    let (host, shelf) = (&gw.shared.host, &gw.state.shelf);
                    script_call(host, &caller, &entry, &arguments, options, shelf).await
                }
                Err(e) => Err(service_error(e)),
            };
            if let Some(p) = progress {
                p.step(&name, &outcome).await;
            }
            done(outcome);
        });
    }

    fn search(&self, query: &str, limit: u32) -> Result<Vec<ToolInfo>, ServiceError> {
        let options = SearchOptions {
            limit,
            ..Default::default()
        };
        let shared = &self.gw.shared;
        let hits = self
            .calls
            .block_on(async {
                // Search needs every server's tools, as the proxy's does.
                shared.ready().await;
                shared.search_for(&self.client, query, options).await
            })
            .map_err(|e| ServiceError::Failed(e.to_string()))?;
        Ok(hits.iter().map(|h| tool_info(&h.entry)).collect())
    }

    fn read_skill(&self, skill: &str, file: Option<&str>) -> Result<SkillFile, ServiceError> {
        let shared = &self.gw.shared;
        let sees = |s: &str| self.client.allows(s);
        self.calls.block_on(async {
            shared.ready().await;
            let options = self.options.clone();
            read_skill(&shared.host, &self.caller, skill, file, &sees, options).await
        })
    }

    fn describe(&self, name: &str) -> Result<ToolInfo, ServiceError> {
        self.calls
            .block_on(async {
                self.gw.shared.ready().await;
                self.gw.shared.resolve_for(&self.client, name).await
            })
            .map(|e| tool_info(&e))
            .map_err(service_error)
    }

    fn stop(&self) {
        self.calls.stop();
    }

    fn servers(&self) -> Option<Arc<std::collections::BTreeSet<String>>> {
        self.client.reach()
    }
}

/// `read_result` called by a script: a result this session kept. The
/// script gets the range's text, or, for a projection read whole, its value.
async fn read_kept(gw: &Session, arguments: &str) -> Result<CallOutcome, ServiceError> {
    let args = script_arguments(arguments)?;
    let read = gw
        .read_result_tool(&args)
        .await
        .map_err(|e| ServiceError::Failed(e.message.to_string()))?;
    let read = serde_json::to_value(&read).unwrap_or_default();
    let text = read["content"][0]["text"].as_str().unwrap_or_default();
    if read["isError"] == true {
        return Err(ServiceError::Failed(text.to_string()));
    }
    let whole = read["structuredContent"]["more"] == false;
    let projected = args.contains_key("select")
        && args
            .get("format")
            .and_then(|f| f.as_str())
            .is_none_or(|f| f == "json");
    let structured = (projected && whole)
        .then(|| serde_json::from_str::<serde_json::Value>(text).ok())
        .flatten();
    Ok(CallOutcome {
        content: serde_json::json!([{"type": "text", "text": text}]).to_string(),
        structured_content: structured.map(|v| v.to_string()),
        is_error: false,
    })
}
