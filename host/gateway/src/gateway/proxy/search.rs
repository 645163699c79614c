//! The `search` mode: the tools matching a query, with their parameters or
//! one line each.

use super::{Reply, known};
use crate::catalog::{Entry, ToolKind};
use crate::gateway::{ClientScope, Session};
use crate::host::{EntryRef, Host, HostError};
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
) -> Result<Vec<(EntryRef, f32)>, Reply> {
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
fn found(query: &str, hits: &[(EntryRef, f32)], schemas: bool) -> Reply {
    let n = hits.len();
    let mut text = format!(
        "Found {n} tool{} matching \"{query}\":\n\n",
        if n == 1 { "" } else { "s" }
    );
    for (e, _) in hits {
        if schemas {
            text.push_str(&with_parameters(e));
        } else {
            text.push_str(&present::bullet(&e.shown_name(), &e.tool.description, 50));
            text.push('\n');
        }
    }
    let matches: Vec<Value> = hits
        .iter()
        .map(|(e, _)| {
            let mut hit = json!({"server": e.tool.server, "tool": e.name});
            if let Some(original) = e.renamed_from() {
                hit["originalName"] = json!(original);
            }
            hit
        })
        .collect();
    Reply::ok(
        text.trim_end().to_string(),
        json!({"mode": "search", "matches": matches, "count": n, "query": query}),
    )
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
