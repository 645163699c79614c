//! From what a server listed (or the cache holds) to catalog tools: resources
//! become tools when `exposeResources` is on. What `excludeTools` and
//! `includeTools` select is decided with the catalog snapshot, by the names the
//! naming guest gives.

use crate::catalog::{Tool, ToolKind};
use crate::config::ServerConfig;
use serde_json::Value;

/// Takes a string field out of a listed object.
fn take_text(v: &mut Value, key: &str) -> Option<String> {
    match v.as_object_mut()?.remove(key)? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// Catalog tools from listed MCP tools and resources (as JSON), taken apart
/// rather than copied: start-up turns every cached tool into one.
pub fn catalog_tools(
    server: &str,
    config: &ServerConfig,
    tools: Vec<Value>,
    resources: Vec<Value>,
) -> Vec<Tool> {
    let mut out = Vec::with_capacity(tools.len() + resources.len());
    for mut t in tools {
        let Some(name) = take_text(&mut t, "name") else {
            continue;
        };
        let mut annotations = t
            .as_object_mut()
            .and_then(|o| o.remove("annotations"))
            .filter(Value::is_object);
        let title = take_text(&mut t, "title").or_else(|| {
            annotations
                .as_ref()
                .and_then(|a| a.get("title"))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        out.push(Tool {
            server: server.to_string(),
            title,
            description: take_text(&mut t, "description").unwrap_or_default(),
            input_schema: t
                .as_object_mut()
                .and_then(|o| o.remove("inputSchema"))
                .unwrap_or_else(|| Value::Object(Default::default())),
            annotations: annotations.take(),
            kind: ToolKind::Tool,
            resource_uri: None,
            name,
        });
    }
    if config.expose_resources {
        for mut r in resources {
            let (Some(name), Some(uri)) = (take_text(&mut r, "name"), take_text(&mut r, "uri"))
            else {
                continue;
            };
            let description = take_text(&mut r, "description")
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| format!("Read resource: {uri}"));
            out.push(Tool {
                server: server.to_string(),
                name,
                title: take_text(&mut r, "title"),
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
            catalog_tools("s", c, tools.to_vec(), resources.to_vec())
                .into_iter()
                .map(|t| t.kind)
                .collect()
        };
        assert_eq!(kinds(&config(false)), [ToolKind::Tool]);
        assert_eq!(kinds(&config(true)), [ToolKind::Tool, ToolKind::Resource]);
    }
}
