//! A session's requests from clients of the stateless revision (2026-07-28):
//! what they declare reaches the servers, and a request a server asks
//! questions during is held (see `held`).

use super::Session;
use super::held::{HeldClient, Kind, is_stateless, unexpected};
use crate::downstream::Client;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolRequestParams, CallToolResponse, InputResponses, ServerResult};
use rmcp::service::{RequestContext, RoleServer};

impl Session {
    /// Notes what a client of the stateless revision declared with its
    /// request: servers are offered it, and those of the handshake era that
    /// were connected offering less are connected again first (once per new
    /// capability), so that what they offer only to such clients is listed.
    pub(super) async fn note_stateless_client(&self, context: &RequestContext<RoleServer>) {
        if !is_stateless(context) {
            return;
        }
        let Some(capabilities) = context.client_capabilities() else {
            return;
        };
        let servers = self.shared.host.servers();
        if servers.sessions().note_stateless(&capabilities) {
            servers.renew_offers().await;
        }
    }

    /// The client to put questions to within the request `context`: the
    /// session's peer, or the held call of a stateless client.
    pub(super) fn asked_client(context: &RequestContext<RoleServer>) -> Client {
        match context.extensions.get::<HeldClient>() {
            Some(held) => held.client(),
            None => super::peer_client::of(&context.peer),
        }
    }

    /// A tool call of a client of the stateless revision: run as
    /// [`Session::call_now`] runs it, with what it is asked handed back as
    /// `inputRequired` and its retry's answers resuming it.
    pub(super) async fn held_call(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let retry = (request.request_state.take(), request.input_responses.take());
        let name = request.name.to_string();
        let start = |session: Session, context| async move {
            session
                .call_now(request, context)
                .await
                .map(ServerResult::from)
        };
        let held = self.held(&name, Kind::Tool, retry, context, start).await?;
        Ok(match held {
            ServerResult::InputRequiredResult(r) => CallToolResponse::InputRequired(r),
            ServerResult::CreateTaskResult(r) => CallToolResponse::Task(r),
            ServerResult::CallToolResult(r) => CallToolResponse::Complete(r),
            other => return Err(unexpected(&other)),
        })
    }

    /// A request (named `name`, of `kind`) of a client of the stateless
    /// revision, held while what it is asked goes back as `inputRequired`:
    /// started by `start`, or resumed by a retry's `(state, answers)`.
    pub(super) async fn held<F, Fut>(
        &self,
        name: &str,
        kind: Kind,
        retry: (Option<String>, Option<InputResponses>),
        context: RequestContext<RoleServer>,
        start: F,
    ) -> Result<ServerResult, McpError>
    where
        F: FnOnce(Session, RequestContext<RoleServer>) -> Fut,
        Fut: Future<Output = Result<ServerResult, McpError>> + Send + 'static,
    {
        let client = self.client(&context.extensions);
        let servers = self.shared.host.servers();
        let session = self.clone();
        let new_id = || servers.sessions().new_id();
        let held = &self.shared.held;
        held.hold(
            (client.owner(), name, kind),
            retry,
            context,
            new_id,
            |context| start(session, context),
        )
        .await
    }
}
