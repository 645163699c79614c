//! The guests' `catalog`, `lifecycle` and `calls` imports, on live connections.
//! Guests run on blocking threads, so these block on the runtime.

use crate::catalog::{ServerStatus, Tool, ToolKind};
use crate::lifecycle::{LifecycleError, Manager};
use crate::plugin::{CallOutcome, HostServices, ServiceError};
use std::sync::{Arc, Weak};
use tokio::runtime::Handle;

pub struct LiveServices {
    manager: Weak<Manager>,
    runtime: Handle,
}

impl LiveServices {
    pub fn new(manager: &Arc<Manager>) -> Self {
        LiveServices {
            manager: Arc::downgrade(manager),
            runtime: Handle::current(),
        }
    }

    fn manager(&self) -> Result<Arc<Manager>, ServiceError> {
        self.manager
            .upgrade()
            .ok_or_else(|| ServiceError::Unavailable("the host is shutting down".into()))
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
        self.manager().map(|m| m.status()).unwrap_or_default()
    }

    fn tools(&self, server: Option<&str>) -> Result<Vec<Tool>, ServiceError> {
        let m = self.manager()?;
        match server {
            None => Ok(m.tools()),
            Some(s) => Ok(m
                .server_tools(s)
                .map_err(service_error)?
                .unwrap_or_default()),
        }
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
                c.call_tool(&name, Some(args), timeout, None).await
            }))
            .map_err(service_error)?;
        let raw = serde_json::to_value(&result).unwrap_or_default();
        Ok(CallOutcome {
            content: raw
                .get("content")
                .map(|c| c.to_string())
                .unwrap_or_else(|| "[]".into()),
            structured_content: raw.get("structuredContent").map(|c| c.to_string()),
            is_error: raw
                .get("isError")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
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
        let raw = serde_json::to_value(&result).unwrap_or_default();
        Ok(raw
            .get("contents")
            .map(|c| c.to_string())
            .unwrap_or_else(|| "[]".into()))
    }
}
