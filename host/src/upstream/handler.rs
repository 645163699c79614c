//! The client side of an upstream connection: identifies mcpw and turns
//! list-changed notifications into events for the host.

use super::ConnectContext;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, NumberOrString, ProgressNotificationParam,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Something an upstream server told us.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpstreamEvent {
    /// `notifications/tools/list_changed` (or resources) from this server.
    ListChanged(String),
    /// `notifications/resources/updated`: (server, the server's URI).
    ResourceUpdated(String, String),
}

/// A progress notification of an upstream call.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressUpdate {
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A message, when given.
    pub message: Option<String>,
}

/// Where progress of in-flight calls goes, by the token mcpw gave each call.
pub type ProgressRoutes = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<ProgressUpdate>>>>;

pub fn token_key(token: &NumberOrString) -> String {
    match token {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}

pub struct UpstreamHandler {
    server: String,
    events: mpsc::UnboundedSender<UpstreamEvent>,
    progress: ProgressRoutes,
}

impl UpstreamHandler {
    pub fn new(ctx: &ConnectContext, progress: ProgressRoutes) -> Self {
        UpstreamHandler {
            server: ctx.server.clone(),
            events: ctx.events.clone(),
            progress,
        }
    }

    fn changed(&self) {
        let _ = self
            .events
            .send(UpstreamEvent::ListChanged(self.server.clone()));
    }
}

impl ClientHandler for UpstreamHandler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mcpw", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed();
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.events.send(UpstreamEvent::ResourceUpdated(
            self.server.clone(),
            params.uri,
        ));
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = token_key(&params.progress_token.0);
        tracing::debug!(server = %self.server, token = %key, "upstream progress");
        let route = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if let Some(tx) = route {
            let _ = tx.send(ProgressUpdate {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }
}
