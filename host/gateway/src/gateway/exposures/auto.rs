//! `auto` exposure: direct while the client's tools fit the budget,
//! tool-search beyond; decided per session, once every server has been
//! listed, and kept.

use super::exposed::{Args, Exposed, own_or_server};
use crate::gateway::scope::ClientScope;
use crate::gateway::{Gateway, Session};
use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, Tool};
use rmcp::service::{RequestContext, RoleServer};

pub(super) struct Auto;

impl Exposed for Auto {
    fn instructions(&self) -> &'static str {
        "Tools of every MCP server configured in mcpw, named <server>__<tool>. When they are many, most are loaded on demand: call `ToolSearch` with keywords (or `select:name`) and the matching tools join your tool list."
    }

    fn list<'a>(
        &'a self,
        session: &'a Session,
        client: &'a ClientScope,
    ) -> BoxFuture<'a, Result<Vec<Tool>, McpError>> {
        Box::pin(async move {
            let mut tools = session.auto_tools(client).await?.to_vec();
            tools.extend(session.own_tools(client, false).await?);
            Ok(tools)
        })
    }

    /// Only `ToolSearch` needs the choice made: the other names are called
    /// alike in direct and tool-search exposure.
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
            let client = session.client(&context.extensions);
            let chosen = session.decided(&client).await?;
            chosen.call(session, name, args, context).await
        })
    }

    /// The tool list, deciding for this session as it would for a
    /// client's; then what the choice prepares beyond it.
    fn warm_up<'a>(&'a self, gateway: &'a Gateway, session: &'a Session) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = session.tool_list().await {
                tracing::debug!("warming up the tool list: {e:?}");
            }
            if session.searches() {
                gateway.prepare_search().await;
            }
        })
    }
}
