//! Tasks (the `io.modelcontextprotocol/tasks` extension): a server may answer
//! `tools/call` with a task, to be polled with `tasks/get`, given input with
//! `tasks/update` and stopped with `tasks/cancel`. mcpw declares the extension
//! to every server; a caller that does not take tasks gets the result, mcpw
//! waiting the task out for it.

use super::origin::Origin;
use super::{ConnectError, Connection};
use rmcp::model::{
    CallToolResult, CancelTaskParams, GetTaskParams, GetTaskResult, Task, TaskPayload,
    UpdateTaskParams,
};
use std::collections::HashSet;
use std::time::Duration;

/// How often a task is polled when its server does not say, and the bounds
/// put on what it says: often enough to answer promptly, seldom enough not
/// to load the server.
const POLL_DEFAULT: Duration = Duration::from_millis(500);
const POLL_MIN: Duration = Duration::from_millis(20);
const POLL_MAX: Duration = Duration::from_secs(5);

fn poll_interval(task: &Task) -> Duration {
    task.poll_interval_ms
        .map_or(POLL_DEFAULT, Duration::from_millis)
        .clamp(POLL_MIN, POLL_MAX)
}

impl Connection {
    /// `tasks/get`: the task's state.
    pub async fn get_task(
        &self,
        task_id: &str,
        timeout: Duration,
    ) -> Result<GetTaskResult, ConnectError> {
        let get = self.service.peer().get_task(GetTaskParams::new(task_id));
        self.within(timeout, get).await
    }

    /// `tasks/update`: answers to the requests the task is waiting on.
    pub async fn update_task(
        &self,
        params: UpdateTaskParams,
        timeout: Duration,
    ) -> Result<(), ConnectError> {
        self.within(timeout, self.service.peer().update_task(params))
            .await
    }

    /// `tasks/cancel`: asks the server to stop the task.
    pub async fn cancel_task(&self, task_id: &str, timeout: Duration) -> Result<(), ConnectError> {
        let cancel = self
            .service
            .peer()
            .cancel_task(CancelTaskParams::new(task_id));
        self.within(timeout, cancel).await
    }

    /// Waits a task out for a caller that does not take tasks: polls it,
    /// answers what it asks on behalf of `origin`, and returns its result.
    /// Dropping the future cancels the task.
    pub(super) async fn wait_task(
        &self,
        task: Task,
        origin: Option<&Origin>,
    ) -> Result<CallToolResult, ConnectError> {
        let mut guard = CancelTaskOnDrop {
            peer: self.service.peer().clone(),
            task_id: Some(task.task_id.clone()),
        };
        let mut interval = poll_interval(&task);
        // Keys are unique over a task's life: each request is answered once,
        // even when a poll comes before the server took the answer in.
        let mut answered = HashSet::new();
        loop {
            tokio::time::sleep(interval).await;
            let state = self
                .service
                .peer()
                .get_task(GetTaskParams::new(&task.task_id))
                .await
                .map_err(|e| self.service_error(e))?
                .task;
            interval = poll_interval(&state.task);
            match state.payload {
                TaskPayload::Working => {}
                TaskPayload::InputRequired { input_requests } => {
                    let new: rmcp::model::InputRequests = input_requests
                        .into_iter()
                        .filter(|(key, _)| !answered.contains(key))
                        .collect();
                    if new.is_empty() {
                        continue;
                    }
                    answered.extend(new.keys().cloned());
                    let answers = self.answer_inputs(origin, Some(new)).await?;
                    let update = UpdateTaskParams::new(&task.task_id, answers);
                    self.service
                        .peer()
                        .update_task(update)
                        .await
                        .map_err(|e| self.service_error(e))?;
                    // The task goes on at once: look again soon.
                    interval = POLL_MIN;
                }
                TaskPayload::Completed { result } => {
                    guard.task_id = None;
                    return serde_json::from_value(serde_json::Value::Object(result)).map_err(
                        |e| ConnectError::Protocol {
                            message: format!("the task's result is not a tool result: {e}"),
                            stderr: None,
                        },
                    );
                }
                TaskPayload::Failed { error } => {
                    guard.task_id = None;
                    let message = error
                        .get("message")
                        .and_then(|m| m.as_str())
                        .unwrap_or("the task failed");
                    return Err(ConnectError::Rpc(message.to_string()));
                }
                TaskPayload::Cancelled => {
                    guard.task_id = None;
                    let why = state
                        .task
                        .status_message
                        .unwrap_or_else(|| "no reason given".into());
                    return Err(ConnectError::Rpc(format!(
                        "the server cancelled the task ({why})"
                    )));
                }
                other => {
                    return Err(ConnectError::Protocol {
                        message: format!("a task state mcpw does not know: {other:?}"),
                        stderr: None,
                    });
                }
            }
        }
    }
}

/// Sends `tasks/cancel` for a task abandoned before it ended.
struct CancelTaskOnDrop {
    peer: rmcp::service::Peer<rmcp::RoleClient>,
    task_id: Option<String>,
}

impl Drop for CancelTaskOnDrop {
    fn drop(&mut self) {
        let Some(task_id) = self.task_id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let cancel = peer.cancel_task(CancelTaskParams::new(task_id));
                let _ = tokio::time::timeout(Duration::from_secs(5), cancel).await;
            });
        }
    }
}
