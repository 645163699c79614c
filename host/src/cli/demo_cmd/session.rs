//! The demo's agent: an MCP client in this process, in a session of the
//! gateway over a pipe, so that the tour shows what a client's agent gets
//! (previews, refusals, questions) rather than what the Rust API returns.
//! It answers mcpw's approval questions itself, keeping what it was asked
//! for the tour to show.

use anyhow::{Context, Result};
use mcpw::config::Exposure;
use mcpw::gateway::{self, Gateway};
use mcpw::host::Host;
use rmcp::model::{CallToolRequestParams, ElicitRequestParams, ElicitResult};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::{ClientHandler, ErrorData as McpError, ServiceExt};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A question the agent's client was asked, and what the demo answered.
pub(crate) struct Asked {
    /// The question, as a user would read it.
    pub message: String,
    /// The choices offered, as their labels.
    pub choices: Vec<String>,
    /// The label of the choice the demo took.
    pub answer: String,
}

/// The agent's client: declares elicitation, and allows once whatever it is
/// asked to approve.
#[derive(Clone, Default)]
struct Agent {
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl ClientHandler for Agent {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "mcpw-demo", "version": env!("CARGO_PKG_VERSION")}
        }))
        .expect("a valid client info")
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let params = serde_json::to_value(&params).unwrap_or_default();
        let decision = &params["requestedSchema"]["properties"]["decision"];
        let labels = |key: &str| -> Vec<String> {
            decision[key]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        };
        let (values, choices) = (labels("enum"), labels("enumNames"));
        let at = values.iter().position(|v| v == "once").unwrap_or(0);
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Asked {
                message: params["message"].as_str().unwrap_or_default().to_string(),
                answer: choices.get(at).cloned().unwrap_or_else(|| "accept".into()),
                choices,
            });
        let answer = json!({"action": "accept", "content": {"decision": "once"}});
        serde_json::from_value(answer).map_err(|e| McpError::internal_error(e.to_string(), None))
    }
}

/// A tool's result as the agent read it.
pub(crate) struct Reply {
    /// Its text blocks, joined.
    pub text: String,
    /// Its `structuredContent`, if any.
    pub structured: Option<Value>,
    /// The URIs of its resource links.
    pub links: Vec<String>,
    /// The tool (or mcpw) said it failed.
    pub is_error: bool,
}

/// One agent's session with the gateway.
pub(crate) struct Session {
    client: RunningService<RoleClient, Agent>,
    server: RunningService<RoleServer, gateway::Session>,
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl Session {
    /// Opens a session of `host`'s gateway, every tool listed (direct
    /// exposure), for an in-process client.
    pub(crate) async fn open(host: Arc<Host>) -> Result<Session> {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let session = gateway::Session::new(Gateway::new(host, Exposure::Direct));
        let server = tokio::spawn(session.serve(theirs));
        let agent = Agent::default();
        let asked = agent.asked.clone();
        let client = agent.serve(ours).await.context("the demo's client")?;
        let server = server.await?.context("the demo's gateway session")?;
        Ok(Session {
            client,
            server,
            asked,
        })
    }

    /// Calls `tool` as the agent would; a failure to call is an error reply.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Reply {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(args) = args {
            params = params.with_arguments(args);
        }
        match self.client.call_tool(params).await {
            Ok(result) => reply(&serde_json::to_value(&result).unwrap_or_default()),
            Err(e) => Reply {
                text: e.to_string(),
                structured: None,
                links: Vec::new(),
                is_error: true,
            },
        }
    }

    /// The questions asked since the last time, oldest first.
    pub(crate) fn questions(&self) -> Vec<Asked> {
        std::mem::take(&mut *self.asked.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Ends the session, both sides.
    pub(crate) async fn close(self) {
        let _ = self.client.cancel().await;
        let _ = self.server.cancel().await;
    }
}

/// The parts of a `tools/call` result the tour shows.
fn reply(result: &Value) -> Reply {
    let blocks = result["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let text = blocks
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let links = blocks
        .iter()
        .filter(|b| b["type"] == "resource_link")
        .filter_map(|b| b["uri"].as_str().map(String::from))
        .collect();
    Reply {
        text,
        structured: result.get("structuredContent").cloned(),
        links,
        is_error: result["isError"] == true,
    }
}
