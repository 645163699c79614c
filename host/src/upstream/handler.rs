//! The client side of an upstream connection: identifies mcpw and turns
//! list-changed notifications into events for the host.

use super::ConnectContext;
use crate::log_level::LogLevel;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, NumberOrString, ProgressNotificationParam,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Something an upstream server told us.
#[derive(Clone, Debug, PartialEq)]
pub enum UpstreamEvent {
    /// `notifications/tools/list_changed` (or resources) from this server.
    ListChanged(String),
    /// `notifications/resources/updated`: (server, the server's URI).
    ResourceUpdated(String, String),
    /// `notifications/message` from this server.
    Log(String, LogMessage),
}

/// A server's log message.
#[derive(Clone, Debug, PartialEq)]
pub struct LogMessage {
    /// Its severity.
    pub level: LogLevel,
    /// The server's logger name, if it gave one.
    pub logger: Option<String>,
    /// The message.
    pub data: serde_json::Value,
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

    // Logging is deprecated from 2026-07-28 on; the revisions before it have it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Ok(v) = serde_json::to_value(&params) else {
            return;
        };
        let Some(level) = LogLevel::from_json(&v["level"]) else {
            return;
        };
        let message = LogMessage {
            level,
            logger: params.logger,
            data: params.data,
        };
        let _ = self
            .events
            .send(UpstreamEvent::Log(self.server.clone(), message));
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
