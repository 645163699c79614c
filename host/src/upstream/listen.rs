//! Change notifications from a server of the stateless revision (2026-07-28).
//! Such a server sends list changes and resource updates only on a
//! `subscriptions/listen` stream: mcpw keeps one open per connection, asking
//! for every list change and for updates of the resources watched, and opens
//! a new one (then closes the old) when the watched set changes.

use super::events::UpstreamEvent;
use super::{ConnectError, Connection};
use rmcp::model::{ServerNotification, SubscriptionFilter};
use std::collections::BTreeSet;
use tokio::sync::oneshot;

/// A connection's listen stream: the resources it asks updates for, and the
/// task that reads it.
#[derive(Default)]
pub(super) struct Listening {
    uris: BTreeSet<String>,
    reader: Option<Reader>,
}

/// Reads a stream; dropping it cancels the stream.
struct Reader {
    _stop: oneshot::Sender<()>,
}

impl Connection {
    /// Opens the listen stream right after connecting, on a stateless
    /// revision; a server that has none is simply not listened to.
    pub(super) async fn start_listening(&self) {
        if self
            .protocol_version()
            .is_none_or(|v| super::is_legacy_revision(&v))
        {
            return;
        }
        let mut listening = self.listening.lock().await;
        if let Err(e) = self.listen(&mut listening, BTreeSet::new()).await {
            tracing::debug!(server = %self.routes.server, "not listening for changes: {e}");
        }
    }

    /// Asks for updates of `uri` on the listen stream (`subscribe`), or no more.
    pub(super) async fn listen_to_resource(
        &self,
        uri: &str,
        subscribe: bool,
    ) -> Result<(), ConnectError> {
        let mut listening = self.listening.lock().await;
        let mut uris = listening.uris.clone();
        if subscribe {
            uris.insert(uri.to_string());
        } else {
            uris.remove(uri);
        }
        self.listen(&mut listening, uris).await
    }

    /// Opens a stream for `uris` and every list change, then closes the old one.
    async fn listen(
        &self,
        listening: &mut Listening,
        uris: BTreeSet<String>,
    ) -> Result<(), ConnectError> {
        let mut filter = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resources_list_changed();
        if !uris.is_empty() {
            filter = filter.resource_subscriptions(uris.iter().cloned());
        }
        let mut stream = self
            .service
            .peer()
            .listen(filter.build())
            .await
            .map_err(|e| self.service_error(e))?;
        let accepted = stream
            .acknowledged()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        if let Some(refused) = uris.iter().find(|u| !accepted.contains(u)) {
            let _ = stream.cancel().await;
            return Err(ConnectError::Rpc(format!(
                "the server does not send updates of \"{refused}\""
            )));
        }
        let (stop, mut stopped) = oneshot::channel();
        let (server, events) = (self.routes.server.clone(), self.routes.events.clone());
        tokio::spawn(async move {
            loop {
                let notification = tokio::select! {
                    n = stream.next() => n,
                    _ = &mut stopped => {
                        let _ = stream.cancel().await;
                        return;
                    }
                };
                let event = match notification {
                    Ok(Some(n)) => event(&server, n),
                    Ok(None) | Err(_) => return,
                };
                if let Some(event) = event
                    && !events.change(event)
                {
                    return;
                }
            }
        });
        listening.uris = uris;
        listening.reader = Some(Reader { _stop: stop });
        Ok(())
    }
}

/// What a notification on the stream means to the host.
fn event(server: &str, notification: ServerNotification) -> Option<UpstreamEvent> {
    match notification {
        ServerNotification::ToolListChangedNotification(_)
        | ServerNotification::PromptListChangedNotification(_)
        | ServerNotification::ResourceListChangedNotification(_) => {
            Some(UpstreamEvent::ListChanged(server.to_string()))
        }
        ServerNotification::ResourceUpdatedNotification(n) => Some(UpstreamEvent::ResourceUpdated(
            server.to_string(),
            n.params.uri,
        )),
        _ => None,
    }
}
