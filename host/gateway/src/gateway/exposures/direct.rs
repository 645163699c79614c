//! Direct exposure: every tool the client sees, listed.

use super::exposed::{Args, Exposed, own_or_server};
use crate::gateway::scope::ClientScope;
use crate::gateway::{Gateway, Session};
use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, Tool};
use rmcp::service::{RequestContext, RoleServer};

pub(super) struct Direct;

impl Exposed for Direct {
    fn instructions(&self) -> &'static str {
        "Tools of every MCP server configured in mcpw, named <server>__<tool>."
    }

    fn list<'a>(
        &'a self,
        session: &'a Session,
        client: &'a ClientScope,
    ) -> BoxFuture<'a, Result<Vec<Tool>, McpError>> {
        Box::pin(async move {
            let mut tools = session.direct_tools(client).await?.to_vec();
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
        Box::pin(own_or_server(session, name, args, context))
    }

    /// The catalog snapshot and the tool list, with every schema parsed.
    fn warm_up<'a>(&'a self, gateway: &'a Gateway, session: &'a Session) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let schemas = gateway.host().prepare_schemas();
            if let (_, Err(e)) = tokio::join!(schemas, session.tool_list()) {
                tracing::debug!("warming up the tool list: {e:?}");
            }
        })
    }
}
