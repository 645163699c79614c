//! `ToolSearch`: the direct tools are listed up front; everything else is found
//! by search and loaded on demand, announced with `notifications/tools/list_changed`.

use super::{Gateway, result};
use crate::catalog::Entry;
use crate::config::Config;
use crate::host::{EntryRef, Snapshot};
use crate::plugin::SearchOptions;
use crate::present::{self, Content};
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResult;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

pub const TOOL_NAME: &str = "ToolSearch";
/// Results loaded by a keyword query.
const DEFAULT_RESULTS: u32 = 5;

/// Rough token count of a text (4 characters a token).
pub fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// The ToolSearch definition: a summary of the servers of `entries` (the
/// tools the client sees), and the deferred tools one per line while they
/// fit in `budget` tokens.
pub fn definition<'e>(
    config: &Config,
    entries: impl Iterator<Item = &'e Entry>,
    shown: &BTreeSet<&str>,
    budget: usize,
) -> Value {
    let deferred: Vec<&Entry> = entries
        .filter(|e| !shown.contains(e.name.as_str()))
        .collect();
    let mut per_server: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &deferred {
        *per_server.entry(e.tool.server.as_str()).or_default() += 1;
    }
    let order: Vec<&str> = config
        .servers
        .iter()
        .map(|s| s.name.as_str())
        .filter(|s| per_server.contains_key(s))
        .collect();
    let summary: Vec<String> = order
        .iter()
        .map(|s| {
            let keywords = config
                .server(s)
                .map(|c| c.config.search_keywords.join(", "))
                .unwrap_or_default();
            if keywords.is_empty() {
                format!("{s} ({})", per_server[s])
            } else {
                format!("{s} ({}; {keywords})", per_server[s])
            }
        })
        .collect();
    let mut text = format!(
        "Search for tools and load them. {} more tools are available from: {}. \
         Query with keywords (\"create github issue\") to load the best {DEFAULT_RESULTS} matches, or \"select:name1,name2\" \
         to load exact tools. Loaded tools join your tool list.",
        deferred.len(),
        if summary.is_empty() {
            "no server".to_string()
        } else {
            summary.join(", ")
        }
    );
    let mut listed = String::new();
    let mut used = tokens(&text);
    let mut all_fit = true;
    for e in &deferred {
        let line = format!(
            "\n- {}: {}",
            e.shown_name(),
            present::truncate_at_word(&e.tool.description, 60)
        );
        if used + tokens(&line) > budget {
            all_fit = false;
            break;
        }
        used += tokens(&line);
        listed.push_str(&line);
    }
    if !listed.is_empty() {
        text.push_str(if all_fit {
            "\n\nAvailable tools:"
        } else {
            "\n\nSome available tools:"
        });
        text.push_str(&listed);
    }
    json!({
        "name": TOOL_NAME,
        "description": text,
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Keywords, or select:name1,name2 for exact tool names"}},
            "required": ["query"]
        }
    })
}

pub async fn call(
    gw: &Gateway,
    params: Map<String, Value>,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let host = &gw.shared.host;
    let client = gw.client(&ctx.extensions);
    gw.shared.ready().await;
    let query = params
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();
    if query.is_empty() {
        return result(
            &[Content::text(
                "Error: query is required (keywords, or select:name1,name2)",
            )],
            None,
            true,
        );
    }
    let select = selected(&query);
    let options = SearchOptions {
        limit: result_limit(select),
        ..Default::default()
    };
    let hits = match gw.shared.search_for(&client, &query, options).await {
        Ok(h) => h,
        Err(e) => return result(&[Content::text(format!("Error: {e}"))], None, true),
    };
    if hits.is_empty() {
        let text = format!(
            "No tools match \"{query}\". Try other words, or select:name with an exact name."
        );
        return result(
            &[Content::text(text)],
            Some(json!({"query": query, "loaded": []})),
            false,
        );
    }
    let names: Vec<String> = hits.iter().map(|(e, _)| e.name.clone()).collect();
    let snapshot = match host.snapshot().await {
        Ok(s) => s,
        Err(e) => return result(&[Content::text(format!("Error: {e}"))], None, true),
    };
    activate(gw, &snapshot, &names, ctx).await;
    let mut text = loaded_text(&hits, &names, select);
    if let Some(note) = host.search_note() {
        text = format!("{}\n\n{note}", text.trim_end());
    }
    result(
        &[Content::text(text.trim_end())],
        Some(json!({"query": query, "loaded": names})),
        false,
    )
}

/// The names after `select:` (the prefix in any case), when the query is an
/// exact selection rather than keywords.
fn selected(query: &str) -> Option<&str> {
    query
        .get(..7)
        .is_some_and(|h| h.eq_ignore_ascii_case("select:"))
        .then(|| &query[7..])
}

/// How many tools to load: each one selected (at least one), or the best few
/// matches of keywords.
fn result_limit(select: Option<&str>) -> u32 {
    match select {
        Some(names) => names
            .split(',')
            .filter(|n| !n.trim().is_empty())
            .count()
            .max(1) as u32,
        None => DEFAULT_RESULTS,
    }
}

/// Adds the deferred tools among `names` to the session's tools, and tells
/// the client its tool list changed when any is new to it.
async fn activate(
    gw: &Gateway,
    snapshot: &Snapshot,
    names: &[String],
    ctx: &RequestContext<RoleServer>,
) {
    let newly: Vec<String> = {
        let mut active = gw.activated.lock().unwrap_or_else(|p| p.into_inner());
        names
            .iter()
            .filter(|n| !snapshot.is_direct_name(n) && active.insert((*n).clone()))
            .cloned()
            .collect()
    };
    if !newly.is_empty() {
        // Recorded before the answer: the client's next request may reach
        // another replica.
        gw.link.share_tools(&newly).await;
        let _ = ctx.peer.notify_tool_list_changed().await;
    }
}

/// The answer: the tools loaded, and the selected names that matched none.
fn loaded_text(hits: &[(EntryRef, f32)], names: &[String], select: Option<&str>) -> String {
    let mut text = format!(
        "Loaded {} tool{}; call {} directly:\n",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        if names.len() == 1 { "it" } else { "them" }
    );
    for (e, _) in hits {
        text.push_str(&format!(
            "- {} - {}\n",
            e.shown_name(),
            present::truncate_at_word(&e.tool.description, 80)
        ));
    }
    if let Some(selection) = select {
        let missing: Vec<&str> = selection
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty() && !names.iter().any(|m| m == n))
            .collect();
        if !missing.is_empty() {
            text.push_str(&format!("Not found: {}\n", missing.join(", ")));
        }
    }
    text
}
