//! How the lifecycle opens a connection: by spawning or dialing the server
//! its config names, or any other way that yields a [`Connection`] (tests
//! connect to servers in the same process, with no process or socket).

use crate::config::ServerConfig;
use crate::upstream::{ConnectContext, ConnectError, Connection, Listing};
use futures::future::BoxFuture;

/// Opens connections for the lifecycle.
pub(crate) trait Connector: Send + Sync {
    /// Connects to the server `config` describes, initializes and lists what
    /// it offers, within its `startupTimeoutMs`.
    fn open<'a>(
        &'a self,
        config: &'a ServerConfig,
        ctx: &'a ConnectContext,
    ) -> BoxFuture<'a, Result<(Connection, Listing), ConnectError>>;
}

/// Spawns stdio servers and dials HTTP ones: what mcpw does outside tests.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Transports;

impl Connector for Transports {
    fn open<'a>(
        &'a self,
        config: &'a ServerConfig,
        ctx: &'a ConnectContext,
    ) -> BoxFuture<'a, Result<(Connection, Listing), ConnectError>> {
        Box::pin(Connection::open(config, ctx))
    }
}
