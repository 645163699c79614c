//! `ToolSearch`: the direct tools are listed up front; everything else is found
//! by search and loaded on demand, announced with `notifications/tools/list_changed`.

use super::Session;
use super::hints::Hints;
use super::wire::result;
use crate::catalog::Entry;
use crate::config::Config;
use crate::host::{SearchHit, Snapshot};
use crate::plugin::SearchOptions;
use crate::present::{self, Content};
use crate::results::CHARS_PER_TOKEN;
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResult;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

mod outline;
pub(super) use outline::Said;

pub(crate) const TOOL_NAME: &str = "ToolSearch";
/// Results loaded by a keyword query.
const DEFAULT_RESULTS: u32 = 5;

/// The ToolSearch definition: how many tools of how many servers it can load
/// (those of `visible`, the tools the client sees, not `shown` already), and
/// an outline of them within `budget` tokens in all. What is said of each
/// server is made from all of `visible` and kept in `said`: it is the same
/// for every session of the client until the catalog changes.
pub(crate) fn definition(
    config: &Config,
    visible: &[&Entry],
    shown: &BTreeSet<&str>,
    budget: usize,
    said: &OnceLock<Said>,
) -> Value {
    let deferred: Vec<&Entry> = visible
        .iter()
        .copied()
        .filter(|e| !shown.contains(e.name.as_str()))
        .collect();
    let groups = groups(config, &deferred);
    let intro = intro(deferred.len(), groups.len());
    let room = (budget * CHARS_PER_TOKEN).saturating_sub(intro.len());
    let said = || said.get_or_init(|| outline::said_of(&self::groups(config, visible)));
    let (_, outline) = outline::outline(&groups, room, said);
    json!({
        "name": TOOL_NAME,
        "description": intro + &outline,
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Keywords, or select:name1,name2 for exact tool names"}},
            "required": ["query"]
        },
        "_meta": Hints::always().add_to(None),
    })
}

/// What the description opens with: how many tools there are to load, and how.
fn intro(tools: usize, servers: usize) -> String {
    if tools == 0 {
        return "Search for tools and load them: every tool is loaded already.".into();
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    format!(
        "Search for tools and load them ({tools} more tool{} of {servers} server{}). Keywords \
         (\"create github issue\") load the best {DEFAULT_RESULTS} matches, \"select:name1,name2\" exact tools; \
         loaded tools join your tool list.",
        plural(tools),
        plural(servers),
    )
}

/// `tools` by server, in the config's order of servers.
fn groups<'a>(config: &'a Config, tools: &[&'a Entry]) -> Vec<outline::Group<'a>> {
    let mut by_server: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in tools {
        by_server.entry(e.tool.server.as_str()).or_default().push(e);
    }
    let mut groups = Vec::with_capacity(by_server.len());
    for s in &config.servers {
        if let Some(tools) = by_server.remove(s.name.as_str()) {
            let keywords = s.config.search_keywords.as_slice();
            groups.push(outline::Group {
                server: s.name.as_str(),
                keywords,
                tools,
            });
        }
    }
    // Servers the config no longer names, after the others.
    groups.extend(by_server.into_iter().map(|(server, tools)| outline::Group {
        server,
        keywords: &[],
        tools,
    }));
    groups
}

pub(crate) async fn call(
    gw: &Session,
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
    // A skill is not a tool: it is never loaded, but said with its URI.
    let (skills, tools): (Vec<SearchHit>, Vec<SearchHit>) =
        hits.into_iter().partition(SearchHit::is_skill);
    let names: Vec<String> = tools.iter().map(|h| h.entry.name.clone()).collect();
    let snapshot = match host.snapshot().await {
        Ok(s) => s,
        Err(e) => return result(&[Content::text(format!("Error: {e}"))], None, true),
    };
    activate(gw, &snapshot, &names, ctx).await;
    let mut text = String::new();
    if !names.is_empty() || skills.is_empty() {
        text = loaded_text(&tools, &names, select, &skills);
    }
    text.push_str(&skills_text(gw, &client, &skills, select, ctx).await);
    if let Some(note) = host.search_note() {
        text = format!("{}\n\n{note}", text.trim_end());
    }
    let found: Vec<&str> = skills.iter().map(|h| h.entry.name.as_str()).collect();
    let mut structured = json!({"query": query, "loaded": names, "skills": found});
    let needs: serde_json::Map<String, Value> = tools
        .iter()
        .filter_map(|h| Some((h.entry.name.clone(), json!(h.need.as_deref()?))))
        .collect();
    if !needs.is_empty() {
        // Which need of the task each loaded tool answers.
        structured["needs"] = Value::Object(needs);
    }
    result(&[Content::text(text.trim_end())], Some(structured), false)
}

/// The skills found: each with its `SKILL.md` URI (a resource to read), and
/// when selected by name (`select:<server>/<skill>`), its `SKILL.md` itself,
/// read through the gateway (checked against its digest).
async fn skills_text(
    gw: &Session,
    client: &super::ClientScope,
    skills: &[SearchHit],
    select: Option<&str>,
    ctx: &RequestContext<RoleServer>,
) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "Skills (instructions to read, not tools): read one with select:<server>/<name>\n",
    );
    for h in skills {
        let uri = h.entry.tool.resource_uri.as_deref().unwrap_or_default();
        let d = present::truncate_at_word(&h.entry.tool.description, 80);
        text.push_str(&format!("- {} - {d} ({uri})\n", h.entry.name));
    }
    let Some(_) = select else { return text };
    for h in skills {
        let uri = h.entry.tool.resource_uri.clone().unwrap_or_default();
        let body = match gw.resource_read(client, &uri, ctx).await {
            Ok(read) => super::proxy::skill::text_of(&read.contents),
            Err(e) => format!("(cannot be read: {})", e.message),
        };
        text.push_str(&format!("\n{} ({uri}):\n{body}\n", h.entry.name));
    }
    text
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
    gw: &Session,
    snapshot: &Snapshot,
    names: &[String],
    ctx: &RequestContext<RoleServer>,
) {
    let newly: Vec<String> = {
        let mut active = gw.state.activated.lock().unwrap_or_else(|p| p.into_inner());
        names
            .iter()
            .filter(|n| !snapshot.is_direct_name(n) && active.insert((*n).clone()))
            .cloned()
            .collect()
    };
    if !newly.is_empty() {
        // Recorded before the answer: the client's next request may reach
        // another replica.
        gw.state.link.share_tools(&newly).await;
        let _ = ctx.peer.notify_tool_list_changed().await;
    }
}

/// The answer: the tools loaded, and the selected names that matched none
/// (neither a tool nor one of `skills`).
fn loaded_text(
    hits: &[SearchHit],
    names: &[String],
    select: Option<&str>,
    skills: &[SearchHit],
) -> String {
    let mut text = format!(
        "Loaded {} tool{}; call {} directly:\n",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        if names.len() == 1 { "it" } else { "them" }
    );
    // A task of several needs: each tool under the need it answers.
    for (need, group) in SearchHit::by_need(hits) {
        if let Some(need) = need {
            text.push_str(&format!("For \"{need}\":\n"));
        }
        for h in group {
            let e = &h.entry;
            text.push_str(&format!(
                "- {} - {}\n",
                e.shown_name(),
                present::truncate_at_word(&e.tool.description, 80)
            ));
        }
    }
    if let Some(selection) = select {
        let missing: Vec<&str> = selection
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty() && !names.iter().any(|m| m == n))
            .filter(|n| !skills.iter().any(|h| h.entry.name == *n))
            .collect();
        if !missing.is_empty() {
            text.push_str(&format!("Not found: {}\n", missing.join(", ")));
        }
    }
    text
}
