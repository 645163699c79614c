//! The search benchmark's catalog (101 real servers, 1,287 tools) as a HOME
//! whose servers are never started: each is configured with a command that
//! does not exist, and its tools are known from a warm metadata cache. The
//! end-to-end tests and the gateway bench both serve it (feature `catalog`).

use mcpw_host::cache::{self, MetadataCache};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// Tools in the catalog fixture.
pub const TOOLS: usize = 1287;

/// Writes `home/.config/mcpw/mcp.json` (the catalog's servers, and `settings`)
/// and the metadata cache that knows all their tools. Returns the number of
/// servers.
pub fn write(home: &Path, catalog: &Path, settings: Value) -> usize {
    let tools = mcpw_core::catalog::load_catalog(catalog).expect("the catalog fixture loads");
    assert_eq!(tools.len(), TOOLS, "the catalog fixture changed");
    let mut by_server: BTreeMap<&str, Vec<Box<serde_json::value::RawValue>>> = BTreeMap::new();
    for t in &tools {
        let mut tool =
            json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema});
        if let Some(title) = &t.title {
            tool["title"] = json!(title);
        }
        if let Some(a) = &t.annotations {
            tool["annotations"] = a.clone();
        }
        let tool = serde_json::value::to_raw_value(&tool).expect("a tool is JSON");
        by_server.entry(&t.server).or_default().push(tool);
    }
    let definitions: BTreeMap<&str, Value> = by_server
        .keys()
        .enumerate()
        .map(|(i, name)| {
            let args = [format!("--id={i}")];
            (
                *name,
                json!({"command": "/nonexistent/never-started", "args": args}),
            )
        })
        .collect();
    let dir = home.join(".config/mcpw");
    std::fs::create_dir_all(&dir).expect("create the config dir");
    let config = json!({"mcpServers": definitions, "settings": settings});
    std::fs::write(dir.join("mcp.json"), config.to_string()).expect("write the config");
    let metadata = MetadataCache::new(home.join(".cache/mcpw/metadata.json"));
    let entries = definitions
        .iter()
        .map(|(name, definition)| {
            let entry = cache::Entry {
                config_hash: cache::config_hash(definition),
                tools: by_server[name].clone(),
                resources: vec![],
                resource_templates: vec![],
                prompts: vec![],
                skills: vec![],
                directory_read: false,
                cached_at: mcpw_upstream::clock::now_ms(),
                protocol_version: None,
            };
            (name.to_string(), Some(entry))
        })
        .collect();
    metadata.update(entries).expect("write the metadata cache");
    by_server.len()
}
