//! A session's client as the host's servers ask it: their requests are
//! sent on to it as its own requests, on the stream of the client's call
//! they belong to.

use crate::downstream::{self, Client, Downstream};
use futures::future::BoxFuture;
use rmcp::model::{ClientResult, GetExtensions, RequestId, ServerRequest};
use rmcp::service::{OriginatingRequestId, PeerRequestOptions, RoleServer};
use rmcp::{ErrorData as McpError, Peer};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The client at the other end of a session.
struct PeerClient(Peer<RoleServer>);

/// The client of the session whose peer is `peer`.
pub(super) fn of(peer: &Peer<RoleServer>) -> Client {
    downstream::client(Arc::new(PeerClient(peer.clone())))
}

impl Downstream for PeerClient {
    fn capabilities(&self) -> Option<Map<String, Value>> {
        let info = self.0.peer_info()?;
        match serde_json::to_value(&info.capabilities) {
            Ok(Value::Object(caps)) => Some(caps),
            _ => None,
        }
    }

    fn ask(
        &self,
        request: ServerRequest,
        belongs_to: Option<RequestId>,
        cancelled: BoxFuture<'static, ()>,
    ) -> BoxFuture<'static, Result<ClientResult, McpError>> {
        Box::pin(forward(self.0.clone(), request, belongs_to, cancelled))
    }
}

/// Sends a server's request on to the client and waits for the answer;
/// `cancelled` completing (the server cancelled its request) cancels it at
/// the client.
async fn forward(
    peer: Peer<RoleServer>,
    mut request: ServerRequest,
    belongs_to: Option<RequestId>,
    cancelled: BoxFuture<'static, ()>,
) -> Result<ClientResult, McpError> {
    if let Some(id) = belongs_to {
        request.extensions_mut().insert(OriginatingRequestId(id));
    }
    // Sent from a task of its own: within the server's request handler, rmcp
    // would mark it as coming from the *server's* request id (a task-local),
    // and the client's transport would look for a stream of that id.
    let sender = peer.clone();
    let handle = tokio::spawn(async move {
        sender
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
    })
    .await
    .map_err(|e| McpError::internal_error(e.to_string(), None))?
    .map_err(|e| McpError::internal_error(format!("the client is gone: {e}"), None))?;
    let id = handle.id.clone();
    tokio::select! {
        answer = handle.await_response() => answer.map_err(|e| match e {
            rmcp::ServiceError::McpError(e) => e,
            e => McpError::internal_error(e.to_string(), None),
        }),
        _ = cancelled => {
            let cancel = serde_json::json!({"requestId": id, "reason": "the server cancelled its request"});
            if let Ok(cancel) = serde_json::from_value(cancel) {
                let _ = peer.notify_cancelled(cancel).await;
            }
            Err(McpError::internal_error("cancelled by the server", None))
        }
    }
}
