//! Upstream prompts, exposed under names the naming guest gives them.

use super::{Host, HostError, PromptEntry};
use serde_json::{Map, Value};

impl Host {
    /// Every upstream prompt under its exposed name (`<server>__<prompt>` with
    /// the default naming guest), in config order.
    pub async fn prompts(&self) -> Result<Vec<PromptEntry>, HostError> {
        Ok(self.snapshot().await?.prompts().to_vec())
    }

    /// Gets an upstream prompt by its exposed name; returns the MCP
    /// `GetPromptResult` as JSON.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, HostError> {
        let snapshot = self.snapshot().await?;
        let entry = snapshot
            .prompt(name)
            .ok_or_else(|| HostError::PromptNotFound(name.to_string()))?;
        let timeout = self.manager.call_timeout(&entry.server);
        let original = entry.original.clone();
        let result = self
            .manager
            .with_connection(&entry.server, |c| async move {
                c.get_prompt(&original, arguments, timeout).await
            })
            .await?;
        Ok(serde_json::to_value(result).unwrap_or(Value::Null))
    }
}
