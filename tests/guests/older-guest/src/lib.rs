//! A ranking and script guest of the frozen contract 0.1.1 (bound from
//! `wit/since_v0.1.1/`, not through `mcpw-guest`). A host of a later
//! contract must keep loading it, and give it only what 0.1.1 can express:
//! no skills.
//! - Ranking: an entry scores one point per query word in its name or
//!   description.
//! - Script: a script is a search query; its value is the JSON array of the
//!   names the toolbox's search answers (at most 10).

#![cfg(target_arch = "wasm32")]

wit_bindgen::generate!({
    inline: "package test:older; world older {
        include mcpw:plugin/ranker@0.1.1;
        include mcpw:plugin/scripter@0.1.1;
    }",
    path: "../../../wit/since_v0.1.1",
    world: "test:older/older",
    generate_all,
});

use exports::mcpw::plugin::ranking::{
    Guest, GuestIndex, Hit, Index as IndexHandle, IndexOptions, SearchOptions,
};
use exports::mcpw::plugin::script::{self, Outcome, SelectError};
use mcpw::plugin::log::{Level, log};
use mcpw::plugin::toolbox::{self, ToolInfo};
use mcpw::plugin::types::{Entry, PluginError};

struct Ranker;

struct Index {
    /// Each entry's server and lowercased words.
    entries: Vec<(String, String)>,
}

impl Guest for Ranker {
    type Index = Index;
}

impl GuestIndex for Index {
    fn build(entries: Vec<Entry>, _: IndexOptions) -> Result<IndexHandle, PluginError> {
        log(
            Level::Info,
            &format!("older ranker: {} entries", entries.len()),
        );
        let entries = entries
            .into_iter()
            .map(|e| {
                let text = format!("{} {}", e.name, e.tool.description).to_lowercase();
                (e.tool.server, text)
            })
            .collect();
        Ok(IndexHandle::new(Index { entries }))
    }

    fn search(&self, query: String, options: SearchOptions) -> Result<Vec<Hit>, PluginError> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        let mut hits: Vec<Hit> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, (server, _))| options.server.as_ref().is_none_or(|s| s == server))
            .map(|(i, (_, text))| Hit {
                index: i as u32,
                score: words.iter().filter(|w| text.contains(w.as_str())).count() as f32,
            })
            .filter(|h| h.score > 0.0)
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        hits.truncate(options.limit as usize);
        Ok(hits)
    }
}

impl script::Guest for Ranker {
    fn run(code: String) -> Outcome {
        let value = toolbox::search(&code, 10)
            .map(|hits| {
                let names: Vec<String> = hits.iter().map(|t| format!("{:?}", t.name)).collect();
                format!("[{}]", names.join(","))
            })
            .map_err(|e| script::ScriptError::Thrown(format!("{e:?}")));
        Outcome {
            value,
            logs: Vec::new(),
        }
    }

    fn warm() {}

    fn usage() -> String {
        "A script is a search query; its value is the names found.".into()
    }

    fn declare(tools: Vec<ToolInfo>) -> Vec<String> {
        tools.into_iter().map(|t| t.name).collect()
    }

    fn select(_: String, _: String) -> Result<String, SelectError> {
        Err(SelectError::Unsupported("no jq here".into()))
    }
}

export!(Ranker);
