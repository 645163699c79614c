//! Change notifications to clients: list changes and updates of the resources
//! a client watches. A session of an `initialize`-era revision gets them on
//! the session; a client of the stateless revision (2026-07-28) asks for them
//! with `subscriptions/listen` and gets them on that stream, watching the
//! resources it names for as long as the stream is open.

use super::Session;
use super::watching::Watching;
use crate::host::Host;
use crate::servers::ServerEvent;
use rmcp::ErrorData as McpError;
use rmcp::model::ServerNotification;
use rmcp::service::{SubscriptionContext, SubscriptionSendError};
use serde_json::json;

fn notification(value: serde_json::Value) -> Option<ServerNotification> {
    serde_json::from_value(value).ok()
}

/// What `event` tells a client that watches what `watching` holds: the lists
/// changed (tools only where the exposure lists upstream tools), or a resource
/// it watches was updated (under the URI the client knows).
pub(super) async fn changes(
    host: &Host,
    exposed: &dyn super::exposures::Exposed,
    watching: &Watching,
    event: &ServerEvent,
) -> Vec<ServerNotification> {
    match event {
        // Every client hears of every change, whichever server's: the
        // notification names nothing, and a change of one server may rename
        // the tools of another (the naming guest sees them all).
        ServerEvent::CatalogChanged(_) => {
            let mut lists = vec!["prompts", "resources"];
            if exposed.lists_change() {
                lists.insert(0, "tools");
            }
            lists
                .into_iter()
                .filter_map(|l| {
                    notification(json!({"method": format!("notifications/{l}/list_changed")}))
                })
                .collect()
        }
        ServerEvent::ResourceUpdated { server, uri } => {
            let Ok(snapshot) = host.snapshot().await else {
                return Vec::new();
            };
            let uri = snapshot.resources().exposed(server, uri);
            if !watching.watches(&uri) {
                return Vec::new();
            }
            let updated =
                json!({"method": "notifications/resources/updated", "params": {"uri": uri}});
            notification(updated).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

impl Session {
    /// Serves one `subscriptions/listen` stream until the client closes it.
    pub(super) async fn listen_stream(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let shared = &self.shared;
        let client = self.client(&context.request_context().extensions);
        shared.ready().await;
        let mut events = shared.host.servers().subscribe();
        let sink = context.sink().clone();
        let watching = Watching::new(shared.host.clone());
        for uri in sink.accepted().resource_subscriptions.iter().flatten() {
            watching.set(&client, uri, true).await?;
        }
        loop {
            let event = tokio::select! {
                _ = context.cancelled() => return Ok(()),
                e = events.recv() => e,
            };
            let event = match event {
                Ok(e) => e,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return Ok(()),
            };
            for n in changes(&shared.host, shared.exposed(), &watching, &event).await {
                match sink.send(n).await {
                    // Not asked for on this stream.
                    Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {}
                    Err(_) => return Ok(()),
                }
            }
        }
    }
}
