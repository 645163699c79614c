//! mcpw's `tools/call` to a server: progress and the server's requests routed
//! to the session the call is made for, `input_required` rounds answered, and
//! a task either handed to the caller or waited out.

use super::handler::{ProgressUpdate, token_key};
use super::origin::{self, Origin};
use super::{ConnectError, Connection};
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
    pub(crate) async fn call_tool(
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
    ) -> Result<(ServerResult, Option<ProgressRoute<'_>>), ConnectError> {
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
    ) -> Result<(ServerResult, Option<ProgressRoute<'_>>), ConnectError> {
        // rmcp gives every request its own id and progress token; the handle
        // says which, for routing what the server sends about this call.
        let peer = self.service.peer().clone();
        let sending = options.origin.clone().map(|o| self.routes.calls.sending(o));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.service_error(e))?;
        let _call = sending.map(|s| s.sent(handle.id.clone()));
        let progress = options.progress.clone().map(|tx| {
            let key = token_key(&handle.progress_token.0);
            origin::lock(&self.routes.progress.calls).insert(key.clone(), tx);
            ProgressRoute {
                connection: self,
                key,
            }
        });
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

/// A call's progress route, removed when dropped.
pub(super) struct ProgressRoute<'a> {
    connection: &'a Connection,
    key: String,
}

impl Drop for ProgressRoute<'_> {
    fn drop(&mut self) {
        origin::lock(&self.connection.routes.progress.calls).remove(&self.key);
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
