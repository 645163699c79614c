//! Tool-search exposure: `ToolSearch` and the direct tools, and the tools
//! each session loads with it.

use super::exposed::{Args, Exposed, own_or_server};
use crate::gateway::scope::ClientScope;
use crate::gateway::{Gateway, Session};
use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, Tool};
use rmcp::service::{RequestContext, RoleServer};

pub(super) struct ToolSearch;

impl Exposed for ToolSearch {
    fn instructions(&self) -> &'static str {
        "Tools of many MCP servers are available. Most are loaded on demand: call `ToolSearch` with keywords (or `select:name`) and the matching tools join your tool list."
    }

    fn list<'a>(
        &'a self,
        session: &'a Session,
        client: &'a ClientScope,
    ) -> BoxFuture<'a, Result<Vec<Tool>, McpError>> {
        Box::pin(async move {
            let mut tools = session.searched_tools(client).await?.to_vec();
            tools.extend(session.own_tools(client, false).await?);
            Ok(tools)
        })
    }

    fn call<'a>(
        &'a self,
        session: &'a Session,
        name: &'a str,
        args: Args,
        context: &'a RequestContext<RoleServer>,
    ) -> BoxFuture<'a, Result<CallToolResponse, McpError>> {
        Box::pin(async move {
            if name != crate::gateway::tool_search::TOOL_NAME {
                return own_or_server(session, name, args, context).await;
            }
            let args = args.unwrap_or_default();
            let result = crate::gateway::tool_search::call(session, args, context).await?;
            Ok(crate::gateway::era::Complete::complete(result).into())
        })
    }

    /// The tool list, then the search index.
    fn warm_up<'a>(&'a self, gateway: &'a Gateway, session: &'a Session) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = session.tool_list().await {
                tracing::debug!("warming up the tool list: {e:?}");
            }
            gateway.prepare_search().await;
        })
    }
}
