//! `tools/call`: dispatched by the exposure (see [`super::exposures`]), with
//! its span and the log messages it asks for; and the calls of the
//! gateway's own tools that several exposures share.

use super::era::Complete;
use super::{Session, code, results, traced};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

impl Session {
    /// A tool call, answered when it ends (see [`Session::held_call`] for
    /// a client of the stateless revision).
    pub(super) async fn call_now(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        let span = traced::span(&context, "tools/call", Some(&request.name));
        let logged = context.clone();
        let only = self.logs_of(&context, &request.name).await;
        let call = traced::run(span, async move {
            self.state
                .link
                .seen(&context.extensions, &context.peer)
                .await;
            let args = request.arguments.take();
            let exposed = self.shared.exposed();
            exposed.call(self, &request.name, args, &context).await
        });
        self.with_request_logs(&logged, only, call).await
    }

    /// Whose log messages a call of `name` that asks for them gets: a
    /// server's tool, that server's alone; `None` (every server the client
    /// sees) for mcpw's own tools, which may reach several.
    async fn logs_of(&self, context: &RequestContext<RoleServer>, name: &str) -> Option<String> {
        context.meta.log_level()?;
        let snapshot = self.shared.host.snapshot().await.ok()?;
        snapshot.get(name).map(|e| e.tool.server.clone())
    }

    /// A call of the code tool.
    pub(super) async fn code_tool(
        &self,
        args: super::exposures::Args,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let client = self.client(&context.extensions);
        let code = args
            .as_ref()
            .and_then(|a| a.get("code"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let limits = args
            .as_ref()
            .and_then(|a| a.get("limits"))
            .and_then(Value::as_object);
        let shaping = args.as_ref().map(results::Shaping::of).unwrap_or_default();
        code::run(self, &client, &code, limits, &shaping, context).await
    }

    /// A call of a server's tool, answered when it ends.
    pub(super) async fn call_server(
        &self,
        name: &str,
        args: super::exposures::Args,
        context: &RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        let response = self.call_upstream(name, args, context).await;
        response.map(Complete::complete)
    }
}
