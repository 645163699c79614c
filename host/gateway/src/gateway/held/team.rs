//! A retry that reaches another replica than the one its call waits at:
//! passed on through the shared state's pub/sub to that replica, which
//! resumes the call and answers on a channel of the retry's own.

use super::{ANSWER_WITHIN, HeldCalls, Kind, gone};
use crate::team_state;
use futures::StreamExt;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, CreateTaskResult, GetPromptResult, InputRequiredResult, InputResponses,
    ReadResourceResult, ServerResult,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// A retry passed on to the replica whose call it answers.
#[derive(Serialize, Deserialize)]
struct Resume {
    id: u64,
    /// What the state was sealed to (checked by the replica that got it).
    bound: Vec<u8>,
    answers: InputResponses,
    /// Where the answer goes.
    reply: String,
}

/// What the replica of the call answered.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Resumed {
    Result(Value),
    Error(McpError),
}

fn channel(replica: u64) -> String {
    team_state::key(&["held", &format!("{replica:016x}")])
}

fn unreachable(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(
        format!("the replica of this call cannot be reached: {e}"),
        None,
    )
}

impl HeldCalls {
    /// Passes a retry on to `replica`, whose call `id` waits for it.
    pub(super) async fn resume_at(
        self: &Arc<Self>,
        replica: u64,
        id: u64,
        answers: InputResponses,
        bound: &[u8],
        kind: Kind,
    ) -> Result<ServerResult, McpError> {
        let Some(team) = &self.team else {
            return Err(gone());
        };
        use chacha20poly1305::aead::rand_core::RngCore;
        let nonce = chacha20poly1305::aead::OsRng.next_u64();
        let reply = team_state::key(&["held-reply", &format!("{nonce:016x}")]);
        let mut pubsub = team.pubsub().await.map_err(unreachable)?;
        pubsub.subscribe(&reply).await.map_err(unreachable)?;
        let resume = Resume {
            id,
            bound: bound.to_vec(),
            answers,
            reply: reply.clone(),
        };
        let mut publish = redis::cmd("PUBLISH");
        publish
            .arg(channel(replica))
            .arg(serde_json::to_string(&resume).unwrap_or_default());
        let heard: i64 = team.command(publish).await.map_err(unreachable)?;
        if heard == 0 {
            return Err(gone());
        }
        let mut messages = pubsub.into_on_message();
        let answer = tokio::time::timeout(ANSWER_WITHIN, messages.next())
            .await
            .map_err(|_| gone())?
            .ok_or_else(gone)?;
        let text: String = answer.get_payload().map_err(unreachable)?;
        match serde_json::from_str(&text).map_err(unreachable)? {
            Resumed::Result(value) => response_of(value, kind),
            Resumed::Error(e) => Err(e),
        }
    }

    /// Resumes the calls waiting here for retries other replicas got, for
    /// as long as this process lives (with shared state).
    pub(super) fn listen(self: &Arc<Self>) {
        let Some(team) = self.team.clone() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let me = Arc::downgrade(self);
        let channel = channel(self.replica);
        tokio::spawn(async move {
            loop {
                let subscribed = match team.pubsub().await {
                    Ok(mut pubsub) => pubsub.subscribe(&channel).await.map(|()| pubsub).ok(),
                    Err(_) => None,
                };
                if let Some(pubsub) = subscribed {
                    let mut messages = pubsub.into_on_message();
                    while let Some(m) = messages.next().await {
                        let Some(calls) = me.upgrade() else { return };
                        let Ok(text) = m.get_payload::<String>() else {
                            continue;
                        };
                        let Ok(resume) = serde_json::from_str::<Resume>(&text) else {
                            continue;
                        };
                        tokio::spawn(calls.answer_for_another(resume));
                    }
                }
                if me.strong_count() == 0 {
                    return;
                }
                // Redis went away: subscribe again shortly.
                tokio::time::sleep(team_state::MONITOR_EVERY).await;
            }
        });
    }

    async fn answer_for_another(self: Arc<Self>, resume: Resume) {
        let resumed = self
            .resume(
                resume.id,
                resume.answers,
                &resume.bound,
                std::future::pending(),
            )
            .await;
        let resumed = match resumed.and_then(|r| wire(&r)) {
            Ok(value) => Resumed::Result(value),
            Err(e) => Resumed::Error(e),
        };
        let Some(team) = &self.team else { return };
        let mut publish = redis::cmd("PUBLISH");
        publish
            .arg(&resume.reply)
            .arg(serde_json::to_string(&resumed).unwrap_or_default());
        if let Err(e) = team.command::<i64>(publish).await {
            tracing::warn!("a held call's answer could not be passed back: {e}");
        }
    }
}

/// An answer as JSON.
fn wire(response: &ServerResult) -> Result<Value, McpError> {
    let value = match response {
        ServerResult::CallToolResult(r) => serde_json::to_value(r),
        ServerResult::InputRequiredResult(r) => serde_json::to_value(r),
        ServerResult::CreateTaskResult(r) => serde_json::to_value(r),
        ServerResult::GetPromptResult(r) => serde_json::to_value(r),
        ServerResult::ReadResourceResult(r) => serde_json::to_value(r),
        other => return Err(McpError::internal_error(format!("{other:?}"), None)),
    };
    value.map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// An answer to a request of `kind` from JSON, by its `resultType`.
fn response_of(value: Value, kind: Kind) -> Result<ServerResult, McpError> {
    let bad = |e: serde_json::Error| McpError::internal_error(e.to_string(), None);
    let of = |v: Value| -> Result<ServerResult, McpError> {
        Ok(match kind {
            Kind::Tool => ServerResult::CallToolResult(
                serde_json::from_value::<CallToolResult>(v).map_err(bad)?,
            ),
            Kind::Prompt => ServerResult::GetPromptResult(
                serde_json::from_value::<GetPromptResult>(v).map_err(bad)?,
            ),
            Kind::Read => ServerResult::ReadResourceResult(
                serde_json::from_value::<ReadResourceResult>(v).map_err(bad)?,
            ),
        })
    };
    match value.get("resultType").and_then(Value::as_str) {
        Some("input_required") => Ok(ServerResult::InputRequiredResult(
            serde_json::from_value::<InputRequiredResult>(value).map_err(bad)?,
        )),
        Some("task") => Ok(ServerResult::CreateTaskResult(
            serde_json::from_value::<CreateTaskResult>(value).map_err(bad)?,
        )),
        _ => of(value),
    }
}
