//! What each MCP revision requires of a result mcpw sends its client.
//!
//! The stateless revision (2026-07-28) requires `resultType` on every result;
//! a server of the handshake era sends none, and neither do the results mcpw
//! builds from JSON. So every result leaves the gateway stamped `complete`,
//! whatever the session's revision: rmcp's dispatch strips that stamp again
//! for a client of an earlier revision (whose strict clients reject a field
//! they do not know), and fills a 2026-07-28 client's cache hints (`ttlMs`,
//! `cacheScope`) on the results that carry them.
//!
//! | result                                  | 2026-07-28 client        | earlier client |
//! |-----------------------------------------|--------------------------|----------------|
//! | `tools/call`, `prompts/get`, `completion/complete` | `resultType: complete` | as the server sent it |
//! | `resources/read`, `*/list`              | `resultType`, `ttlMs`, `cacheScope` | as the server sent it |
//! | `input_required`, `task`                | as they are               | (never sent)   |

use rmcp::model::{
    CallToolResponse, CallToolResult, CompleteResult, GetPromptResponse, GetPromptResult,
    GetSkillResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListSkillsResult, ListToolsResult, ReadResourceResponse, ReadResourceResult, ResultType,
};

/// The newest revision mcpw offers its clients: the newest it serves
/// completely, on every path (tools in each exposure, code mode's inner
/// calls, resources, prompts, completion, tasks, the servers' questions,
/// subscriptions, log messages), in front of servers of either era
/// (`tests/e2e/gateway/eras.rs` runs that matrix). A revision rmcp learns
/// later is not offered until mcpw serves it so.
pub(crate) const NEWEST_SERVED: rmcp::model::ProtocolVersion =
    rmcp::model::ProtocolVersion::V_2026_07_28;

/// A result stamped with the `resultType` the stateless revision requires.
pub(crate) trait Complete {
    /// The result with `resultType: complete` where it had none; a result of
    /// another type (input required, a task) is left as it is.
    fn complete(self) -> Self;
}

macro_rules! stamped {
    ($($result:ty),* $(,)?) => {$(
        impl Complete for $result {
            fn complete(mut self) -> Self {
                self.result_type.get_or_insert(ResultType::COMPLETE);
                self
            }
        }
    )*};
}

stamped!(
    CallToolResult,
    GetPromptResult,
    ReadResourceResult,
    CompleteResult,
    ListToolsResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListSkillsResult,
    GetSkillResult,
);

macro_rules! responses {
    ($($response:ident),* $(,)?) => {$(
        impl Complete for $response {
            fn complete(self) -> Self {
                match self {
                    $response::Complete(result) => $response::Complete(result.complete()),
                    other => other,
                }
            }
        }
    )*};
}

responses!(CallToolResponse, GetPromptResponse, ReadResourceResponse);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn wire<T: serde::Serialize>(v: &T) -> Value {
        serde_json::to_value(v).unwrap()
    }

    fn wire_call(response: &CallToolResponse) -> Value {
        match response {
            CallToolResponse::Complete(r) => wire(r),
            CallToolResponse::InputRequired(r) => wire(r),
            CallToolResponse::Task(r) => wire(r),
            _ => unreachable!("a response of a kind rmcp added"),
        }
    }

    #[test]
    fn a_handshake_era_result_gets_its_result_type() {
        // As a server of 2025-11-25 sends it: no resultType.
        let sent = json!({"content": [{"type": "text", "text": "hi"}]});
        let result: CallToolResult = serde_json::from_value(sent).unwrap();
        assert!(wire(&result).get("resultType").is_none());
        let response = CallToolResponse::Complete(result).complete();
        assert_eq!(wire_call(&response)["resultType"], "complete");
        let prompt: GetPromptResult = serde_json::from_value(json!({"messages": []})).unwrap();
        assert_eq!(wire(&prompt.complete())["resultType"], "complete");
        let read: ReadResourceResult = serde_json::from_value(json!({"contents": []})).unwrap();
        assert_eq!(wire(&read.complete())["resultType"], "complete");
    }

    #[test]
    fn other_result_types_are_left_as_they_are() {
        let asked = rmcp::model::InputRequiredResult::from_request_state("state");
        let response = CallToolResponse::InputRequired(asked).complete();
        assert_eq!(wire_call(&response)["resultType"], "input_required");
    }
}
