//! `prompts/get` and `resources/read` for a session: what the server asks
//! while answering (its `inputRequired` rounds, or its own requests) goes to
//! the session the read is made for, as a tool call's does.

use super::calls::{CallOptions, MAX_INPUT_ROUNDS, too_many_rounds};
use super::{ConnectError, Connection};
use rmcp::model::{
    ClientRequest, GetPromptRequestParams, GetPromptResult, InputRequiredResult,
    ReadResourceRequestParams, ReadResourceResult, Request, ServerResult,
};
use std::time::Duration;

/// What a read's request is re-sent with, round after round.
trait Rounds: Clone {
    fn answered(&mut self, answers: rmcp::model::InputResponses, state: Option<String>);
    fn request(self) -> ClientRequest;
}

impl Rounds for GetPromptRequestParams {
    fn answered(&mut self, answers: rmcp::model::InputResponses, state: Option<String>) {
        self.input_responses = (!answers.is_empty()).then_some(answers);
        self.request_state = state;
    }
    fn request(self) -> ClientRequest {
        ClientRequest::GetPromptRequest(Request::new(self))
    }
}

impl Rounds for ReadResourceRequestParams {
    fn answered(&mut self, answers: rmcp::model::InputResponses, state: Option<String>) {
        self.input_responses = (!answers.is_empty()).then_some(answers);
        self.request_state = state;
    }
    fn request(self) -> ClientRequest {
        ClientRequest::ReadResourceRequest(Request::new(self))
    }
}

impl Connection {
    /// Gets a prompt by its original name for `options`' session; gives up
    /// after `timeout`, its input rounds included.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        timeout: Duration,
        options: &CallOptions,
    ) -> Result<GetPromptResult, ConnectError> {
        let mut params = GetPromptRequestParams::new(name.to_string());
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        self.stamp(&mut params.meta);
        match self.within_rounds(params, options, timeout).await? {
            ServerResult::GetPromptResult(r) => Ok(r),
            other => Err(unexpected("prompts/get", &other)),
        }
    }

    /// Reads a resource for `options`' session; gives up after `timeout`.
    pub async fn read_resource(
        &self,
        uri: &str,
        timeout: Duration,
        options: &CallOptions,
    ) -> Result<ReadResourceResult, ConnectError> {
        let mut params = ReadResourceRequestParams::new(uri);
        self.stamp(&mut params.meta);
        match self.within_rounds(params, options, timeout).await? {
            ServerResult::ReadResourceResult(r) => Ok(r),
            other => Err(unexpected("resources/read", &other)),
        }
    }

    /// The entries of a folder resource (`resources/directory/read`, of the
    /// Skills extension), a page from `cursor`; gives up after `timeout`.
    pub async fn read_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
        timeout: Duration,
    ) -> Result<rmcp::model::ListResourcesResult, ConnectError> {
        let mut params = rmcp::model::ReadResourceDirectoryRequestParams::new(uri);
        if let Some(c) = cursor {
            params = params.with_cursor(c.to_string());
        }
        match tokio::time::timeout(timeout, self.service.read_resource_directory(params)).await {
            Ok(answer) => answer.map_err(|e| self.service_error(e)),
            Err(_) => Err(ConnectError::CallTimeout {
                ms: timeout.as_millis() as u64,
                note: None,
            }),
        }
    }

    /// Sends `params` until the server answers with something other than
    /// `inputRequired`, answering each round for `options`' session.
    async fn within_rounds(
        &self,
        mut params: impl Rounds,
        options: &CallOptions,
        timeout: Duration,
    ) -> Result<ServerResult, ConnectError> {
        let rounds = async {
            for _ in 0..MAX_INPUT_ROUNDS {
                let (answer, _) = self.send_once(params.clone().request(), options).await?;
                let ServerResult::InputRequiredResult(asked) = answer else {
                    return Ok(answer);
                };
                let InputRequiredResult {
                    input_requests,
                    request_state,
                    ..
                } = asked;
                let answers = self
                    .answer_inputs(options.origin.as_ref(), input_requests)
                    .await?;
                params.answered(answers, request_state);
            }
            Err(too_many_rounds())
        };
        match tokio::time::timeout(timeout, rounds).await {
            Ok(r) => r,
            Err(_) => Err(self.timed_out(timeout)),
        }
    }
}

fn unexpected(method: &str, answer: &ServerResult) -> ConnectError {
    ConnectError::Protocol {
        message: format!("unexpected answer to {method}: {answer:?}"),
        stderr: None,
    }
}
