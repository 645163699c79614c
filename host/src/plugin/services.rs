//! What the host offers guests through the `catalog`, `lifecycle` and `calls`
//! imports. The plugin runtime checks grants; a [`HostServices`] implementation
//! only does the work.

use crate::catalog::{ServerStatus, Tool};

/// Why the host could not do what a guest asked (mapped to WIT `plugin-error`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// No such server, tool or resource.
    #[error("not found: {0}")]
    NotFound(String),
    /// Not possible now.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The request cannot be used.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Anything else.
    #[error("{0}")]
    Failed(String),
}

/// The outcome of a tool call made for a guest.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    /// The MCP `content` array as JSON text.
    pub content: String,
    /// The MCP `structuredContent` as JSON text, when present.
    pub structured_content: Option<String>,
    /// The tool reported an error.
    pub is_error: bool,
}

/// The host's side of the guest imports. Methods block; guests run on blocking threads.
pub trait HostServices: Send + Sync {
    /// Every configured server with its status.
    fn servers(&self) -> Vec<ServerStatus>;
    /// Tools of one server, or of all when `server` is `None`.
    fn tools(&self, server: Option<&str>) -> Result<Vec<Tool>, ServiceError>;
    /// Connects `server` (`refresh`: reconnect now, bypassing backoff).
    fn connect(&self, server: &str, refresh: bool) -> Result<ServerStatus, ServiceError>;
    /// Calls a tool by its original name with a JSON object text of arguments.
    fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<CallOutcome, ServiceError>;
    /// Reads a resource; returns the MCP `contents` array as JSON text.
    fn read_resource(&self, server: &str, uri: &str) -> Result<String, ServiceError>;
}

/// Services answering from a fixed set of servers and tools (a config and its
/// cache, or a catalog file), with no live connections.
#[derive(Clone, Debug, Default)]
pub struct StaticServices {
    servers: Vec<ServerStatus>,
    tools: Vec<Tool>,
}

impl StaticServices {
    /// Services over these servers and tools.
    pub fn new(servers: Vec<ServerStatus>, tools: Vec<Tool>) -> Self {
        StaticServices { servers, tools }
    }

    fn known(&self, server: &str) -> Result<(), ServiceError> {
        if self.servers.iter().any(|s| s.name == server) {
            Ok(())
        } else {
            Err(ServiceError::NotFound(format!(
                "no server named {server:?}"
            )))
        }
    }

    fn offline(server: &str) -> ServiceError {
        ServiceError::Unavailable(format!(
            "server {server:?} cannot be reached: this host has no live connections"
        ))
    }
}

impl HostServices for StaticServices {
    fn servers(&self) -> Vec<ServerStatus> {
        self.servers.clone()
    }

    fn tools(&self, server: Option<&str>) -> Result<Vec<Tool>, ServiceError> {
        if let Some(server) = server {
            self.known(server)?;
        }
        Ok(self
            .tools
            .iter()
            .filter(|t| server.is_none_or(|s| t.server == s))
            .cloned()
            .collect())
    }

    fn connect(&self, server: &str, _refresh: bool) -> Result<ServerStatus, ServiceError> {
        self.known(server)?;
        Err(Self::offline(server))
    }

    fn call_tool(
        &self,
        server: &str,
        _tool: &str,
        _arguments: &str,
    ) -> Result<CallOutcome, ServiceError> {
        self.known(server)?;
        Err(Self::offline(server))
    }

    fn read_resource(&self, server: &str, _uri: &str) -> Result<String, ServiceError> {
        self.known(server)?;
        Err(Self::offline(server))
    }
}
