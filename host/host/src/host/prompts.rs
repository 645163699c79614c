//! Upstream prompts, exposed under names the naming guest gives them.

use super::pipeline::{Caller, Read, Unattended};
use super::{Host, HostError, PromptEntry, upstream_span};
use serde_json::{Map, Value};

impl Host {
    /// Every upstream prompt under its exposed name (`<server>__<prompt>` with
    /// the default naming guest), in config order.
    pub async fn prompts(&self) -> Result<Vec<PromptEntry>, HostError> {
        Ok(self.snapshot().await?.prompts().to_vec())
    }

    /// Gets an upstream prompt by its exposed name, as a local caller (the
    /// read rate limited, guarded and audited); returns the MCP
    /// `GetPromptResult` as JSON.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, HostError> {
        let caller = Caller::local(std::sync::Arc::new(Unattended));
        self.get_prompt_as(&caller, name, arguments, Default::default())
            .await
    }

    /// [`Host::get_prompt`] for `caller`, along the path reads take
    /// (scope, rate limits, the guards on the prompt, the audit line); what the server asks meanwhile
    /// goes to the session `options` names.
    pub async fn get_prompt_as(
        &self,
        caller: &Caller,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: crate::upstream::CallOptions,
    ) -> Result<Value, HostError> {
        let snapshot = self.snapshot().await?;
        let entry = snapshot
            .prompt(name)
            .ok_or_else(|| HostError::PromptNotFound(name.to_string()))?;
        let timeout = self.manager.call_timeout(&entry.server);
        let original = entry.original.clone();
        // Got with the arguments the guards let through; what the server
        // asks while answering goes to `options`' session.
        let get = |arguments| async {
            let (who, need) = (caller.who(), crate::upstream::Need::Any);
            let get = self
                .manager
                .with_connection_as(&entry.server, who, need, |c| async move {
                    c.get_prompt(&original, arguments, timeout, &options).await
                });
            let result = upstream_span("prompts/get", &entry.server, &entry.original, get).await?;
            Ok::<_, HostError>(super::RawResult::Prompt(result))
        };
        let what = Read::Prompt {
            name: &entry.original,
            asked: name,
            arguments: arguments.as_ref(),
        };
        let got = Box::pin(super::pipeline::read(
            &*self.calls,
            caller,
            &entry.server,
            what,
            get,
        ))
        .await?;
        Ok(match got {
            super::RawResult::Prompt(got) => serde_json::to_value(got).unwrap_or(Value::Null),
            // A prompt is a prompt, whatever the guards did.
            _ => Value::Null,
        })
    }

    /// Completes an argument of a prompt (`ref/prompt`, by its exposed name)
    /// or of a resource template (`ref/resource`, by its listed URI), asking
    /// the server that offers it. `params` is the MCP `completion/complete`
    /// request's params; returns the MCP `CompleteResult` as JSON.
    pub async fn complete(&self, mut params: Value) -> Result<Value, HostError> {
        let snapshot = self.snapshot().await?;
        let reference = &mut params["ref"];
        let server = match reference["type"].as_str() {
            Some("ref/prompt") => {
                let name = reference["name"].as_str().unwrap_or_default().to_string();
                let entry = snapshot
                    .prompt(&name)
                    .ok_or(HostError::PromptNotFound(name))?;
                reference["name"] = Value::String(entry.original.clone());
                entry.server.clone()
            }
            _ => {
                let uri = reference["uri"].as_str().unwrap_or_default().to_string();
                let route = snapshot
                    .resources()
                    .route_template(&uri)
                    .ok_or(HostError::ResourceNotFound(uri))?;
                reference["uri"] = Value::String(route.uri);
                route.server
            }
        };
        let params =
            serde_json::from_value(params).map_err(|e| HostError::BadArguments(e.to_string()))?;
        let timeout = self.manager.call_timeout(&server);
        let complete =
            self.manager.with_connection(
                &server,
                |c| async move { c.complete(params, timeout).await },
            );
        let result = upstream_span("completion/complete", &server, "", complete).await?;
        Ok(serde_json::to_value(result).unwrap_or(Value::Null))
    }
}
