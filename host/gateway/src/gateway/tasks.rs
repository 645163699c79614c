//! Tasks through the gateway (the `io.modelcontextprotocol/tasks`
//! extension). A client that declares the extension and calls a server's tool
//! directly gets the server's task when the server makes one; its id, as the
//! client sees it, is `<server>/<the server's task id>`, so that `tasks/get`,
//! `tasks/update` and `tasks/cancel` find their server with no state kept in
//! mcpw. A client without the extension, or a call through `mcp` or
//! `ToolSearch`, gets the result: mcpw waits the task out. A task of a server
//! the client does not see is an unknown task.

use super::task_book::Given;
use super::wire::internal;
use super::{ClientScope, Session};
use crate::host::pipeline::Ran;
use crate::servers::ConnectError;
use crate::servers::ServerError;
use rmcp::ErrorData as McpError;
use rmcp::model::{CreateTaskResult, GetTaskResult, TaskPayload, UpdateTaskParams};

impl Session {
    /// A task's result passed through the guards after, as its call's would
    /// have been: what they replace it with, or an error where they
    /// withhold it, is what the client gets.
    async fn task_result(
        &self,
        client: &ClientScope,
        given: &Given,
        told: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        let host = &self.shared.host;
        let (Ok(entry), Ok(result)) = (
            host.resolve(&given.name).await,
            serde_json::from_value::<rmcp::model::CallToolResult>(told.clone().into()),
        ) else {
            return;
        };
        let caller = self.reader(client);
        let guarded = match host.task_result(&caller, &entry, result).await {
            Ran::Done(Ok(crate::host::RawResult::Tool(r))) => r,
            Ran::Withheld(why) | Ran::Refused(why) => {
                let text = rmcp::model::ContentBlock::text(format!("Error: {why}"));
                rmcp::model::CallToolResult::error(vec![text])
            }
            Ran::Done(_) => return,
        };
        if let Ok(serde_json::Value::Object(guarded)) = serde_json::to_value(guarded) {
            *told = guarded;
        }
    }
}

fn unknown_task(id: &str) -> McpError {
    McpError::invalid_params(format!("unknown task \"{id}\""), None)
}

/// What a server's failure to answer about a task is to the client.
fn task_error(id: &str, e: ServerError) -> McpError {
    match e {
        ServerError::NotFound(_) => unknown_task(id),
        ServerError::Connect {
            error: ConnectError::Rpc(message),
            ..
        } => McpError::invalid_params(message, None),
        e => internal(e),
    }
}

/// The id a client sees for `server`'s task `id`.
pub(crate) fn client_id(server: &str, id: &str) -> String {
    format!("{server}/{id}")
}

/// A server's task as the client sees it.
pub(crate) fn for_client(server: &str, mut task: CreateTaskResult) -> CreateTaskResult {
    task.task.task_id = client_id(server, &task.task.task_id);
    task
}

/// A task of the client's own: whose call made it (as the book has it),
/// its server, the server's own id for it, and the connection need its
/// call was made with (the task lives on that connection).
struct OwnTask<'a> {
    given: Given,
    server: &'a str,
    task: &'a str,
    need: crate::servers::Need<'static>,
}

impl Session {
    /// The task the client's `id` names, when it is this client's.
    async fn task_of<'a>(
        &self,
        client: &ClientScope,
        id: &'a str,
    ) -> Result<OwnTask<'a>, McpError> {
        // Server names have no `/`; a server's task id may.
        let (server, task) = id
            .split_once('/')
            .filter(|(server, _)| client.allows(server))
            .ok_or_else(|| unknown_task(id))?;
        // A task is the client's it was given to: another's is unknown.
        let given = self
            .shared
            .tasks
            .of(id, client.owner())
            .await
            .ok_or_else(|| unknown_task(id))?;
        Ok(OwnTask {
            given,
            server,
            task,
            need: self.call_options_need(),
        })
    }

    /// `tasks/get`.
    pub(super) async fn get_task(
        &self,
        client: &ClientScope,
        id: String,
    ) -> Result<GetTaskResult, McpError> {
        let own = self.task_of(client, &id).await?;
        let host = &self.shared.host;
        let mut result = host
            .get_task(own.server, own.task, own.need)
            .await
            .map_err(|e| task_error(&id, e))?;
        if result.task.status().is_terminal() {
            self.task_ended(client, &id, own.given, &mut result).await;
        }
        result.task.task.task_id = id;
        Ok(result)
    }

    /// Records that the call of `entry` by `client` was answered with the
    /// server's task `task`: only that client reaches it.
    pub(super) async fn gave_task(
        &self,
        client: &ClientScope,
        entry: &crate::host::EntryRef,
        task: &CreateTaskResult,
    ) {
        let id = client_id(&entry.tool.server, &task.task.task_id);
        let given = Given {
            client: client.owner().to_string(),
            caller: client.name().to_string(),
            server: entry.tool.server.clone(),
            tool: entry.tool.name.clone(),
            name: entry.name.clone(),
        };
        self.shared.tasks.give(&id, given).await;
    }

    /// A task's end, recorded once: a result passes the guards after (they
    /// may have been set since the task was given) and is observed as a
    /// call's; a failure or a cancel is written into the audit trail.
    async fn task_ended(
        &self,
        client: &ClientScope,
        id: &str,
        given: Given,
        result: &mut GetTaskResult,
    ) {
        if !self.shared.tasks.ended(id).await {
            return;
        }
        if let TaskPayload::Completed { result: told } = &mut result.task.payload {
            return self.task_result(client, &given, told).await;
        }
        let Some(log) = self.shared.host.audit() else {
            return;
        };
        let status = serde_json::to_value(result.task.status()).unwrap_or_default();
        let mut line = crate::install::apply::record(
            "task",
            &given.server,
            &given.caller,
            crate::audit::Decision::Allowed,
            Some(format!(
                "task {id} ended: {}",
                status.as_str().unwrap_or("?")
            )),
        );
        line.tool = given.tool;
        line.result_bytes = serde_json::to_vec(&result.task).map_or(0, |b| b.len());
        log.write(&line);
    }

    /// `tasks/update`: the client's answers go to the task's server as the
    /// guards before let them (`caller` is asked where a guard wants).
    pub(super) async fn update_task(
        &self,
        client: &ClientScope,
        caller: &crate::host::pipeline::Caller,
        params: UpdateTaskParams,
    ) -> Result<(), McpError> {
        let id = params.task_id.clone();
        let own = self.task_of(client, &id).await?;
        let host = &self.shared.host;
        let params = match host.resolve(&own.given.name).await {
            Ok(entry) => host
                .task_update(caller, &entry, params)
                .await
                .map_err(|e| McpError::invalid_request(e.to_string(), None))?,
            // A tool gone since: the guards see no call to judge.
            Err(_) => params,
        };
        let params = UpdateTaskParams::new(own.task, params.input_responses);
        host.update_task(own.server, params, own.need)
            .await
            .map_err(|e| task_error(&id, e))
    }

    /// `tasks/cancel`.
    pub(super) async fn cancel_task(
        &self,
        client: &ClientScope,
        id: String,
    ) -> Result<(), McpError> {
        let own = self.task_of(client, &id).await?;
        let host = &self.shared.host;
        host.cancel_task(own.server, own.task, own.need)
            .await
            .map_err(|e| task_error(&id, e))
    }
}
