//! From what a server listed (or the cache holds) to catalog tools: resources
//! become tools when `exposeResources` is on. What `excludeTools` and
//! `includeTools` select is decided with the catalog snapshot, by the names the
//! naming guest gives.

use crate::catalog::{Schema, Tool, ToolKind};
use crate::config::ServerConfig;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// Takes a string field out of a listed object.
fn take_text(v: &mut Value, key: &str) -> Option<String> {
    match v.as_object_mut()?.remove(key)? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// A listed MCP tool, as far as the catalog reads it. Fields of the wrong
/// type count as absent, as they did when a listing was read as a tree.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedTool {
    #[serde(default)]
    name: Value,
    #[serde(default)]
    title: Value,
    #[serde(default)]
    description: Value,
    #[serde(default)]
    input_schema: Option<Schema>,
    #[serde(default)]
    annotations: Value,
    #[serde(default)]
    output_schema: Value,
    #[serde(default, rename = "_meta")]
    meta: Value,
}

fn text(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// Catalog tools from listed MCP tools (as the JSON text a server sent) and
/// resources; start-up turns every cached tool into one, without building a
/// tree of its schema.
pub(crate) fn catalog_tools(
    server: &str,
    config: &ServerConfig,
    tools: &[Box<RawValue>],
    resources: Vec<Value>,
) -> Vec<Tool> {
    catalog_tools_counted(server, config, tools, resources).0
}

/// [`catalog_tools`], and how many listed tools could not be read (a name
/// that is not text, a schema that is not an object): skipped.
pub(crate) fn catalog_tools_counted(
    server: &str,
    config: &ServerConfig,
    tools: &[Box<RawValue>],
    resources: Vec<Value>,
) -> (Vec<Tool>, usize) {
    let mut out = Vec::with_capacity(tools.len() + resources.len());
    let mut unreadable = 0;
    for raw in tools {
        let Ok(t) = serde_json::from_str::<ListedTool>(raw.get()) else {
            unreadable += 1;
            continue;
        };
        let Some(name) = text(t.name) else {
            unreadable += 1;
            continue;
        };
        let annotations = Some(t.annotations).filter(Value::is_object);
        let title = text(t.title).or_else(|| {
            annotations
                .as_ref()
                .and_then(|a| a.get("title"))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        out.push(Tool {
            server: server.to_string(),
            title,
            description: text(t.description).unwrap_or_default(),
            input_schema: t.input_schema.unwrap_or_default(),
            annotations,
            kind: ToolKind::Tool,
            resource_uri: None,
            // Only an object is a schema; anything else is left out.
            output_schema: match t.output_schema {
                Value::Object(o) => Some(Schema::from_object(o)),
                _ => None,
            },
            meta: Some(t.meta).filter(Value::is_object),
            name,
        });
    }
    if config.expose_resources {
        for mut r in resources {
            let (Some(name), Some(uri)) = (take_text(&mut r, "name"), take_text(&mut r, "uri"))
            else {
                continue;
            };
            // An MCP App's view is for a host to render, not for the model;
            // a skill's files are found and read as the skill's (search,
            // `mcp({skill})`), not as tools of their own.
            if uri.starts_with(crate::apps::SCHEME) || uri.starts_with(crate::catalog::SKILL_SCHEME)
            {
                continue;
            }
            let description = take_text(&mut r, "description")
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| format!("Read resource: {uri}"));
            out.push(Tool {
                server: server.to_string(),
                name,
                title: take_text(&mut r, "title"),
                description,
                input_schema: Schema::default(),
                annotations: None,
                kind: ToolKind::Resource,
                resource_uri: Some(uri),
                output_schema: None,
                meta: None,
            });
        }
    }
    (first_of_each(server, out), unreadable)
}

/// The first tool of each name (and resource of each URI): a server that
/// lists two is told of, and the agent, the pins and the calls all see the
/// first, never one for another.
fn first_of_each(server: &str, tools: Vec<Tool>) -> Vec<Tool> {
    let mut seen = std::collections::HashSet::new();
    let mut doubles = Vec::new();
    let kept: Vec<Tool> = tools
        .into_iter()
        .filter(|t| {
            let first = seen.insert(crate::pins::item_key(t));
            if !first {
                doubles.push(crate::visible::escaped(&crate::pins::item_key(t)));
            }
            first
        })
        .collect();
    if !doubles.is_empty() {
        tracing::warn!(
            "server \"{server}\" lists more than one of {}: the first of each is kept, the others left out",
            doubles.join(", ")
        );
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_config(expose: bool) -> ServerConfig {
        crate::config::validate::server(
            "s",
            &serde_json::json!({"command": "x", "exposeResources": expose}),
            std::path::Path::new("mcp.json"),
            &Default::default(),
            crate::config::Provenance::User,
            &mut Vec::new(),
        )
        .unwrap()
    }

    #[test]
    fn of_two_tools_of_one_name_the_first_is_kept_and_a_resource_of_that_name_too() {
        let config = server_config(true);
        let raw = |v: serde_json::Value| serde_json::value::to_raw_value(&v).unwrap();
        let tools = [
            raw(serde_json::json!({"name": "lookup", "description": "first"})),
            raw(serde_json::json!({"name": "lookup", "description": "second"})),
        ];
        let resources = vec![serde_json::json!({"name": "lookup", "uri": "file:///l"})];
        let out = catalog_tools("s", &config, &tools, resources);
        let kept: Vec<(&str, ToolKind)> = out
            .iter()
            .map(|t| (t.description.as_str(), t.kind))
            .collect();
        assert_eq!(
            kept,
            [
                ("first", ToolKind::Tool),
                ("Read resource: file:///l", ToolKind::Resource)
            ]
        );
    }

    #[test]
    fn resources_become_tools_only_when_exposed() {
        let config = server_config;
        let tools =
            [serde_json::value::to_raw_value(&serde_json::json!({"name": "search"})).unwrap()];
        let resources = [serde_json::json!({"name": "README", "uri": "file:///r"})];
        let kinds = |c: &ServerConfig| -> Vec<ToolKind> {
            catalog_tools("s", c, &tools, resources.to_vec())
                .into_iter()
                .map(|t| t.kind)
                .collect()
        };
        assert_eq!(kinds(&config(false)), [ToolKind::Tool]);
        assert_eq!(kinds(&config(true)), [ToolKind::Tool, ToolKind::Resource]);
    }

    #[test]
    fn fields_of_the_wrong_type_count_as_absent() {
        let config = crate::config::validate::server(
            "s",
            &serde_json::json!({"command": "x"}),
            std::path::Path::new("mcp.json"),
            &Default::default(),
            crate::config::Provenance::User,
            &mut Vec::new(),
        )
        .unwrap();
        let raw = |v: serde_json::Value| serde_json::value::to_raw_value(&v).unwrap();
        let tools = [
            raw(
                serde_json::json!({"name": "a", "title": 3, "description": ["x"],
                "inputSchema": {"properties": {"q": {}}}, "annotations": {"title": "A"}}),
            ),
            raw(serde_json::json!({"name": 7})),
            raw(serde_json::json!("not a tool")),
            raw(serde_json::json!({"name": "b", "inputSchema": "nonsense", "annotations": 1})),
        ];
        let out = catalog_tools("s", &config, &tools, vec![]);
        let names: Vec<&str> = out.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            out[0].title.as_deref(),
            Some("A"),
            "the annotations' title stands in"
        );
        assert_eq!(out[0].description, "");
        assert!(out[0].input_schema.get("properties").is_some());
        assert_eq!(
            out[1].input_schema.to_value(),
            serde_json::json!({"type": "object"})
        );
        assert_eq!(out[1].annotations, None);
    }
}
