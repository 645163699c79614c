//! The `search` mode: the tools matching a query, with their parameters or
//! one line each.

use super::{Reply, known};
use crate::catalog::{Entry, ToolKind};
use crate::gateway::{ClientScope, Session};
use crate::host::{Host, HostError, SearchHit};
use crate::plugin::{GuestError, PluginError, QueryMode, SearchOptions};
use crate::present;
use serde_json::{Value, json};

/// A `search` and how to show its results.
pub(super) struct Query<'a> {
    pub(super) text: &'a str,
    pub(super) regex: bool,
    pub(super) schemas: bool,
    pub(super) server: Option<&'a str>,
    pub(super) limit: u32,
}

/// Searches the tools `client` sees; an empty query is refused.
pub(super) async fn search(gw: &Session, client: &ClientScope, q: Query<'_>) -> Reply {
    let host = &gw.shared.host;
    let Query {
        text: query,
        regex,
        schemas,
        server,
        limit,
    } = q;
    if query.trim().is_empty() {
        return Reply::error(
            "Search query cannot be empty".into(),
            json!({"mode": "search", "error": "empty_query"}),
        );
    }
    let options = SearchOptions {
        limit,
        mode: if regex {
            QueryMode::Regex
        } else {
            QueryMode::Keyword
        },
        server: server.map(str::to_string),
    };
    let hits = match find(gw, client, query, options).await {
        Ok(h) => h,
        Err(refused) => return refused,
    };
    let mut reply = if hits.is_empty() {
        no_matches(host, client, query, server)
    } else {
        found(query, &hits, schemas)
    };
    if let Some(note) = host.search_note() {
        reply.text.push_str(&format!("\n\n{note}"));
        reply.details["ranking"] = json!("words");
    }
    reply
}

/// The hits among the tools `client` sees; a bad pattern is told apart from
/// a search that failed.
async fn find(
    gw: &Session,
    client: &ClientScope,
    query: &str,
    options: SearchOptions,
) -> Result<Vec<SearchHit>, Reply> {
    match gw.shared.search_for(client, query, options).await {
        Ok(h) => Ok(h),
        Err(HostError::Policy(PluginError::Guest {
            error: GuestError::InvalidPattern(_),
            ..
        })) => Err(Reply::error(
            format!("Invalid regex: {query}"),
            json!({"mode": "search", "error": "invalid_pattern", "query": query}),
        )),
        Err(e) => Err(Reply::error(
            format!("Search failed: {e}"),
            json!({"mode": "search", "error": "search_failed", "query": query}),
        )),
    }
}

/// No hits: not an error. A `server` no client-visible server has is named
/// as such, since a misspelt server name otherwise looks like no match.
fn no_matches(host: &Host, client: &ClientScope, query: &str, server: Option<&str>) -> Reply {
    let text = match server {
        Some(s) if !known(host, client, s) => {
            let mut names = host.servers().names();
            names.retain(|n| client.allows(n));
            format!(
                "No tools matching \"{query}\" in \"{s}\": no server has that name (servers: {})",
                names.join(", ")
            )
        }
        Some(s) => format!("No tools matching \"{query}\" in \"{s}\""),
        None => format!("No tools matching \"{query}\""),
    };
    Reply::ok(
        text,
        json!({"mode": "search", "matches": [], "count": 0, "query": query}),
    )
}

/// The hits, each with its parameters when `schemas`, else one line each.
/// Skills are among them, marked as such (read, not called). When the query
/// states several needs, the hits are shown under the need they answer.
fn found(query: &str, hits: &[SearchHit], schemas: bool) -> Reply {
    let mut text = format!("Found {} matching \"{query}\":\n\n", counted(hits));
    let shown = |h: &SearchHit| match (h.is_skill(), schemas) {
        (true, _) => skill_line(h, schemas),
        (false, true) => with_parameters(&h.entry),
        (false, false) => {
            let e = &h.entry;
            format!(
                "{}\n",
                present::bullet(&e.shown_name(), &e.tool.description, 50)
            )
        }
    };
    for (need, group) in SearchHit::by_need(hits) {
        if let Some(need) = need {
            text.push_str(&format!("For \"{need}\":\n"));
        }
        for h in group {
            text.push_str(&shown(h));
        }
    }
    if !schemas && hits.iter().any(SearchHit::is_skill) {
        text.push_str("\nA skill is read, not called: mcp({skill: \"<server>/<name>\"}).\n");
    }
    let matches: Vec<Value> = hits.iter().map(matched).collect();
    Reply::ok(
        text.trim_end().to_string(),
        json!({"mode": "search", "matches": matches, "count": hits.len(), "query": query}),
    )
}

/// "3 tools", "1 tool and 1 skill".
fn counted(hits: &[SearchHit]) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let skills = hits.iter().filter(|h| h.is_skill()).count();
    match (hits.len() - skills, skills) {
        (tools, 0) => plural(tools, "tool"),
        (0, skills) => plural(skills, "skill"),
        (tools, skills) => format!("{} and {}", plural(tools, "tool"), plural(skills, "skill")),
    }
}

/// A skill found: one line, or (beside tools with their parameters) a block
/// that says how to read it.
fn skill_line(h: &SearchHit, schemas: bool) -> String {
    let e = &h.entry;
    match schemas {
        true => format!(
            "{} (skill)\n  {}\n  Read it: mcp({{skill: \"{}\"}})\n\n",
            e.name,
            e.tool.description.trim(),
            e.name
        ),
        false => format!(
            "{} (skill)\n",
            present::bullet(&e.name, &e.tool.description, 80)
        ),
    }
}

fn matched(h: &SearchHit) -> Value {
    let e = &h.entry;
    let mut hit = match h.is_skill() {
        true => json!({"server": e.tool.server, "skill": e.name, "uri": e.tool.resource_uri}),
        false => json!({"server": e.tool.server, "tool": e.name}),
    };
    if let Some(original) = e.renamed_from().filter(|_| !h.is_skill()) {
        hit["originalName"] = json!(original);
    }
    if let Some(need) = &h.need {
        hit["need"] = json!(need);
    }
    hit
}

/// A hit with its description and parameters, so that the agent can call it
/// without a `describe` first.
fn with_parameters(e: &Entry) -> String {
    let mut text = format!(
        "{}\n  {}\n",
        e.shown_name(),
        if e.tool.description.is_empty() {
            "(no description)"
        } else {
            e.tool.description.trim()
        }
    );
    if e.tool.kind == ToolKind::Resource {
        text.push_str("  No parameters (resource tool).\n");
    } else if e
        .tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
    {
        text.push_str(&format!(
            "\n  Parameters:\n{}\n",
            present::format_schema(e.tool.input_schema.object(), "    ")
        ));
    } else {
        text.push_str("  No parameters (call directly).\n");
    }
    text.push('\n');
    text
}
