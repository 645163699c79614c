//! The client side of an upstream connection: identifies mcpw and turns
//! list-changed notifications into events for the host.

use super::ConnectContext;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::mpsc;

/// Something an upstream server told us.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpstreamEvent {
    /// `notifications/tools/list_changed` (or resources) from this server.
    ListChanged(String),
}

pub struct UpstreamHandler {
    server: String,
    events: mpsc::UnboundedSender<UpstreamEvent>,
}

impl UpstreamHandler {
    pub fn new(ctx: &ConnectContext) -> Self {
        UpstreamHandler {
            server: ctx.server.clone(),
            events: ctx.events.clone(),
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
}
