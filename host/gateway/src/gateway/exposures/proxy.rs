//! The `mcp` proxy tool alone: one fixed tool, whatever the catalog.

use super::exposed::{Args, Exposed, unknown};
use crate::gateway::results::Reading;
use crate::gateway::scope::ClientScope;
use crate::gateway::{Gateway, Session};
use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, Tool};
use rmcp::service::{RequestContext, RoleServer};

pub(super) struct Proxy;

impl Exposed for Proxy {
    fn instructions(&self) -> &'static str {
        "Every MCP server configured in mcpw is reachable through the `mcp` tool: call it with no arguments for status, `search` to find tools, `describe` for parameters, `tool` + `args` to call."
    }

    fn lists_change(&self) -> bool {
        false
    }

    fn reads_results(&self) -> Reading {
        Reading::Proxy
    }

    fn list<'a>(
        &'a self,
        session: &'a Session,
        client: &'a ClientScope,
    ) -> BoxFuture<'a, Result<Vec<Tool>, McpError>> {
        Box::pin(async move { Ok(vec![session.proxy_tool(client)?]) })
    }

    fn call<'a>(
        &'a self,
        session: &'a Session,
        name: &'a str,
        args: Args,
        context: &'a RequestContext<RoleServer>,
    ) -> BoxFuture<'a, Result<CallToolResponse, McpError>> {
        Box::pin(async move {
            if name != crate::gateway::proxy::TOOL_NAME {
                return unknown(format!(
                    "Unknown tool \"{name}\": this gateway exposes one tool, `mcp`."
                ));
            }
            let result = crate::gateway::proxy::call(session, args.unwrap_or_default(), context);
            Ok(crate::gateway::era::Complete::complete(result.await?).into())
        })
    }

    /// Nothing: it lists one fixed tool, which keeps an idle proxy small;
    /// its first search builds the index.
    fn warm_up<'a>(&'a self, _: &'a Gateway, _: &'a Session) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}
