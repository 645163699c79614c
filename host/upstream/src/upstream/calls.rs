//! mcpw's `tools/call` to a server: progress and the server's requests routed
//! to the session the call is made for, `input_required` rounds answered, and
//! a task either handed to the caller or waited out.

use super::handler::{ProgressUpdate, token_key};
use super::origin::{self, Origin};
use super::{ConnectError, Connection, progress};
use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, CreateTaskResult, Request, RequestId,
    ServerResult,
};
use rmcp::service::PeerRequestOptions;
use std::time::Duration;
use tokio::sync::mpsc;

/// How one call reports back and what it may answer.
#[derive(Clone, Debug, Default)]
pub struct CallOptions {
    /// Where the server's progress notifications for this call go.
    pub progress: Option<mpsc::UnboundedSender<ProgressUpdate>>,
    /// The session the call is made for: requests the server makes while
    /// serving it (sampling, elicitation, roots) go there.
    pub origin: Option<Origin>,
    /// The caller takes a task (the `io.modelcontextprotocol/tasks`
    /// extension) instead of the result: a server that answers with one has
    /// it handed back. Otherwise mcpw waits the task out.
    pub accept_task: bool,
}

impl CallOptions {
    /// What the call needs of its connection: a session whose client takes
    /// the server's requests needs a connection on which the server can make
    /// them.
    pub fn need<'a>(&self, tool: &'a str) -> super::Need<'a> {
        origin::need_of(self.origin.as_ref().map(|o| &o.session.client), Some(tool))
    }
}

/// What a server answered to `tools/call`.
#[derive(Clone, Debug)]
pub enum Called {
    /// The result.
    Done(CallToolResult),
    /// A task that will produce it; only for a call with
    /// [`CallOptions::accept_task`].
    Task(CreateTaskResult),
}

/// As many `input_required` rounds as rmcp's own client drives.
pub(super) const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

impl Connection {
    /// Calls a tool by its original name; gives up after `timeout`, which
    /// covers the whole call: its input rounds and waiting out its task.
    /// Dropping the future cancels the call (or its task) upstream.
    ///
    /// The bare call, below every check: the host's lifecycle makes it for
    /// the one call path, and hands no connection out, so that no caller of
    /// the host reaches a server around the pipeline.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        timeout: Duration,
        options: CallOptions,
    ) -> Result<Called, ConnectError> {
        let mut params = CallToolRequestParams::new(name.to_string());
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        let call = async {
            for _ in 0..MAX_INPUT_ROUNDS {
                let (answer, progress) = self.call_once(params.clone(), &options).await?;
                match answer {
                    ServerResult::CallToolResult(result) => return Ok(Called::Done(result)),
                    ServerResult::CreateTaskResult(task) if options.accept_task => {
                        return Ok(Called::Task(task));
                    }
                    ServerResult::CreateTaskResult(task) => {
                        // The task's progress keeps the call's token.
                        let _progress = progress;
                        return self
                            .wait_task(task.task, options.origin.as_ref())
                            .await
                            .map(Called::Done);
                    }
                    ServerResult::InputRequiredResult(asked) => {
                        let answers = self
                            .answer_inputs(options.origin.as_ref(), asked.input_requests)
                            .await?;
                        params.input_responses = (!answers.is_empty()).then_some(answers);
                        params.request_state = asked.request_state;
                    }
                    other => {
                        return Err(ConnectError::Protocol {
                            message: format!("unexpected answer to tools/call: {other:?}"),
                            stderr: None,
                        });
                    }
                }
            }
            Err(too_many_rounds())
        };
        match tokio::time::timeout(timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(self.timed_out(timeout)),
        }
    }

    /// Sends one `tools/call` and waits for its answer, routing what the
    /// server sends about it. Returns the answer and the call's progress
    /// route, which stays open while held (a task's progress uses it).
    async fn call_once(
        &self,
        mut params: CallToolRequestParams,
        options: &CallOptions,
    ) -> Result<(ServerResult, Option<progress::Route>), ConnectError> {
        self.stamp(&mut params.meta);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        self.send_once(request, options).await
    }

    /// Sends one request made for `options`' session and waits for its
    /// answer, routing what the server asks or reports about it there.
    pub(super) async fn send_once(
        &self,
        request: ClientRequest,
        options: &CallOptions,
    ) -> Result<(ServerResult, Option<progress::Route>), ConnectError> {
        // rmcp gives every request its own id and progress token; the handle
        // says which, for routing what the server sends about this call.
        let peer = self.service.peer().clone();
        let sending = options.origin.clone().map(|o| self.routes.calls.sending(o));
        // The server may report progress before the route below is in place:
        // what it reports meanwhile is held for the call.
        let progress_sending = options
            .progress
            .clone()
            .map(|tx| (tx, progress::sending(&self.routes.progress)));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.service_error(e))?;
        let _call = sending.map(|s| s.sent(handle.id.clone()));
        #[cfg(test)]
        tests::before_route().await;
        let progress = progress_sending
            .map(|(tx, sending)| sending.route(token_key(&handle.progress_token.0), tx));
        let mut guard = CancelOnDrop {
            peer,
            id: Some(handle.id.clone()),
        };
        let answer = handle.await_response().await;
        guard.id = None;
        Ok((answer.map_err(|e| self.service_error(e))?, progress))
    }

    /// Answers the requests in an `input_required` answer or task for the
    /// session `origin` (see [`origin::answer_inputs`]).
    pub(super) async fn answer_inputs(
        &self,
        origin: Option<&Origin>,
        requests: Option<rmcp::model::InputRequests>,
    ) -> Result<rmcp::model::InputResponses, ConnectError> {
        let routes = &self.routes;
        origin::answer_inputs(
            &routes.server,
            &routes.sessions,
            origin,
            requests.unwrap_or_default(),
        )
        .await
        .map_err(|e| ConnectError::Rpc(e.message.to_string()))
    }
}

/// Why a call that kept asking for input ended.
pub(super) fn too_many_rounds() -> ConnectError {
    ConnectError::Protocol {
        message: format!(
            "the server still asked for input after {MAX_INPUT_ROUNDS} rounds of answers"
        ),
        stderr: None,
    }
}

/// Sends `notifications/cancelled` for a request abandoned before its answer.
struct CancelOnDrop {
    peer: rmcp::service::Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let param = serde_json::from_value(
                    serde_json::json!({"requestId": id, "reason": "cancelled by mcpw's client"}),
                );
                if let Ok(param) = param {
                    let _ = peer.notify_cancelled(param).await;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::ConnectContext;
    use crate::upstream::events::{self, UpstreamEvent};
    use rmcp::model::{
        CallToolResponse, ContentBlock, ProgressNotificationParam, ServerCapabilities, ServerConfig,
    };
    use rmcp::service::RequestContext;
    use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
    use std::sync::Arc;
    use tokio::sync::watch;

    tokio::task_local! {
        /// Set by a test: its calls put their progress route in place only
        /// once this is true.
        static ROUTE_WHEN: watch::Receiver<bool>;
    }

    /// Holds a test's call between sending it and routing its progress, as
    /// a busy machine may (see [`ROUTE_WHEN`]).
    pub(super) async fn before_route() {
        if let Ok(mut open) = ROUTE_WHEN.try_with(|w| w.clone()) {
            let _ = open.wait_for(|open| *open).await;
        }
    }

    /// A server that reports progress twice the moment it is called, then
    /// says its tool list changed, then answers.
    struct Reports;

    impl ServerHandler for Reports {
        fn get_info(&self) -> ServerConfig {
            let mut info = ServerConfig::default();
            info.capabilities = ServerCapabilities::builder().enable_tools().build();
            info
        }

        async fn call_tool(
            &self,
            _request: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, McpError> {
            let token = context.meta.get_progress_token().expect("a progress token");
            for progress in [1.0, 2.0] {
                let p = ProgressNotificationParam::new(token.clone(), progress);
                let _ = context.peer.notify_progress(p).await;
            }
            let _ = context.peer.notify_tool_list_changed().await;
            Ok(CallToolResult::success(vec![ContentBlock::text("done")]).into())
        }
    }

    async fn connected(events: events::EventSender) -> Connection {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = Reports.serve(theirs).await {
                let _ = running.waiting().await;
            }
        });
        let ctx = ConnectContext {
            server: "reports".into(),
            env: crate::paths::Environment::from_pairs([("HOME", "/nonexistent")]),
            events,
            legacy_only: true,
            redact: Default::default(),
            sessions: Arc::default(),
            vault: None,
            owner: None,
            stores: crate::components::keyvalue::Stores::new(None),
            secrets: crate::auth::store::Vault::new(Default::default(), "/nonexistent"),
        };
        let (read, write) = tokio::io::split(ours);
        let timeout = Duration::from_secs(30);
        let (conn, _) = Connection::over_stream(read, write, &ctx, timeout)
            .await
            .expect("connected");
        conn
    }

    /// The server's progress is read before the call's route is in place:
    /// it still reaches the call, in order, before the answer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn progress_read_before_its_route_is_in_place_reaches_the_call() {
        let (events, mut heard) = events::channel();
        let conn = Arc::new(connected(events).await);
        let (open, route_when) = watch::channel(false);
        let (tx, mut progress) = mpsc::unbounded_channel();
        let options = CallOptions {
            progress: Some(tx),
            ..Default::default()
        };
        let calling = conn.clone();
        let call = tokio::spawn(ROUTE_WHEN.scope(route_when, async move {
            let timeout = Duration::from_secs(30);
            calling.call_tool("report", None, timeout, options).await
        }));
        // The server said its list changed after its progress; the transport
        // reads in order, so the progress has been read.
        loop {
            match heard.recv().await.expect("the server's events") {
                UpstreamEvent::ListChanged(_) => break,
                _ => continue,
            }
        }
        open.send_replace(true);
        let called = call.await.unwrap().expect("the call's answer");
        assert!(matches!(called, Called::Done(_)), "{called:?}");
        let got: Vec<f64> = std::iter::from_fn(|| progress.try_recv().ok())
            .map(|u| u.progress)
            .collect();
        assert_eq!(got, [1.0, 2.0], "the progress read before the route");
    }
}
