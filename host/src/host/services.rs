//! The guests' `catalog`, `lifecycle` and `calls` imports, on live connections.
//! Guests run on blocking threads, so these block on the runtime.

use super::snapshot::Publisher;
use crate::catalog::{ServerStatus, Tool, ToolKind};
use crate::lifecycle::{LifecycleError, Manager};
use crate::plugin::{CallOutcome, EmbedError, EmbedModel, HostServices, ServiceError, Urgency};
use std::sync::{Arc, OnceLock, Weak};
use tokio::runtime::Handle;

pub struct LiveServices {
    /// Set once the manager exists (the guests load while it reads the cache).
    manager: OnceLock<Weak<Manager>>,
    catalog: Arc<Publisher>,
    runtime: Handle,
    embeddings: Option<Arc<crate::embed::Embeddings>>,
}

impl LiveServices {
    pub fn new(catalog: Arc<Publisher>, embeddings: Option<Arc<crate::embed::Embeddings>>) -> Self {
        LiveServices {
            manager: OnceLock::new(),
            catalog,
            runtime: Handle::current(),
            embeddings,
        }
    }

    pub fn attach(&self, manager: &Arc<Manager>) {
        let _ = self.manager.set(Arc::downgrade(manager));
    }

    fn manager(&self) -> Result<Arc<Manager>, ServiceError> {
        self.manager
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| ServiceError::Unavailable("the host is not running".into()))
    }
}

fn service_error(e: LifecycleError) -> ServiceError {
    match e {
        LifecycleError::NotFound(s) => ServiceError::NotFound(format!("no server named {s:?}")),
        other => ServiceError::Unavailable(other.to_string()),
    }
}

impl HostServices for LiveServices {
    fn servers(&self) -> Vec<ServerStatus> {
        let Ok(m) = self.manager() else {
            return Vec::new();
        };
        let mut all = m.status();
        self.catalog
            .latest()
            .count_exposed(m.catalog_version(), &mut all);
        all
    }

    /// The exposed tools of the latest catalog snapshot (a guest running while
    /// a snapshot is built sees the one before), or what the servers listed
    /// before any snapshot exists.
    fn tools(&self, server: Option<&str>) -> Result<Vec<Tool>, ServiceError> {
        let m = self.manager()?;
        if let Some(s) = server {
            m.server_status(s).map_err(service_error)?;
        }
        let snapshot = self.catalog.latest();
        if snapshot.version() == 0 {
            return Ok(match server {
                None => m.tools(),
                Some(s) => m.server_tools(s).ok().flatten().unwrap_or_default(),
            });
        }
        Ok(snapshot
            .entries()
            .iter()
            .filter(|e| server.is_none_or(|s| e.tool.server == s))
            .map(|e| Tool::clone(&e.tool))
            .collect())
    }

    fn connect(&self, server: &str, refresh: bool) -> Result<ServerStatus, ServiceError> {
        let m = self.manager()?;
        self.runtime
            .block_on(m.connect(server, refresh))
            .map_err(service_error)?;
        m.server_status(server).map_err(service_error)
    }

    fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<CallOutcome, ServiceError> {
        let m = self.manager()?;
        let args: serde_json::Map<String, serde_json::Value> = serde_json::from_str(arguments)
            .map_err(|e| {
                ServiceError::InvalidInput(format!("arguments are not a JSON object: {e}"))
            })?;
        let known = m
            .server_tools(server)
            .map_err(service_error)?
            .unwrap_or_default();
        if known
            .iter()
            .any(|t| t.name == tool && t.kind == ToolKind::Resource)
        {
            return Err(ServiceError::InvalidInput(format!(
                "{tool} is a resource; use read-resource"
            )));
        }
        let name = tool.to_string();
        let timeout = m.call_timeout(server);
        let result = self
            .runtime
            .block_on(m.with_connection(server, |c| async move {
                let options = crate::upstream::CallOptions::default();
                c.call_tool(&name, Some(args), timeout, options).await
            }))
            .map_err(service_error)?;
        // A call that does not take tasks gets the result.
        let crate::upstream::Called::Done(result) = result else {
            return Err(ServiceError::Failed(
                "the server answered with a task".into(),
            ));
        };
        Ok(CallOutcome {
            content: serde_json::to_string(&result.content).unwrap_or_else(|_| "[]".into()),
            structured_content: result.structured_content.as_ref().map(|s| s.to_string()),
            is_error: result.is_error == Some(true),
        })
    }

    fn read_resource(&self, server: &str, uri: &str) -> Result<String, ServiceError> {
        let m = self.manager()?;
        let uri = uri.to_string();
        let timeout = m.call_timeout(server);
        let result =
            self.runtime
                .block_on(m.with_connection(server, |c| async move {
                    c.read_resource(&uri, timeout).await
                }))
                .map_err(service_error)?;
        Ok(serde_json::to_string(&result.contents).unwrap_or_else(|_| "[]".into()))
    }

    fn embed_model(&self) -> Option<EmbedModel> {
        self.embeddings.as_ref()?.model()
    }

    fn embed(&self, texts: &[String], urgency: Urgency) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.embeddings {
            Some(e) => e.embed(texts, urgency),
            None => Err(EmbedError::NoModel),
        }
    }
}
