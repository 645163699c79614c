//! The `mcp` proxy tool: one small tool in front of every server. Modes by
//! priority: tool (call) > connect > describe > search > server (list) > status.
//! Texts, `details` (sent as `structuredContent`) and error kinds follow the
//! documented proxy tool. Every mode shows and reaches only the servers the
//! client sees: another server is "not found", like one that does not exist.

use super::{ClientScope, Gateway, result};
use crate::catalog::{ConnectionState, Entry, ToolKind};
use crate::host::{Host, HostError};
use crate::lifecycle::LifecycleError;
use crate::plugin::{GuestError, PluginError, QueryMode, SearchOptions};
use crate::present::{self, Content};
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResult;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

pub const TOOL_NAME: &str = "mcp";
/// Search results shown unless `limit` says otherwise.
const DEFAULT_SEARCH_LIMIT: u32 = 10;

/// The `mcp` tool's definition: about 200 tokens, however many tools exist.
pub fn tool_definition(host: &Host, client: &ClientScope) -> Value {
    let servers = host
        .config()
        .servers
        .iter()
        .filter(|s| s.config.enabled && client.allows(&s.name))
        .count();
    tool_definition_for(servers)
}

fn tool_definition_for(servers: usize) -> Value {
    json!({
        "name": TOOL_NAME,
        "description": format!(
            "Gateway to {servers} MCP servers. First given wins: tool (call, with args) > connect > describe > \
             search (words OR'd) > server (list its tools) > nothing (status). \
             E.g. mcp({{search: \"create issue\"}}), mcp({{tool: \"github__create_issue\", args: {{...}}}})"
        ),
        "inputSchema": &*input_schema(),
    })
}

// The `mcp` tool's arguments. Its input schema is derived from this type, so
// the keys it takes and the keys it reads cannot drift apart. A value of the
// wrong type counts as absent, as it always has: agents send `"5"` for 5.
// (Plain comments: a doc comment would become the schema's description.)
#[derive(Debug, Default, serde::Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
struct Args {
    /// Tool to call
    #[serde(default, deserialize_with = "lenient")]
    tool: Option<String>,
    /// Call arguments (object or JSON string)
    #[serde(default)]
    args: Option<Value>,
    /// Server to reconnect
    #[serde(default, deserialize_with = "lenient")]
    connect: Option<String>,
    /// Tool to show parameters of
    #[serde(default, deserialize_with = "lenient")]
    describe: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    search: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    regex: Option<bool>,
    /// Default true
    #[serde(default, deserialize_with = "lenient")]
    include_schemas: Option<bool>,
    /// Limit to a server
    #[serde(default, deserialize_with = "lenient")]
    server: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<u64>,
}

/// A value of type `T`, or `None` for one of another type.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = <Value as serde::Deserialize>::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

/// The schema of [`Args`] as an agent reads it: without the generator's
/// title and dialect, and each key's type plain (every key is optional; a
/// `null` or a default says nothing more).
fn input_schema() -> std::sync::Arc<Map<String, Value>> {
    static SCHEMA: std::sync::LazyLock<std::sync::Arc<Map<String, Value>>> =
        std::sync::LazyLock::new(|| {
            let mut schema = (*rmcp::handler::server::common::schema_for_type::<Args>()).clone();
            for key in ["$schema", "title"] {
                schema.remove(key);
            }
            let properties = schema.get_mut("properties").and_then(Value::as_object_mut);
            for property in properties.into_iter().flat_map(|p| p.values_mut()) {
                let Some(p) = property.as_object_mut() else {
                    continue;
                };
                p.remove("default");
                p.remove("format");
                if let Some(Value::Array(types)) = p.get("type") {
                    let plain: Vec<Value> =
                        types.iter().filter(|t| *t != "null").cloned().collect();
                    if let [one] = plain.as_slice() {
                        p.insert("type".into(), one.clone());
                    }
                }
            }
            std::sync::Arc::new(schema)
        });
    SCHEMA.clone()
}

struct Reply {
    text: String,
    details: Value,
    is_error: bool,
    content: Vec<Content>,
}

impl Reply {
    fn ok(text: String, details: Value) -> Reply {
        Reply {
            text,
            details,
            is_error: false,
            content: Vec::new(),
        }
    }

    fn error(text: String, details: Value) -> Reply {
        Reply {
            text,
            details,
            is_error: true,
            content: Vec::new(),
        }
    }
}

pub async fn call(
    gw: &Gateway,
    params: Map<String, Value>,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    if let Some(refused) = unknown_keys(&params) {
        return result(&[Content::text(refused.text)], Some(refused.details), true);
    }
    let keys: Vec<String> = params.keys().cloned().collect();
    let args: Args = serde_json::from_value(Value::Object(params)).unwrap_or_default();
    let host = &gw.shared.host;
    let client = gw.client(&ctx.extensions);
    let client = &client;
    let server = args.server.as_deref();
    // Search, describe and list need every server's tools; status, connect
    // and calls do not (a call finds its server by name, connecting only it).
    let given = |k: &str| keys.iter().any(|key| key == k);
    if ["describe", "search", "server"].iter().any(|k| given(k))
        && !["tool", "connect"].iter().any(|k| given(k))
    {
        gw.shared.ready().await;
    }
    let reply = if let Some(tool) = &args.tool {
        return call_tool(gw, client, tool, server, args.args.as_ref(), ctx).await;
    } else if let Some(s) = &args.connect {
        connect(host, client, s).await
    } else if let Some(t) = &args.describe {
        describe(gw, client, t).await
    } else if let Some(q) = &args.search {
        let query = Query {
            text: q,
            regex: args.regex.unwrap_or(false),
            schemas: args.include_schemas.unwrap_or(true),
            server,
            limit: args
                .limit
                .map_or(DEFAULT_SEARCH_LIMIT, |l| l.clamp(1, 100) as u32),
        };
        search(gw, client, query).await
    } else if let Some(s) = server {
        list(host, client, s).await
    } else {
        // Tool counts are of exposed tools: those of the current snapshot.
        let _ = host.snapshot().await;
        status(host, client)
    };
    let mut content = vec![Content::text(reply.text)];
    content.extend(reply.content);
    result(&content, Some(reply.details), reply.is_error)
}

/// The keys the tool takes: those of its input schema.
fn known_keys() -> &'static [String] {
    static KEYS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        input_schema()
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    });
    &KEYS
}

/// A tool error naming the keys it does not take, and those it does: a key
/// it does not know (one a newer mcpw takes, say) must not be mistaken for
/// no key at all, which shows the status.
fn unknown_keys(params: &Map<String, Value>) -> Option<Reply> {
    let known = known_keys();
    let unknown: Vec<&String> = params
        .keys()
        .filter(|k| !known.iter().any(|n| n == *k))
        .collect();
    if unknown.is_empty() {
        return None;
    }
    let text = format!(
        "mcp does not take {}. It takes: {}.",
        quoted(unknown.iter().copied()),
        quoted(known)
    );
    Some(Reply::error(
        text,
        json!({"mode": "error", "error": "unknown_keys", "unknown": unknown, "takes": known}),
    ))
}

/// `"a", "b"`.
fn quoted<'k>(keys: impl IntoIterator<Item = &'k String>) -> String {
    keys.into_iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn status(host: &Host, client: &ClientScope) -> Reply {
    let mut servers = host.status();
    servers.retain(|s| client.allows(&s.name));
    let mut text = String::new();
    let mut list = Vec::new();
    for s in &servers {
        let failed = host.manager().failure(&s.name).map(|(ago, _)| ago);
        let (line, status) = match s.state {
            ConnectionState::Connected => (
                format!("✓ {} ({} tools)", s.name, s.tool_count),
                "connected",
            ),
            ConnectionState::NeedsAuth => {
                let oauth = host
                    .manager()
                    .server(&s.name)
                    .is_some_and(|c| c.config.oauth_applies());
                let line = if oauth {
                    format!(
                        "⚠ {} (needs auth: run `mcpw auth login {}`)",
                        s.name, s.name
                    )
                } else {
                    format!("⚠ {} (needs auth: set its credentials)", s.name)
                };
                (line, "needs-auth")
            }
            ConnectionState::Cached => (
                format!("○ {} ({} tools, cached)", s.name, s.tool_count),
                "cached",
            ),
            ConnectionState::Failed => (
                format!("✗ {} (failed {}s ago)", s.name, failed.unwrap_or(0)),
                "failed",
            ),
            ConnectionState::NotConnected => {
                (format!("○ {} (not connected)", s.name), "not connected")
            }
            ConnectionState::Disabled => (format!("- {} (disabled)", s.name), "disabled"),
        };
        text.push_str(&line);
        text.push('\n');
        let mut entry = json!({"name": s.name, "status": status, "toolCount": s.tool_count});
        if let Some(ago) = failed {
            entry["failedAgo"] = json!(ago);
        }
        list.push(entry);
    }
    let connected = servers
        .iter()
        .filter(|s| s.state == ConnectionState::Connected)
        .count();
    let total: u32 = servers.iter().map(|s| s.tool_count).sum();
    let mut out = format!(
        "MCP: {connected}/{} servers, {total} tools\n\n{text}",
        servers.len()
    );
    if !servers.is_empty() {
        out.push_str(
            "\nmcp({ server: \"name\" }) to list tools, mcp({ search: \"...\" }) to search",
        );
    } else if client.is_limited() {
        out.push_str("No servers are available to this client.");
    } else {
        // An empty gateway is mostly a config in an unexpected place.
        out.push_str("No servers configured. mcpw looked in:");
        for source in &host.config().sources {
            let found = if source.found { "" } else { " (not found)" };
            out.push_str(&format!("\n  {}{found}", source.path.display()));
        }
        out.push_str("\nGive the config to `mcpw serve --config /absolute/path`.");
    }
    Reply::ok(
        out.trim().to_string(),
        json!({"mode": "status", "servers": list, "totalTools": total, "connectedCount": connected}),
    )
}

fn not_found(mode: &str, server: &str) -> Reply {
    Reply::error(
        format!("Server \"{server}\" not found. Use mcp({{}}) to see available servers."),
        json!({"mode": mode, "server": server, "error": "not_found"}),
    )
}

/// Is `server` one this client can name: configured, and seen by it?
fn known(host: &Host, client: &ClientScope, server: &str) -> bool {
    client.allows(server) && host.manager().server(server).is_some()
}

async fn list(host: &Host, client: &ClientScope, server: &str) -> Reply {
    if !known(host, client, server) {
        let mut r = not_found("list", server);
        r.details["tools"] = json!([]);
        r.details["count"] = json!(0);
        return r;
    }
    let snapshot = match host.snapshot().await {
        Ok(s) => s,
        Err(e) => {
            return Reply::error(
                format!("Error: {e}"),
                json!({"mode": "list", "server": server, "error": "catalog_failed"}),
            );
        }
    };
    let tools: Vec<&Entry> = snapshot.server_entries(server).collect();
    let connected = host
        .manager()
        .server_status(server)
        .is_ok_and(|s| s.state == ConnectionState::Connected);
    if tools.is_empty() {
        if connected {
            return Reply::ok(
                format!("Server \"{server}\" has no tools."),
                json!({"mode": "list", "server": server, "tools": [], "count": 0}),
            );
        }
        if host.manager().has_tools(server) {
            return Reply::ok(
                format!("Server \"{server}\" has no cached tools (not connected)."),
                json!({"mode": "list", "server": server, "tools": [], "count": 0, "cached": true}),
            );
        }
        return Reply::error(
            format!(
                "Server \"{server}\" is configured but not connected. Use mcp({{ connect: \"{server}\" }}) to connect."
            ),
            json!({"mode": "list", "server": server, "tools": [], "count": 0, "error": "not_connected"}),
        );
    }
    let note = if connected {
        ""
    } else {
        ", not connected, cached"
    };
    let mut text = format!("{server} ({} tools{note}):\n\n", tools.len());
    for e in &tools {
        text.push_str(&present::bullet(&e.shown_name(), &e.tool.description, 50));
        text.push('\n');
    }
    let names: Vec<&str> = tools.iter().map(|e| e.name.as_str()).collect();
    let mut details =
        json!({"mode": "list", "server": server, "tools": names, "count": names.len()});
    if !connected {
        details["cached"] = json!(true);
    }
    Reply::ok(text.trim_end().to_string(), details)
}

async fn connect(host: &Host, client: &ClientScope, server: &str) -> Reply {
    if !known(host, client, server) {
        return not_found("connect", server);
    }
    match host.connect(server).await {
        Ok(_) => {
            let mut r = list(host, client, server).await;
            r.details["mode"] = json!("connect");
            r
        }
        Err(e) => {
            let message = match e {
                HostError::Lifecycle(LifecycleError::Connect { error, .. }) => error.to_string(),
                other => other.to_string(),
            };
            Reply::error(
                format!("Failed to connect to \"{server}\": {message}"),
                json!({"mode": "connect", "server": server, "error": "connect_failed", "message": message}),
            )
        }
    }
}

fn metadata(e: &Entry) -> Value {
    let mut m = json!({"name": e.name, "originalName": e.tool.name, "description": e.tool.description, "inputSchema": e.tool.input_schema});
    if let Some(uri) = &e.tool.resource_uri {
        m["resourceUri"] = json!(uri);
    }
    m
}

async fn describe(gw: &Gateway, client: &ClientScope, name: &str) -> Reply {
    let Ok(e) = gw.shared.resolve_for(client, name).await else {
        return Reply::error(
            format!("Tool \"{name}\" not found. Use mcp({{ search: \"...\" }}) to search."),
            json!({"mode": "describe", "error": "tool_not_found", "tool": name}),
        );
    };
    let text = present::describe(&e);
    Reply::ok(
        text.trim().to_string(),
        json!({"mode": "describe", "tool": metadata(&e), "server": e.tool.server}),
    )
}

/// A `search` and how to show its results.
struct Query<'a> {
    text: &'a str,
    regex: bool,
    schemas: bool,
    server: Option<&'a str>,
    limit: u32,
}

async fn search(gw: &Gateway, client: &ClientScope, q: Query<'_>) -> Reply {
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
    let hits = match gw.shared.search_for(client, query, options).await {
        Ok(h) => h,
        Err(HostError::Policy(PluginError::Guest {
            error: GuestError::InvalidPattern(_),
            ..
        })) => {
            return Reply::error(
                format!("Invalid regex: {query}"),
                json!({"mode": "search", "error": "invalid_pattern", "query": query}),
            );
        }
        Err(e) => {
            return Reply::error(
                format!("Search failed: {e}"),
                json!({"mode": "search", "error": "search_failed", "query": query}),
            );
        }
    };
    if hits.is_empty() {
        let text = match server {
            Some(s) if !known(host, client, s) => {
                let mut names = host.manager().server_names();
                names.retain(|n| client.allows(n));
                format!(
                    "No tools matching \"{query}\" in \"{s}\": no server has that name (servers: {})",
                    names.join(", ")
                )
            }
            Some(s) => format!("No tools matching \"{query}\" in \"{s}\""),
            None => format!("No tools matching \"{query}\""),
        };
        return Reply::ok(
            text,
            json!({"mode": "search", "matches": [], "count": 0, "query": query}),
        );
    }
    let n = hits.len();
    let mut text = format!(
        "Found {n} tool{} matching \"{query}\":\n\n",
        if n == 1 { "" } else { "s" }
    );
    for (e, _) in &hits {
        if schemas {
            text.push_str(&format!(
                "{}\n  {}\n",
                e.shown_name(),
                if e.tool.description.is_empty() {
                    "(no description)"
                } else {
                    e.tool.description.trim()
                }
            ));
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

/// `args` as an object: an object, or a JSON string of one.
fn parse_args(args: Option<&Value>) -> Result<Option<Map<String, Value>>, String> {
    match args {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            Ok(other) => Err(format!(
                "args must be a JSON object, got {}",
                crate::config::validate::kind(&other)
            )),
            Err(e) => Err(format!("args is not valid JSON: {e}")),
        },
        Some(other) => Err(format!(
            "args must be a JSON object, got {}",
            crate::config::validate::kind(other)
        )),
    }
}

async fn call_tool(
    gw: &Gateway,
    client: &ClientScope,
    name: &str,
    server: Option<&str>,
    args: Option<&Value>,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let host = &gw.shared.host;
    let reply = |text: String, details: Value| result(&[Content::text(text)], Some(details), true);
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            return reply(
                format!("Error: {e}"),
                json!({"mode": "call", "tool": name, "error": "call_failed"}),
            );
        }
    };
    // With `server`, the name may be the original one on that server.
    let mut target = name.to_string();
    if let Some(s) = server {
        if !known(host, client, s) {
            return reply(
                format!("Server \"{s}\" not found. Use mcp({{}}) to see available servers."),
                json!({"mode": "call", "server": s, "error": "server_not_found"}),
            );
        }
        if !host.manager().has_tools(s)
            && let Err(e) = host.manager().connect(s, false).await
        {
            return reply(
                unavailable_text(s, &e),
                json!({"mode": "call", "server": s, "error": unavailable_kind(&e)}),
            );
        }
        if let Ok(snapshot) = host.snapshot().await
            && let Some(e) = snapshot
                .server_entries(s)
                .find(|e| e.name == name || e.tool.name == name)
        {
            target = e.name.clone();
        }
    }
    let entry = match gw.shared.resolve_for(client, &target).await {
        Ok(e) => e,
        Err(HostError::Lifecycle(e)) => {
            let s = lifecycle_server(&e).unwrap_or_default();
            return reply(
                unavailable_text(&s, &e),
                json!({"mode": "call", "server": s, "tool": name, "error": unavailable_kind(&e)}),
            );
        }
        Err(_) => {
            let snapshot = host.snapshot().await.ok();
            let owner = snapshot.as_ref().and_then(|s| s.owner(name));
            let in_server: Vec<&str> = snapshot
                .iter()
                .flat_map(|s| s.entries().iter())
                .filter(|e| server.or(owner) == Some(e.tool.server.as_str()))
                .filter(|e| client.allows(&e.tool.server))
                .map(|e| e.name.as_str())
                .take(30)
                .collect();
            let hint = if in_server.is_empty() {
                "Use mcp({ search: \"...\" }) to search.".to_string()
            } else {
                format!("Available tools: {}", in_server.join(", "))
            };
            return reply(
                format!("Tool \"{name}\" not found. {hint}"),
                json!({"mode": "call", "error": "tool_not_found", "tool": name}),
            );
        }
    };
    let (options, forwarding) = gw.call_options(ctx);
    let outcome = tokio::select! {
        r = host.call_raw(&entry, args, options) => r.map(|raw| crate::host::present_result(&entry, raw)),
        _ = ctx.ct.cancelled() => return Err(McpError::internal_error("cancelled by the client", None)),
    };
    super::calls::progress_sent(forwarding).await;
    let base = |extra: Value| {
        let mut d = json!({"mode": "call", "server": entry.tool.server, "tool": entry.tool.name});
        if let Some(uri) = &entry.tool.resource_uri {
            d["resourceUri"] = json!(uri);
        }
        if let Value::Object(m) = extra {
            d.as_object_mut().expect("an object").extend(m);
        }
        d
    };
    match outcome {
        Ok(out) => {
            let mut details = base(json!({"mcpResult": out.mcp_result}));
            if out.is_error {
                details["error"] = json!("tool_error");
            }
            result(&out.content, Some(details), out.is_error)
        }
        Err(HostError::Lifecycle(
            e @ (LifecycleError::Backoff { .. } | LifecycleError::Disabled(_)),
        )) => {
            let kind = unavailable_kind(&e);
            reply(
                unavailable_text(&entry.tool.server, &e),
                base(json!({"error": kind})),
            )
        }
        Err(HostError::Lifecycle(LifecycleError::Connect { error, .. })) if error.is_auth() => {
            reply(
                format!("Server \"{}\" is unavailable: {error}", entry.tool.server),
                base(json!({"error": "server_unavailable"})),
            )
        }
        Err(e) => {
            let schema =
                (entry.tool.kind == ToolKind::Tool).then(|| &**entry.tool.input_schema.object());
            let text = present::error_with_parameters(
                &format!("Error: call to \"{}\" failed: {e}", entry.name),
                schema,
            );
            reply(text, base(json!({"error": "call_failed"})))
        }
    }
}

fn lifecycle_server(e: &LifecycleError) -> Option<String> {
    match e {
        LifecycleError::NotFound(s)
        | LifecycleError::Disabled(s)
        | LifecycleError::Reconfigured(s) => Some(s.clone()),
        LifecycleError::Backoff { server, .. } | LifecycleError::Connect { server, .. } => {
            Some(server.clone())
        }
    }
}

fn unavailable_kind(e: &LifecycleError) -> &'static str {
    match e {
        LifecycleError::Backoff { .. } => "server_backoff",
        LifecycleError::NotFound(_) => "server_not_found",
        _ => "server_unavailable",
    }
}

fn unavailable_text(server: &str, e: &LifecycleError) -> String {
    match e {
        LifecycleError::Backoff {
            ago_s,
            retry_in_s,
            last_error,
            ..
        } => format!(
            "Server \"{server}\" is unavailable: it failed {ago_s}s ago ({}); retrying in {retry_in_s}s. Use mcp({{ connect: \"{server}\" }}) to retry now.",
            last_error.lines().next().unwrap_or("")
        ),
        other => format!("Server \"{server}\" is unavailable: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_is_derived_from_the_arguments_and_stays_small() {
        let definition = tool_definition_for(3);
        let schema = &definition["inputSchema"];
        assert_eq!(schema["type"], "object");
        assert!(schema.get("required").is_none(), "every key is optional");
        assert_eq!(
            known_keys(),
            [
                "tool",
                "args",
                "connect",
                "describe",
                "search",
                "regex",
                "includeSchemas",
                "server",
                "limit"
            ]
        );
        assert_eq!(schema["properties"]["tool"]["description"], "Tool to call");
        let text = serde_json::to_string(&definition).unwrap();
        assert!(
            text.len() / 4 < 300,
            "about {} tokens: {text}",
            text.len() / 4
        );
    }

    #[test]
    fn values_of_the_wrong_type_count_as_absent() {
        let args: Args =
            serde_json::from_value(json!({"search": "x", "limit": "5", "regex": 1})).unwrap();
        assert_eq!(args.search.as_deref(), Some("x"));
        assert_eq!((args.limit, args.regex), (None, None));
    }
}
