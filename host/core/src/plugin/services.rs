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

/// The embedding model, as `embed.model` describes it to a guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbedModel {
    /// Its name, `@`, and a digest of its files.
    pub id: String,
    /// The length of its vectors.
    pub dimension: u32,
    /// The most word pieces of a text it reads.
    pub max_tokens: u32,
}

/// When missing vectors are computed (WIT `embed.urgency`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Urgency {
    /// While the caller waits (a query).
    Now,
    /// In the background; the answer is [`EmbedError::Pending`] meanwhile.
    Background,
}

/// Why there are no vectors (WIT `embed.embed-error`, less `denied`, which
/// the plugin runtime answers itself).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// No model is configured.
    #[error("no embedding model is configured")]
    NoModel,
    /// Being computed: `done` of `total` texts have vectors.
    #[error("vectors are being computed: {done} of {total}")]
    Pending {
        /// Texts with a vector.
        done: u32,
        /// Texts asked for.
        total: u32,
    },
    /// The request cannot be used.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The model could not be loaded or run.
    #[error("{0}")]
    Model(String),
}

/// The host's side of the guest imports. Methods block; guests run on blocking threads.
pub trait HostServices: Send + Sync {
    /// Every configured server with its status.
    fn servers(&self) -> Vec<ServerStatus>;
    /// Tools of one server, or of all when `server` is `None`.
    fn tools(&self, server: Option<&str>) -> Result<Vec<Tool>, ServiceError>;
    /// Connects `server` (`refresh`: reconnect now, bypassing backoff).
    fn connect(&self, server: &str, refresh: bool) -> Result<ServerStatus, ServiceError>;
    /// Calls a tool by its original name with a JSON object text of
    /// arguments, for `caller` (the calling guest: its role, or its name).
    fn call_tool(
        &self,
        caller: &str,
        server: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<CallOutcome, ServiceError>;
    /// Reads a resource for `caller`; returns the MCP `contents` array as JSON text.
    fn read_resource(&self, caller: &str, server: &str, uri: &str) -> Result<String, ServiceError>;
    /// The embedding model, when one is configured.
    fn embed_model(&self) -> Option<EmbedModel> {
        None
    }
    /// One unit vector per text (see WIT `embed.embed`).
    fn embed(&self, _texts: &[String], _urgency: Urgency) -> Result<Vec<Vec<f32>>, EmbedError> {
        Err(EmbedError::NoModel)
    }
}

/// A function that embeds texts (a model's, behind [`StaticServices`]).
type EmbedFn = dyn Fn(&[String], Urgency) -> Result<Vec<Vec<f32>>, EmbedError> + Send + Sync;

/// Services answering from a fixed set of servers and tools (a config and its
/// cache, or a catalog file), with no live connections; with embeddings
/// when given some.
#[derive(Clone, Default)]
pub struct StaticServices {
    servers: Vec<ServerStatus>,
    tools: Vec<Tool>,
    embed: Option<std::sync::Arc<EmbedFn>>,
    embed_model: Option<EmbedModel>,
}

impl std::fmt::Debug for StaticServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticServices")
            .field("servers", &self.servers.len())
            .field("tools", &self.tools.len())
            .field("embed_model", &self.embed_model)
            .finish()
    }
}

impl StaticServices {
    /// Services over these servers and tools.
    pub fn new(servers: Vec<ServerStatus>, tools: Vec<Tool>) -> Self {
        StaticServices {
            servers,
            tools,
            embed: None,
            embed_model: None,
        }
    }

    /// These services, embedding texts with `embed` (a model's).
    pub fn with_embeddings(
        mut self,
        model: EmbedModel,
        embed: impl Fn(&[String], Urgency) -> Result<Vec<Vec<f32>>, EmbedError> + Send + Sync + 'static,
    ) -> Self {
        self.embed_model = Some(model);
        self.embed = Some(std::sync::Arc::new(embed));
        self
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
        _caller: &str,
        server: &str,
        _tool: &str,
        _arguments: &str,
    ) -> Result<CallOutcome, ServiceError> {
        self.known(server)?;
        Err(Self::offline(server))
    }

    fn read_resource(
        &self,
        _caller: &str,
        server: &str,
        _uri: &str,
    ) -> Result<String, ServiceError> {
        self.known(server)?;
        Err(Self::offline(server))
    }

    fn embed_model(&self) -> Option<EmbedModel> {
        self.embed_model.clone()
    }

    fn embed(&self, texts: &[String], urgency: Urgency) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.embed {
            Some(embed) => embed(texts, urgency),
            None => Err(EmbedError::NoModel),
        }
    }
}

/// The services of the guest of one role: what it calls, it calls as its
/// role (the host counts it as `guest:<role>`: the bucket its calls draw
/// from, the client the guards and the audit line see), whatever its file
/// is named.
pub(crate) struct AsRole {
    inner: std::sync::Arc<dyn HostServices>,
    caller: String,
}

impl AsRole {
    pub(crate) fn new(inner: std::sync::Arc<dyn HostServices>, role: crate::config::Role) -> Self {
        AsRole {
            inner,
            caller: role.to_string(),
        }
    }
}

impl HostServices for AsRole {
    fn servers(&self) -> Vec<ServerStatus> {
        self.inner.servers()
    }

    fn tools(&self, server: Option<&str>) -> Result<Vec<Tool>, ServiceError> {
        self.inner.tools(server)
    }

    fn connect(&self, server: &str, refresh: bool) -> Result<ServerStatus, ServiceError> {
        self.inner.connect(server, refresh)
    }

    fn call_tool(
        &self,
        _caller: &str,
        server: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<CallOutcome, ServiceError> {
        self.inner.call_tool(&self.caller, server, tool, arguments)
    }

    fn read_resource(
        &self,
        _caller: &str,
        server: &str,
        uri: &str,
    ) -> Result<String, ServiceError> {
        self.inner.read_resource(&self.caller, server, uri)
    }

    fn embed_model(&self) -> Option<EmbedModel> {
        self.inner.embed_model()
    }

    fn embed(&self, texts: &[String], urgency: Urgency) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed(texts, urgency)
    }
}
