//! A naming guest with a scheme unlike the default one: `<tool>_on_<server>`
//! (`read_<resource>_on_<server>` for resources, the bare tool with prefix
//! `none`). Whatever the host decides from names (which server a name belongs
//! to, prompt names, `excludeTools` / `includeTools` / `directTools`) must
//! follow it.

#![cfg(target_arch = "wasm32")]

wit_bindgen::generate!({ world: "namer", path: "../../../wit/since_v0.1.0" });

use exports::mcpw::plugin::naming::{Guest, NameOutcome, NamingOptions};
use mcpw::plugin::types::{PluginError, PrefixMode, Tool, ToolKind};
use std::collections::HashMap;

fn ident(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn name_of(tool: &Tool, prefix: PrefixMode) -> String {
    let part = match tool.kind {
        ToolKind::Tool => ident(&tool.name),
        ToolKind::Resource => format!("read_{}", ident(&tool.name)),
    };
    let mut name = match prefix {
        PrefixMode::None => part,
        PrefixMode::Server | PrefixMode::Short => format!("{part}_on_{}", ident(&tool.server)),
    };
    name.truncate(64);
    name
}

struct Namer;

impl Guest for Namer {
    fn names(tools: Vec<Tool>, options: NamingOptions) -> Result<Vec<NameOutcome>, PluginError> {
        let mut taken: HashMap<String, u32> = HashMap::new();
        Ok(tools
            .iter()
            .enumerate()
            .map(|(i, tool)| {
                let name = name_of(tool, options.prefix);
                if options.reserved.contains(&name) {
                    NameOutcome::Reserved(name)
                } else if let Some(&first) = taken.get(&name) {
                    NameOutcome::DuplicateOf(first)
                } else {
                    taken.insert(name.clone(), i as u32);
                    NameOutcome::Named(name)
                }
            })
            .collect())
    }
}

export!(Namer);
