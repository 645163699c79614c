//! A tool call on an upstream server for a session: name resolution, the
//! server's progress and requests routed back to the session, cancellation,
//! and the server's result (or task) as the session gets it.

use super::wire::result;
use super::{Session, tasks};
use crate::downstream::Origin;
use crate::host::pipeline::{Ran, Via};
use crate::host::{CallOptions, HostError, RawResult};
use crate::present::Content;
use rmcp::ErrorData as McpError;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

impl Session {
    /// Calls an upstream tool for the agent, forwarding progress and
    /// cancellation. The server's result passes through as it came, unless
    /// it is an error, which gets the tool's parameters appended; so does a
    /// task, when the client takes tasks (see [`tasks`]).
    pub(super) async fn call_upstream(
        &self,
        name: &str,
        args: Option<serde_json::Map<String, Value>>,
        context: &RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        let client = self.client(&context.extensions);
        let mut found = self.entry_called(&client, name, context).await;
        // A tool of a per-person server nobody could list yet is found once
        // it is listed as this person.
        if found.is_err() {
            let unlisted = self.list_unlisted_for(&client, context).await;
            if unlisted.listed {
                found = self.entry_called(&client, name, context).await;
            }
            // Unlisted for want of the caller's own login: how to make it.
            if found.is_err()
                && let Some(needed) = self.sign_in_to_list(&client, (name, None), &unlisted).await
            {
                return needed.answer(context, None).map(Into::into);
            }
        }
        let (entry, via) = match found {
            Ok(found) => found,
            Err(told) => return told.map(Into::into),
        };
        let host = &self.shared.host;
        let caller = self.caller(&client, via, context);
        let viewed = self.view_wanted(&entry, &args, context);
        let (mut options, forwarding) = self.call_options(context);
        // A task's result would reach the client unguarded: with guards, the
        // result comes in the answer.
        options.accept_task = !host.guarded()
            && context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks());
        let ran = tokio::select! {
            r = host.run_call(&caller, &entry, args, options) => r,
            _ = context.ct.cancelled() => return Err(McpError::internal_error("cancelled by the client", None)),
        };
        progress_sent(forwarding).await;
        let raw = match ran {
            Ran::Done(Ok(RawResult::Task(t))) => {
                self.gave_task(&client, &entry, &t).await;
                Ok(RawResult::Task(t))
            }
            Ran::Done(raw) => raw,
            Ran::Refused(why) => {
                return result(&[Content::text(why)], None, true).map(Into::into);
            }
            Ran::Withheld(why) => {
                let text = format!("Error: {why}");
                return result(&[Content::text(text)], None, true).map(Into::into);
            }
        };
        self.answer_with(&entry, raw, viewed, context).await
    }

    /// The entry a call names, and how it came: by mcpw's name, or by its
    /// server's own name from an app; else the answer that says why not.
    async fn entry_called(
        &self,
        client: &super::ClientScope,
        name: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(crate::host::EntryRef, Via), Result<rmcp::model::CallToolResult, McpError>> {
        match self.shared.resolve_for(client, name).await {
            Ok(entry) => Ok((entry, Via::Call)),
            Err(e @ HostError::ToolNotFound { .. }) => {
                match self.app_call(client, name, context).await {
                    Some(entry) => Ok((entry, Via::App)),
                    None => Err(result(&[Content::text(e.to_string())], None, true)),
                }
            }
            Err(e) => Err(result(&[Content::text(format!("Error: {e}"))], None, true)),
        }
    }

    /// The session's answer to a call that ran: the server's result for this
    /// client (its URIs as the client knows them, cut to the budget), with
    /// the view mcpw opened for it where `viewed` keeps the arguments.
    async fn answer_with(
        &self,
        entry: &crate::host::EntryRef,
        raw: Result<RawResult, HostError>,
        viewed: Option<Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        let mut view_given = None;
        let told = match raw {
            Ok(RawResult::Tool(r)) if r.is_error != Some(true) => {
                let given = viewed.map(|args| (args, r.clone()));
                let mut r = uris_exposed(entry, r);
                self.ui_for_client(&mut r, context);
                if self.passes(entry, &r, &Default::default()) {
                    if let Some((args, raw)) = given {
                        self.open_view(entry, args, &raw, context, &mut r);
                    }
                    return Ok(r.into());
                }
                view_given = given;
                r
            }
            Ok(RawResult::Task(t)) => {
                return Ok(rmcp::model::CallToolResponse::Task(tasks::for_client(
                    &entry.tool.server,
                    t,
                )));
            }
            Ok(raw) => {
                let out = crate::host::present_result(entry, raw);
                result(&out.content, out.structured_content, out.is_error)?
            }
            Err(e) => {
                if let Some(needed) = self.sign_in_needed(&e).await {
                    return needed.answer(context, None).map(Into::into);
                }
                return result(&[Content::text(format!("Error: {e}"))], None, true).map(Into::into);
            }
        };
        let told = serde_json::to_value(told).map_err(super::wire::internal)?;
        let shaped = self.shape(entry, told, &Default::default()).await;
        if shaped.first {
            let _ = context.peer.notify_tool_list_changed().await;
        }
        let mut told = super::wire::from_json::<rmcp::model::CallToolResult>(shaped.result)?;
        if let Some((args, raw)) = view_given {
            self.open_view(entry, args, &raw, context, &mut told);
        }
        Ok(told.into())
    }
}

impl Session {
    /// The tool an app calls by its server's own name (an app knows its
    /// server's names, not mcpw's), for a host that declares MCP Apps: the
    /// one tool of that name among the servers the client sees, one only an
    /// app may call among them.
    async fn app_call(
        &self,
        client: &super::ClientScope,
        name: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<crate::host::EntryRef> {
        if !super::wire::takes_apps(context) {
            return None;
        }
        self.shared.app_tool(client, None, name).await
    }

    /// How an upstream call made for the client's request `context` reports
    /// back: its progress, when the client asked for progress (a
    /// `progressToken` in `_meta`), and the server's requests, to this session.
    /// Also returns the progress forwarder: await it (see [`progress_sent`])
    /// before answering, so that no progress follows the result.
    pub(super) fn call_options(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> (CallOptions, Forwarding) {
        let (progress, forwarding) = progress_forwarding(context).unzip();
        let options = CallOptions {
            progress,
            origin: self.origin(context),
            accept_task: false,
        };
        (options, forwarding)
    }
}

impl Session {
    /// What this session's calls need of a server's connection (see
    /// [`CallOptions::need`]).
    pub(super) fn call_options_need(&self) -> crate::servers::Need<'static> {
        let session = self
            .state
            .registered
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let client = session.as_ref().map(|g| &g.session().client);
        crate::downstream::need_of(client, None)
    }

    /// The session and request a call is made for: a server's requests
    /// while serving it go there.
    pub(super) fn origin(&self, context: &RequestContext<RoleServer>) -> Option<Origin> {
        if let Some(held) = context.extensions.get::<super::held::HeldClient>() {
            let session = crate::downstream::Session {
                id: held.id,
                client: held.client(),
            };
            let request = context.id.clone();
            return Some(Origin { session, request });
        }
        self.opened(context).map(|session| Origin {
            session,
            request: context.id.clone(),
        })
    }

    /// This session among the host's sessions, opened now if the client
    /// made its `initialize` and `initialized` has not been handled yet: the
    /// client's next request may be handled first, and a call made then must
    /// still get its server's requests. None for a client without a session
    /// (the stateless revision's).
    pub(super) fn opened(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<crate::downstream::Session> {
        if super::held::is_stateless(context) {
            let session = self
                .state
                .registered
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            return session.as_ref().map(|g| g.session().clone());
        }
        self.open_session(&context.peer)
    }

    /// This handshake-era session among the host's sessions, opened once.
    pub(super) fn open_session(
        &self,
        peer: &rmcp::Peer<RoleServer>,
    ) -> Option<crate::downstream::Session> {
        let mut session = self
            .state
            .registered
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if session.is_none() && peer.peer_info().is_some() {
            let sessions = self.shared.host.servers().sessions();
            *session =
                Some(sessions.open(super::peer_client::of(peer), self.session_client().reach()));
        }
        session.as_ref().map(|g| g.session().clone())
    }
}

/// The task that forwards a call's progress, when the client asked for it.
type Forwarding = Option<Forwarder>;

/// Forwards a call's progress to the client until told the call is done.
pub(super) struct Forwarder {
    /// Says the call is done: what it reported by then is all there is.
    done: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// Waits until the progress of a finished call has been sent on. Every
/// transport hands progress to its call as it reads it, before the answer
/// behind it, so what the call reported is in the forwarder's channel once
/// the call is done: the forwarder sends that on and ends. (Not the channel
/// closing: a clone of its sender may outlive the call.)
pub(super) async fn progress_sent(forwarding: Forwarding) {
    if let Some(Forwarder { done, task }) = forwarding {
        let _ = done.send(());
        let _ = task.await;
    }
}

/// Forwards the upstream call's progress to the client, when the client asked
/// for progress (a `progressToken` in `_meta`).
fn progress_forwarding(context: &RequestContext<RoleServer>) -> Option<(Progress, Forwarder)> {
    let token = context.meta.get_progress_token()?;
    let peer = context.peer.clone();
    Some(forwarder(move |u| {
        let mut p = json!({"progressToken": token.0, "progress": u.progress});
        if let Some(t) = u.total {
            p["total"] = json!(t);
        }
        if let Some(m) = u.message {
            p["message"] = json!(m);
        }
        let peer = peer.clone();
        async move {
            if let Ok(param) = serde_json::from_value(p) {
                let _ = peer.notify_progress(param).await;
            }
        }
    }))
}

/// Where a call's progress goes.
type Progress = tokio::sync::mpsc::UnboundedSender<crate::servers::ProgressUpdate>;

/// A channel for a call's progress, and the task that passes what comes to
/// `send`, in order. Dropping the [`Forwarder`] instead of passing it to
/// [`progress_sent`] leaves it forwarding until the call lets go of the
/// channel.
fn forwarder<F, Sent>(send: F) -> (Progress, Forwarder)
where
    F: Fn(crate::servers::ProgressUpdate) -> Sent + Send + 'static,
    Sent: std::future::Future<Output = ()> + Send,
{
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (done, mut finished) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut waiting = true;
        loop {
            let next = tokio::select! {
                biased;
                u = rx.recv() => u,
                told = &mut finished, if waiting => match told {
                    Ok(()) => break,
                    Err(_) => {
                        waiting = false;
                        continue;
                    }
                },
            };
            let Some(u) = next else { return };
            send(u).await;
        }
        // The call is done: send what it reported, no more.
        while let Ok(u) = rx.try_recv() {
            send(u).await;
        }
    });
    (tx, Forwarder { done, task })
}

/// `result` of `entry`'s server with the URIs it names as the client reads
/// them back: mapped where another server has the same (see
/// [`crate::apps::expose_result`]), by the snapshot the entry was found in.
fn uris_exposed(
    entry: &crate::host::EntryRef,
    result: rmcp::model::CallToolResult,
) -> rmcp::model::CallToolResult {
    let (resources, server) = (entry.snapshot().resources(), &entry.tool.server);
    if !resources.maps(server) {
        return result;
    }
    let Ok(mut value) = serde_json::to_value(&result) else {
        return result;
    };
    crate::apps::expose_result(&mut value, |uri| resources.exposed(server, uri));
    serde_json::from_value(value).unwrap_or(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::ProgressUpdate;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// However slowly the client takes progress, and though the call's
    /// channel outlives the call, the answer waits for what was reported
    /// before it, and no longer.
    #[tokio::test(start_paused = true)]
    async fn the_answer_waits_for_the_progress_reported_before_it() {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let to = sent.clone();
        let (progress, forwarding) = forwarder(move |u: ProgressUpdate| {
            let to = to.clone();
            async move {
                // A slow client.
                tokio::time::sleep(Duration::from_secs(5)).await;
                to.lock().unwrap().push(u.progress);
            }
        });
        for p in [1.0, 2.0, 3.0] {
            let update = ProgressUpdate {
                progress: p,
                total: None,
                message: None,
            };
            progress.send(update).unwrap();
        }
        progress_sent(Some(forwarding)).await;
        assert_eq!(*sent.lock().unwrap(), [1.0, 2.0, 3.0]);
        drop(progress);
    }
}
