//! The registry's servers ranked for a query by the policy's ranking guest
//! (by meaning too, when the policy's host embeds text): each server a
//! "tool" of a made-up `registry` server, its name, title and description
//! what is matched.

use crate::catalog::{Entry, Tool};
use crate::plugin::{IndexOptions, NamingOptions, Policy, PrefixMode, QueryMode, SearchOptions};
use crate::registry::Listed;
use std::sync::Arc;

/// The registry's servers as catalog tools, in `listed`'s order.
pub fn as_tools(listed: &[&Listed]) -> Vec<Tool> {
    listed
        .iter()
        .map(|l| Tool::new("registry", l.name(), l.text()))
        .collect()
}

/// `listed` ranked for `query` by `policy`, best first: (index, score).
/// Blocking (guest calls).
pub fn rank(
    policy: &Policy,
    listed: &[&Listed],
    query: &str,
    limit: u32,
) -> Result<Vec<(usize, f32)>, crate::plugin::PluginError> {
    let tools = as_tools(listed);
    let naming = NamingOptions {
        prefix: PrefixMode::Server,
        reserved: Vec::new(),
    };
    let entries: Arc<[Entry]> = policy.entries(&tools, &naming)?.into();
    let index = policy.index(entries, IndexOptions::default())?;
    let options = SearchOptions {
        limit,
        mode: QueryMode::Keyword,
        server: None,
    };
    let hits = index.search(query, &options)?;
    Ok(hits.iter().map(|h| (h.index, h.score)).collect())
}
