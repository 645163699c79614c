//! What every exposure is asked, and the gateway's own tools several of
//! them answer.

use crate::gateway::results::Reading;
use crate::gateway::scope::ClientScope;
use crate::gateway::{Gateway, Session};
use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, JsonObject, Tool};
use rmcp::service::{RequestContext, RoleServer};

/// A call's arguments, as the client sent them.
pub(crate) type Args = Option<JsonObject>;

/// One way of serving the catalog.
pub(crate) trait Exposed: Send + Sync + 'static {
    /// What the gateway's instructions tell the agent.
    fn instructions(&self) -> &'static str;

    /// Whether its tool list changes while a session lasts (announced as
    /// `listChanged`, and told with `notifications/tools/list_changed`).
    fn lists_change(&self) -> bool {
        true
    }

    /// Whether it runs scripts whatever `settings.codeMode` says.
    fn runs_scripts(&self) -> bool {
        false
    }

    /// How an agent reads on in a kept result: through the `mcp` tool, from
    /// a script, or with `read_result`.
    fn reads_results(&self) -> Reading {
        Reading::Tool
    }

    /// What `tools/list` answers `client` on `session`.
    fn list<'a>(
        &'a self,
        session: &'a Session,
        client: &'a ClientScope,
    ) -> BoxFuture<'a, Result<Vec<Tool>, McpError>>;

    /// A `tools/call` of `name`: one of the gateway's own tools, or a
    /// server's.
    fn call<'a>(
        &'a self,
        session: &'a Session,
        name: &'a str,
        args: Args,
        context: &'a RequestContext<RoleServer>,
    ) -> BoxFuture<'a, Result<CallToolResponse, McpError>>;

    /// Prepares what the first requests of a session need, so that they do
    /// not wait for it.
    fn warm_up<'a>(&'a self, gateway: &'a Gateway, session: &'a Session) -> BoxFuture<'a, ()>;
}

/// The gateway's own tools that every exposure but the proxy's answers
/// beside the servers' (or, in code mode, beside the code tool).
#[derive(Clone, Copy)]
pub(super) enum Own {
    /// The code tool: always in code mode, with `settings.codeMode` beside
    /// the servers' tools.
    Code,
    /// `read_result`, when results are kept.
    ReadResult,
    /// Finding and adding servers, when the user allowed it.
    Install,
}

impl Own {
    /// Which of them `name` is, in an exposure that runs scripts when
    /// `scripts` says so.
    pub(super) fn named(session: &Session, name: &str, scripts: bool) -> Option<Own> {
        let config = session.shared.host.config();
        if name == crate::gateway::code::TOOL_NAME && (scripts || config.settings.code_mode) {
            return Some(Own::Code);
        }
        if name == crate::gateway::results::TOOL_NAME && crate::gateway::results::offered(&config) {
            return Some(Own::ReadResult);
        }
        if name == crate::gateway::proxy::install::TOOL_NAME
            && crate::gateway::proxy::install::listed(&config)
        {
            return Some(Own::Install);
        }
        None
    }

    pub(super) async fn call(
        self,
        session: &Session,
        args: Args,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let result = match self {
            Own::Code => session.code_tool(args, context).await?,
            Own::ReadResult => session.read_result_tool(&args.unwrap_or_default()).await?,
            Own::Install => {
                crate::gateway::proxy::install::call(session, &args.unwrap_or_default(), context)
                    .await?
            }
        };
        Ok(crate::gateway::era::Complete::complete(result).into())
    }
}

/// A call of the servers' tools or the gateway's own, in an exposure that
/// lists the servers' tools (direct, tool-search, auto).
pub(super) async fn own_or_server(
    session: &Session,
    name: &str,
    args: Args,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    match Own::named(session, name, false) {
        Some(own) => own.call(session, args, context).await,
        None => session.call_server(name, args, context).await,
    }
}

/// The answer to a call of a tool an exposure does not have.
pub(super) fn unknown(message: String) -> Result<CallToolResponse, McpError> {
    let text = [crate::present::Content::text(message)];
    Ok(
        crate::gateway::era::Complete::complete(crate::gateway::wire::result(&text, None, true)?)
            .into(),
    )
}
