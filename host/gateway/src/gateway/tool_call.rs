//! `tools/call` by the tool it names: the proxy's `mcp`, `code`, `ToolSearch`,
//! `read_result`, or a server's tool.

use super::*;

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
            self.link.seen(&context.extensions, &context.peer).await;
            let args = request.arguments.take();
            let name = request.name;
            // Only ToolSearch needs `auto` decided: other names are called alike
            // in direct and tool-search exposure.
            let exposure = match &*name {
                tool_search::TOOL_NAME => self.decide_exposure(&context.extensions).await?,
                _ => self.exposure(),
            };
            let result = match (exposure, &*name) {
                (Exposure::Proxy, proxy::TOOL_NAME) => {
                    proxy::call(self, args.unwrap_or_default(), &context).await?
                }
                (Exposure::Proxy, _) => result(
                    &[Content::text(format!(
                        "Unknown tool \"{name}\": this gateway exposes one tool, `mcp`."
                    ))],
                    None,
                    true,
                )?,
                (_, code::TOOL_NAME)
                    if self.shared.exposure == Exposure::Code
                        || self.shared.host.config().settings.code_mode =>
                {
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
                    code::run(self, &client, &code, limits, &shaping, &context).await?
                }
                (
                    Exposure::Direct | Exposure::ToolSearch | Exposure::Code | Exposure::Auto,
                    results::TOOL_NAME,
                ) if results::offered(&self.shared.host.config()) => {
                    self.read_result_tool(&args.unwrap_or_default()).await?
                }
                (
                    Exposure::Direct | Exposure::ToolSearch | Exposure::Code | Exposure::Auto,
                    proxy::install::TOOL_NAME,
                ) if proxy::install::listed(&self.shared.host.config()) => {
                    proxy::install::call(self, &args.unwrap_or_default(), &context).await?
                }
                (Exposure::Code, _) => result(
                    &[Content::text(format!(
                        "Unknown tool \"{name}\": this gateway exposes one tool, `code`; call other tools from a script."
                    ))],
                    None,
                    true,
                )?,
                (Exposure::ToolSearch, tool_search::TOOL_NAME) => {
                    tool_search::call(self, args.unwrap_or_default(), &context).await?
                }
                _ => {
                    let response = self.call_upstream(&name, args, &context).await;
                    return response.map(Complete::complete);
                }
            };
            Ok(result.complete().into())
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
}
