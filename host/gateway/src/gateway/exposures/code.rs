//! Code mode: the code tool, whose scripts call the servers' tools.

use super::exposed::{Args, Exposed, Own, unknown};
use crate::gateway::results::Reading;
use crate::gateway::scope::ClientScope;
use crate::gateway::{Gateway, Session};
use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, Tool};
use rmcp::service::{RequestContext, RoleServer};

pub(super) struct Code;

impl Exposed for Code {
    fn instructions(&self) -> &'static str {
        "Tools of every MCP server configured in mcpw are called from JavaScript run by the `code` tool: `await tools.<name>(args)`, `mcp.search(query)` to find them."
    }

    fn lists_change(&self) -> bool {
        false
    }

    fn runs_scripts(&self) -> bool {
        true
    }

    fn reads_results(&self) -> Reading {
        Reading::Script
    }

    fn list<'a>(
        &'a self,
        session: &'a Session,
        client: &'a ClientScope,
    ) -> BoxFuture<'a, Result<Vec<Tool>, McpError>> {
        Box::pin(async move { session.own_tools(client, true).await })
    }

    fn call<'a>(
        &'a self,
        session: &'a Session,
        name: &'a str,
        args: Args,
        context: &'a RequestContext<RoleServer>,
    ) -> BoxFuture<'a, Result<CallToolResponse, McpError>> {
        Box::pin(async move {
            match Own::named(session, name, true) {
                Some(own) => own.call(session, args, context).await,
                None => unknown(format!(
                    "Unknown tool \"{name}\": this gateway exposes one tool, `code`; call other tools from a script."
                )),
            }
        })
    }

    /// The script guest: compiling it is the slow part of a first script.
    fn warm_up<'a>(&'a self, gateway: &'a Gateway, _: &'a Session) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = gateway.host().scripter().await {
                tracing::warn!("code mode is unavailable: {e}");
            }
        })
    }
}
