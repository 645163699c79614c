//! From what a server listed (or the cache holds) to catalog tools: resources
//! become tools, `excludeTools` hides tools by original or prefixed name.

use crate::catalog::{Tool, ToolKind};
use crate::config::ServerConfig;
use serde_json::Value;

/// Does `excludeTools` hide this tool? Matches the original name, and the
/// `server__tool` forms of the `server` and `short` prefix modes; hyphens and
/// underscores are interchangeable.
pub fn excluded(server: &str, name: &str, kind: ToolKind, exclude: &[String]) -> bool {
    if exclude.is_empty() {
        return false;
    }
    let norm = |s: &str| s.replace('-', "_");
    let part = match kind {
        ToolKind::Tool => name.to_string(),
        ToolKind::Resource => format!("get_{}", slug(name)),
    };
    let full = server_prefix(server, crate::plugin::PrefixMode::Server);
    let short = server_prefix(server, crate::plugin::PrefixMode::Short);
    let candidates = [
        norm(name),
        norm(&part),
        norm(&format!("{full}__{part}")),
        norm(&format!("{short}__{part}")),
    ];
    exclude.iter().any(|e| candidates.contains(&norm(e)))
}

/// Is the tool on the `includeTools` list (or is there no list)?
pub fn included(server: &str, name: &str, kind: ToolKind, include: &[String]) -> bool {
    include.is_empty() || excluded(server, name, kind, include)
}

/// The server prefix a prefix mode gives, as the default naming guest computes
/// it (used to recognise a server in a tool name before its tools are known).
pub fn server_prefix(server: &str, mode: crate::plugin::PrefixMode) -> String {
    use crate::plugin::PrefixMode;
    let base = match mode {
        PrefixMode::None => return String::new(),
        PrefixMode::Server => server,
        PrefixMode::Short => {
            let lower = server.to_ascii_lowercase();
            let cut = if lower.ends_with("-mcp") {
                server.len() - 4
            } else if lower.ends_with("mcp") {
                server.len() - 3
            } else {
                server.len()
            };
            &server[..cut]
        }
    };
    let p: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if p.is_empty() { "mcp".into() } else { p }
}

fn slug(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.is_empty() && !s.ends_with('_') {
            s.push('_');
        }
    }
    s.trim_end_matches('_').to_string()
}

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
        if excluded(server, &name, ToolKind::Tool, &config.exclude_tools)
            || !included(server, &name, ToolKind::Tool, &config.include_tools)
        {
            continue;
        }
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
            if excluded(server, &name, ToolKind::Resource, &config.exclude_tools)
                || !included(server, &name, ToolKind::Resource, &config.include_tools)
            {
                continue;
            }
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
    fn exclusion_by_original_or_prefixed_name() {
        let ex = vec![
            "git__git_log".to_string(),
            "write-file".to_string(),
            "docs__get_readme".into(),
        ];
        assert!(excluded("git", "git_log", ToolKind::Tool, &ex));
        assert!(
            excluded("fs", "write_file", ToolKind::Tool, &ex),
            "hyphens and underscores are equal"
        );
        assert!(excluded("docs", "README", ToolKind::Resource, &ex));
        assert!(!excluded("git", "git_status", ToolKind::Tool, &ex));
        assert!(
            excluded("github-mcp", "x", ToolKind::Tool, &["github__x".into()]),
            "short prefix form"
        );
    }

    #[test]
    fn an_include_list_keeps_only_its_tools() {
        let config = |include: &[&str]| {
            crate::config::validate::server(
                "s",
                &serde_json::json!({"command": "x", "includeTools": include}),
                std::path::Path::new("mcp.json"),
                &Default::default(),
                true,
                &mut Vec::new(),
            )
            .unwrap()
        };
        let tools = [
            serde_json::json!({"name": "search"}),
            serde_json::json!({"name": "delete_all"}),
        ];
        let names = |c: &ServerConfig| -> Vec<String> {
            catalog_tools("s", c, &tools, &[])
                .into_iter()
                .map(|t| t.name)
                .collect()
        };
        assert_eq!(
            names(&config(&[])),
            ["search", "delete_all"],
            "no list: all"
        );
        assert_eq!(names(&config(&["s__search"])), ["search"]);
    }
}
