//! The `mcp` proxy tool: one small tool in front of every server. Modes by
//! priority: tool (call) > connect > describe > search > server (list) > status.
//! Texts, `details` (sent as `structuredContent`) and error kinds follow the
//! documented proxy tool. Every mode shows and reaches only the servers the
//! client sees: another server is "not found", like one that does not exist.

pub(super) mod install;
mod reply;
mod search;
pub(super) mod skill;
mod tool;

use reply::Reply;

use super::wire::result;
use super::{ClientScope, Session};
use crate::catalog::{ConnectionState, Entry};
use crate::config::results::Format;
use crate::host::{Host, HostError};
use crate::present::{self, Content};
use crate::servers::ServerError;
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResult;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

pub(crate) const TOOL_NAME: &str = "mcp";
/// Search results shown unless `limit` says otherwise.
const DEFAULT_SEARCH_LIMIT: u32 = 10;

/// The `mcp` tool's definition: about 320 tokens, however many tools exist.
pub(crate) fn tool_definition(host: &Host, client: &ClientScope) -> Value {
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
            "Gateway to {servers} MCP servers. First given wins: code (JavaScript: await tools.<name>(args), mcp.search(q); returns its value) > tool (call, with args) > \
             result (offset, limit) > add (user approves) > find (MCP Registry) > connect > describe > skill (+file) > search (words OR'd) > server (list its tools) > nothing (status). format: json/toon/csv. \
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
    // JavaScript calling tools (the description says how).
    #[serde(default, deserialize_with = "lenient")]
    code: Option<String>,
    // Lower limits for a script (timeoutMs, cpuMs, memoryMb, maxCalls,
    // maxOutputKb): an object, so that its keys stay out of the schema.
    #[serde(default, deserialize_with = "lenient")]
    limits: Option<serde_json::Map<String, Value>>,
    /// Tool to call
    #[serde(default, deserialize_with = "lenient")]
    tool: Option<String>,
    /// Call arguments (object or JSON)
    #[serde(default)]
    args: Option<Value>,
    /// Server to reconnect
    #[serde(default, deserialize_with = "lenient")]
    connect: Option<String>,
    /// Tool to describe
    #[serde(default, deserialize_with = "lenient")]
    describe: Option<String>,
    // A skill to read: <server>/<name> or its URI; `file` one of its files.
    #[serde(default, deserialize_with = "lenient")]
    skill: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    file: Option<String>,
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
    /// Hits, or characters of a result
    #[serde(default, deserialize_with = "lenient")]
    limit: Option<u64>,
    // A kept result to read (the description says with what).
    #[serde(default, deserialize_with = "lenient")]
    result: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    offset: Option<u64>,
    /// jq on the JSON
    #[serde(default, deserialize_with = "lenient")]
    select: Option<String>,
    // How a result's JSON is written: json, toon or csv.
    #[serde(default, deserialize_with = "lenient")]
    format: Option<String>,
    // Servers to look for in the MCP Registry.
    #[serde(default, deserialize_with = "lenient")]
    find: Option<String>,
    // A server to add: a registry name, npm:PKG@VER, pypi:PKG==VER or a URL.
    #[serde(default, deserialize_with = "lenient")]
    add: Option<String>,
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
                p.remove("minimum");
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

pub(crate) async fn call(
    gw: &Session,
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
    if ["describe", "skill", "search", "server"]
        .iter()
        .any(|k| given(k))
        && !["tool", "connect"].iter().any(|k| given(k))
    {
        gw.shared.ready().await;
    }
    let shaping = super::results::Shaping {
        select: args.select.clone(),
        format: args.format.as_deref().and_then(Format::parse),
    };
    if let Some(f) = args
        .format
        .as_deref()
        .filter(|f| Format::parse(f).is_none())
    {
        let text = format!("format \"{f}\" is not one of \"json\", \"toon\", \"csv\".");
        return result(
            &[Content::text(text)],
            Some(json!({"mode": "error", "error": "bad_format"})),
            true,
        );
    }
    if let Some(code) = &args.code {
        return super::code::run(gw, client, code, args.limits.as_ref(), &shaping, ctx).await;
    }
    let reply = if let Some(tool) = &args.tool {
        return tool::call_tool(gw, client, tool, server, args.args.as_ref(), &shaping, ctx).await;
    } else if let Some(id) = &args.result {
        return gw.read_kept(id, args.offset, args.limit, &shaping).await;
    } else if let Some(source) = &args.add {
        install::add(gw, client, source, ctx).await
    } else if let Some(q) = &args.find {
        install::find(gw, q, args.limit.map_or(5, |l| l.clamp(1, 50) as u32)).await
    } else if let Some(s) = &args.connect {
        connect(host, client, s).await
    } else if let Some(t) = &args.describe {
        describe(gw, client, t).await
    } else if let Some(s) = &args.skill {
        skill::skill(gw, client, s, args.file.as_deref(), ctx).await
    } else if let Some(q) = &args.search {
        let query = search::Query {
            text: q,
            regex: args.regex.unwrap_or(false),
            schemas: args.include_schemas.unwrap_or(true),
            server,
            limit: args
                .limit
                .map_or(DEFAULT_SEARCH_LIMIT, |l| l.clamp(1, 100) as u32),
        };
        search::search(gw, client, query).await
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
    let servers = client.statuses(host);
    let mut text = String::new();
    let mut list = Vec::new();
    for s in &servers {
        let failed = host.servers().failure(&s.name).map(|(ago, _)| ago);
        let (line, status) = status_line(host, s, failed);
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
    out.push_str(&next_steps(host, client, servers.is_empty()));
    let search = host.embedding_status();
    out.push_str(&format!("\n\n{}", host.search_description()));
    let waiting = waiting_for_approval(host, client, &mut out);
    Reply::ok(
        out.trim().to_string(),
        json!({"mode": "status", "servers": list, "totalTools": total, "connectedCount": connected, "search": search,
               "waitingForApproval": waiting}),
    )
}

/// A server's line in the status, and its status word.
fn status_line(
    host: &Host,
    s: &crate::catalog::ServerStatus,
    failed: Option<u64>,
) -> (String, &'static str) {
    match s.state {
        ConnectionState::Connected => (
            format!("✓ {} ({} tools)", s.name, s.tool_count),
            "connected",
        ),
        ConnectionState::NeedsAuth => {
            let oauth = host
                .servers()
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
        ConnectionState::NotConnected => (format!("○ {} (not connected)", s.name), "not connected"),
        ConnectionState::Disabled => (format!("- {} (disabled)", s.name), "disabled"),
    }
}

/// What to do next: list or search, or why there is nothing.
fn next_steps(host: &Host, client: &ClientScope, no_servers: bool) -> String {
    if !no_servers {
        return "\nmcp({ server: \"name\" }) to list tools, mcp({ search: \"...\" }) to search"
            .into();
    }
    if client.is_limited() {
        return "No servers are available to this client.".into();
    }
    // An empty gateway is mostly a config in an unexpected place.
    let mut out = String::from("No servers configured. mcpw looked in:");
    for source in &host.config().sources {
        let found = if source.found { "" } else { " (not found)" };
        out.push_str(&format!("\n  {}{found}", source.path.display()));
    }
    out.push_str("\nGive the config to `mcpw serve --config /absolute/path`.");
    out
}

/// The project servers that wait for approval (names only: what they would
/// run is for the user to read, not the agent), told in `out`; none for a
/// limited client.
fn waiting_for_approval(host: &Host, client: &ClientScope, out: &mut String) -> Vec<String> {
    let trust = &host.config().trust;
    if client.is_limited() {
        return Vec::new();
    }
    let waiting: Vec<String> = trust
        .waiting
        .iter()
        .map(|w| present::truncate_at_word(&w.name, 40))
        .collect();
    if !waiting.is_empty() {
        out.push_str(&format!(
            "\n\n{} project server(s) wait for the user's approval, not started and their tools not available: {}. The user approves them with `{}`.",
            waiting.len(),
            waiting.join(", "),
            trust.approve_with
        ));
    }
    waiting
}

fn not_found(mode: &str, server: &str) -> Reply {
    Reply::error(
        format!("Server \"{server}\" not found. Use mcp({{}}) to see available servers."),
        json!({"mode": mode, "server": server, "error": "not_found"}),
    )
}

/// Is `server` one this client can name: configured, and seen by it?
fn known(host: &Host, client: &ClientScope, server: &str) -> bool {
    client.allows(server) && host.servers().server(server).is_some()
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
    let tools: Vec<&Entry> = snapshot
        .server_entries(server)
        .filter(|e| client.sees(&e.tool))
        .collect();
    let connected = host
        .servers()
        .status(server)
        .is_ok_and(|s| s.state == ConnectionState::Connected);
    if tools.is_empty() {
        if connected {
            return Reply::ok(
                format!("Server \"{server}\" has no tools."),
                json!({"mode": "list", "server": server, "tools": [], "count": 0}),
            );
        }
        if host.servers().has_tools(server) {
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
                HostError::Lifecycle(ServerError::Connect { error, .. }) => error.to_string(),
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

async fn describe(gw: &Session, client: &ClientScope, name: &str) -> Reply {
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
                "code",
                "limits",
                "tool",
                "args",
                "connect",
                "describe",
                "skill",
                "file",
                "search",
                "regex",
                "includeSchemas",
                "server",
                "limit",
                "result",
                "offset",
                "select",
                "format",
                "find",
                "add"
            ]
        );
        assert_eq!(schema["properties"]["tool"]["description"], "Tool to call");
        let text = serde_json::to_string(&definition).unwrap();
        assert!(
            text.len() / 4 < 340,
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
