//! From what a server listed (or the cache holds) to catalog tools: resources
//! become tools when `exposeResources` is on. What `excludeTools` and
//! `includeTools` select is decided with the catalog snapshot, by the names the
//! naming guest gives.

use crate::catalog::{Tool, ToolKind};
use crate::config::ServerConfig;
use serde_json::Value;

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Catalog tools from listed MCP tools and resources (as JSON).
pub fn catalog_tools(
    server: &str,
    config: &ServerConfig,
    tools: &[Value],
    resources: &[Value],
) -> Vec<Tool> {
    let mut out = Vec::with_capacity(tools.len() + resources.len());
    for t in tools {
        let Some(name) = text(t, "name") else {
            continue;
        };
        let annotations = t.get("annotations").filter(|a| a.is_object()).cloned();
        out.push(Tool {
            server: server.to_string(),
            title: text(t, "title").or_else(|| annotations.as_ref().and_then(|a| text(a, "title"))),
            description: text(t, "description").unwrap_or_default(),
            input_schema: t
                .get("inputSchema")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default())),
            annotations,
            kind: ToolKind::Tool,
            resource_uri: None,
            name,
        });
    }
    if config.expose_resources {
        for r in resources {
            let (Some(name), Some(uri)) = (text(r, "name"), text(r, "uri")) else {
                continue;
            };
            let description = text(r, "description")
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| format!("Read resource: {uri}"));
            out.push(Tool {
                server: server.to_string(),
                name,
                title: text(r, "title"),
                description,
                input_schema: Value::Object(Default::default()),
                annotations: None,
                kind: ToolKind::Resource,
                resource_uri: Some(uri),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_become_tools_only_when_exposed() {
        let config = |expose: bool| {
            crate::config::validate::server(
                "s",
                &serde_json::json!({"command": "x", "exposeResources": expose}),
                std::path::Path::new("mcp.json"),
                &Default::default(),
                true,
                &mut Vec::new(),
            )
            .unwrap()
        };
        let tools = [serde_json::json!({"name": "search"})];
        let resources = [serde_json::json!({"name": "README", "uri": "file:///r"})];
        let kinds = |c: &ServerConfig| -> Vec<ToolKind> {
            catalog_tools("s", c, &tools, &resources)
                .into_iter()
                .map(|t| t.kind)
                .collect()
        };
        assert_eq!(kinds(&config(false)), [ToolKind::Tool]);
        assert_eq!(kinds(&config(true)), [ToolKind::Tool, ToolKind::Resource]);
    }
}
