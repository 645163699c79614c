//! The tools of one session as a script's [`Toolbox`]: each call resolved
//! among the tools the client sees and made the way its own calls are.

use crate::catalog::Entry;
use crate::gateway::{ClientScope, Gateway};
use crate::host::{CallOptions, HostError};
use crate::plugin::script::{Done, ToolInfo, Toolbox};
use crate::plugin::{CallOutcome, SearchOptions, ServiceError};
use crate::present::Content;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use std::sync::Mutex;
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

pub(super) struct SessionToolbox {
    gw: Gateway,
    client: ClientScope,
    /// The session the calls are made for (servers' requests go back to it).
    options: CallOptions,
    runtime: Handle,
    calls: Mutex<Vec<AbortHandle>>,
}

impl SessionToolbox {
    pub(super) fn new(
        gw: &Gateway,
        client: &ClientScope,
        ctx: &RequestContext<RoleServer>,
    ) -> Self {
        // Inner calls' own progress is not forwarded: the tokens of several
        // calls would interleave under the script's one.
        let options = CallOptions {
            origin: gw.origin(ctx),
            ..CallOptions::default()
        };
        SessionToolbox {
            gw: gw.clone(),
            client: client.clone(),
            options,
            runtime: Handle::current(),
            calls: Mutex::new(Vec::new()),
        }
    }
}

impl Toolbox for SessionToolbox {
    fn start(&self, name: &str, arguments: &str, done: Done) {
        let (gw, client, options) = (self.gw.clone(), self.client.clone(), self.options.clone());
        let (name, arguments) = (name.to_string(), arguments.to_string());
        let task = self.runtime.spawn(async move {
            done(call(&gw, &client, &name, &arguments, options).await);
        });
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(task.abort_handle());
    }

    fn search(&self, query: &str, limit: u32) -> Result<Vec<ToolInfo>, ServiceError> {
        let options = SearchOptions {
            limit,
            ..Default::default()
        };
        let shared = &self.gw.shared;
        let hits = self
            .runtime
            .block_on(async {
                // Search needs every server's tools, as the proxy's does.
                shared.ready().await;
                shared.search_for(&self.client, query, options).await
            })
            .map_err(|e| ServiceError::Failed(e.to_string()))?;
        Ok(hits.iter().map(|(e, _)| info(e)).collect())
    }

    fn describe(&self, name: &str) -> Result<ToolInfo, ServiceError> {
        self.runtime
            .block_on(async {
                self.gw.shared.ready().await;
                self.gw.shared.resolve_for(&self.client, name).await
            })
            .map(|e| info(&e))
            .map_err(service_error)
    }

    fn stop(&self) {
        for call in self
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            call.abort();
        }
    }
}

impl Drop for SessionToolbox {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One call, as a direct call of the session would be made.
async fn call(
    gw: &Gateway,
    client: &ClientScope,
    name: &str,
    arguments: &str,
    options: CallOptions,
) -> Result<CallOutcome, ServiceError> {
    let args = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => m,
        _ => {
            return Err(ServiceError::InvalidInput(
                "arguments must be a JSON object".into(),
            ));
        }
    };
    let entry = gw
        .shared
        .resolve_for(client, name)
        .await
        .map_err(service_error)?;
    let raw = gw
        .shared
        .host
        .call_raw(&entry, Some(args), options)
        .await
        .map_err(service_error)?;
    let out = crate::host::present_result(&entry, raw);
    Ok(CallOutcome {
        content: Value::Array(out.content.iter().map(without_bytes).collect()).to_string(),
        structured_content: out.structured_content.map(|v| v.to_string()),
        is_error: out.is_error,
    })
}

/// A content block for a script: binary data replaced by its size.
fn without_bytes(block: &Content) -> Value {
    match block {
        Content::Text { text } => json!({"type": "text", "text": text}),
        Content::Image { data, mime_type } => {
            json!({"type": "image", "mimeType": mime_type, "bytes": data.len() / 4 * 3})
        }
    }
}

fn service_error(e: HostError) -> ServiceError {
    match e {
        HostError::ToolNotFound { .. } => ServiceError::NotFound(e.to_string()),
        HostError::Lifecycle(_) => ServiceError::Unavailable(e.to_string()),
        HostError::BadArguments(_) => ServiceError::InvalidInput(e.to_string()),
        other => ServiceError::Failed(other.to_string()),
    }
}

fn info(e: &Entry) -> ToolInfo {
    ToolInfo {
        name: e.name.clone(),
        server: e.tool.server.clone(),
        original_name: e.tool.name.clone(),
        title: e.tool.title.clone(),
        description: e.tool.description.clone(),
        input_schema: e.tool.input_schema.text().to_string(),
        output_schema: None,
        annotations: e.tool.annotations.as_ref().map(|a| a.to_string()),
    }
}
