//! The servers a [`Host`](crate::host::Host) runs, as its users see them:
//! their state, connecting and stopping them, their events. It speaks for
//! the lifecycle, which stays private to this crate, and hands out no
//! connection: every call goes along [`Host::call`](crate::host::Host::call)'s
//! path.

use crate::catalog::ServerStatus;
use crate::config::Server;
use crate::lifecycle::Manager;
use std::sync::Arc;

pub use crate::downstream::Sessions;
pub use crate::lifecycle::{
    LifecycleError as ServerError, LifecycleEvent as ServerEvent, LifecycleOptions as ServerOptions,
};
pub use crate::log_level::LogLevel;
pub use crate::upstream::{
    ConnectError, LogMessage, Need, ProgressUpdate, TransportKind, is_legacy_revision,
};

/// The servers of one host; cheap to clone.
#[derive(Clone)]
pub struct Servers {
    manager: Arc<Manager>,
}

impl Servers {
    pub(crate) fn new(manager: Arc<Manager>) -> Self {
        Servers { manager }
    }

    /// Names of every configured server, in config order.
    pub fn names(&self) -> Vec<String> {
        self.manager.server_names()
    }

    /// A server's configuration, if it is configured.
    pub fn server(&self, name: &str) -> Option<Server> {
        self.manager.server(name)
    }

    /// Whether a server's tools are known (cached or listed).
    pub fn has_tools(&self, name: &str) -> bool {
        self.manager.has_tools(name)
    }

    /// Whether some server offers MCP Apps' views.
    pub fn has_views(&self) -> bool {
        self.manager.has_views()
    }

    /// The status of one server.
    pub fn status(&self, name: &str) -> Result<ServerStatus, ServerError> {
        self.manager.server_status(name)
    }

    /// The tools a server offers, when known.
    pub fn tools(&self, name: &str) -> Result<Option<Vec<crate::catalog::Tool>>, ServerError> {
        self.manager.server_tools(name)
    }

    /// Seconds since a server's last failure and seconds of backoff left, if
    /// it failed.
    pub fn failure(&self, name: &str) -> Option<(u64, u64)> {
        self.manager.failure(name)
    }

    /// How a server is connected, while it is.
    pub fn transport(&self, name: &str) -> Option<TransportKind> {
        self.manager.transport(name)
    }

    /// The process id of a server mcpw started, while it runs.
    pub fn pid(&self, name: &str) -> Option<u32> {
        self.manager.pid(name)
    }

    /// Connects a server (again, with `force`) and lists what it offers.
    pub async fn connect(&self, name: &str, force: bool) -> Result<(), ServerError> {
        self.manager.connect(name, force).await
    }

    /// Connects the servers `names` at once, telling `progress` as each
    /// settles.
    pub async fn connect_many(
        &self,
        names: Vec<String>,
        progress: impl Fn(&str, &Result<(), ServerError>),
    ) {
        self.manager.connect_many(names, progress).await
    }

    /// Connects again the servers whose configuration changed.
    pub async fn connect_changed(&self, changed: &[String]) {
        self.manager.connect_changed(changed).await
    }

    /// Connects again the servers that were offered less than the clients
    /// now declare (sampling, elicitation, roots, MCP Apps).
    pub async fn renew_offers(&self) {
        self.manager.renew_offers().await
    }

    /// Returns once every connected server's listening stream settled.
    pub async fn listen_settled(&self) {
        self.manager.listen_settled().await
    }

    /// Lists again the servers not heard from lately.
    pub fn freshen_unheard(&self) {
        self.manager.freshen_unheard()
    }

    /// Sets the level of the log messages servers send.
    pub async fn set_log_level(&self, level: LogLevel) {
        self.manager.set_log_level(level).await
    }

    /// Returns once every log message the servers sent so far has reached
    /// the subscribers.
    pub async fn logs_passed_on(&self) {
        self.manager.logs_passed_on().await
    }

    /// What happens to servers and their tools, as it happens.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<ServerEvent> {
        self.manager.subscribe()
    }

    /// Writes the metadata cache now.
    pub async fn flush_cache(&self) {
        self.manager.flush_cache().await
    }

    /// Stops every server at once, without waiting for calls in flight.
    pub async fn abort(&self) {
        self.manager.abort().await
    }

    /// The sessions that servers' own requests go back to.
    pub fn sessions(&self) -> Sessions {
        Sessions::new(self.manager.sessions().clone())
    }

    /// With credentials in shared state, the key every replica seals the
    /// state of a request it holds for a client with.
    pub fn held_requests_key(&self) -> Option<[u8; 32]> {
        self.manager.vault().held_requests_key()
    }
}
