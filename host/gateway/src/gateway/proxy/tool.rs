//! The `tool` mode: calls one tool, by its name or, with `server`, by its
//! original name on that server.

use super::{Reply, known};
use crate::catalog::ToolKind;
use crate::gateway::results::Shaping;
use crate::gateway::wire::result;
use crate::gateway::{ClientScope, Session, calls};
use crate::host::pipeline::{Caller, Ran, Via};
use crate::host::{CallOutcome, EntryRef, Host, HostError, RawResult};
use crate::present::{self, Content};
use crate::servers::ServerError;
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResult;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

/// Calls `name` with `args`; every refusal and failure is a tool error the
/// agent can act on.
pub(super) async fn call_tool(
    gw: &Session,
    client: &ClientScope,
    name: &str,
    server: Option<&str>,
    args: Option<&Value>,
    shaping: &Shaping,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let (entry, args) = match find(gw, client, (name, server), args, ctx).await {
        Ok(ready) => ready,
        Err(answer) => return answer,
    };
    let caller = gw.caller(client, Via::Proxy, ctx);
    let viewed = gw.view_wanted(&entry, &args, ctx);
    // The server's result, as the guards left it, for the view mcpw opens.
    let mut raw_result = None;
    let mut kept = None;
    // The server's `_meta` on its result (an app's view, say) goes on as it
    // came, whatever the shaping does to the content.
    let mut meta = None;
    // The view the result is shown with, if its tool has one.
    let mut view = None;
    let outcome = match invoke(gw, &caller, &entry, args, ctx).await? {
        Ran::Done(Ok(raw)) => {
            if let RawResult::Tool(r) = &raw {
                meta = r.meta.clone();
                view = shown_view(gw, &entry, r);
                raw_result = viewed.is_some().then(|| r.clone());
            }
            let raw = shape(gw, &entry, raw, shaping, &mut kept).await?;
            Ok(crate::host::present_result(&entry, raw))
        }
        Ran::Done(Err(e)) => {
            if let Some(needed) = gw.sign_in_needed(&e).await {
                let details = call_details(&entry, json!({"error": "login_needed"}));
                return needed.answer(ctx, Some(details));
            }
            Err(e)
        }
        Ran::Refused(why) => {
            let details = json!({"mode": "call", "error": "not_approved", "tool": entry.name});
            return result(&[Content::text(why)], Some(details), true);
        }
        Ran::Withheld(why) => {
            let details = json!({"mode": "call", "error": "withheld", "tool": entry.name});
            let text = format!("Error: {why}");
            return result(&[Content::text(text)], Some(details), true);
        }
    };
    let mut told = present_outcome(&entry, outcome)?;
    told.meta = meta_for_client(&entry, told.meta.or(meta), view, ctx);
    if let (Some(args), Some(raw)) = (viewed, raw_result.filter(|r| r.is_error != Some(true))) {
        gw.open_view(&entry, args, &raw, ctx, &mut told);
    }
    if let (Some((uri, link)), Some(details)) = (kept, told.structured_content.as_mut()) {
        // The preview is in the content: the whole is read by its URI.
        details.as_object_mut().map(|d| d.remove("mcpResult"));
        details["kept"] = json!(uri);
        if let Ok(link) = serde_json::from_value(link) {
            told.content.push(link);
        }
    }
    Ok(told)
}

/// The view a result of `entry` is shown with, when its tool has one.
fn shown_view(gw: &Session, entry: &EntryRef, result: &CallToolResult) -> Option<String> {
    entry.tool.meta.as_ref().and_then(crate::apps::view_of)?;
    let view = gw.result_view(entry, result.meta.as_ref().map(|m| &m.0));
    view.map(str::to_string)
}

/// A result's `_meta` for this client. A host renders a view from a result:
/// the one the result is shown with, for one that declares MCP Apps (the
/// proxy's own tool list names no views); a client that does not gets no UI
/// metadata.
fn meta_for_client(
    entry: &EntryRef,
    meta: Option<rmcp::model::MetaObject>,
    view: Option<String>,
    ctx: &RequestContext<RoleServer>,
) -> Option<rmcp::model::MetaObject> {
    let meta = meta.and_then(|m| crate::apps::without_ui(&m.0).map(rmcp::model::MetaObject));
    let Some(view) = view.filter(|_| crate::gateway::wire::takes_apps(ctx)) else {
        return meta;
    };
    let resources = entry.snapshot().resources();
    let view = resources.exposed(&entry.tool.server, &view);
    let mut meta = meta.unwrap_or_default();
    meta.0.insert("ui".into(), json!({"resourceUri": view}));
    Some(meta)
}

/// A tool's result as the agent asked for it (projected, formatted) and
/// within its budget; `kept` gets the URI of the whole when it was cut, and
/// the `resource_link` to it (taken out of the content, which is presented
/// as text, to go back as a link).
async fn shape(
    gw: &Session,
    entry: &EntryRef,
    raw: RawResult,
    shaping: &Shaping,
    kept: &mut Option<(String, Value)>,
) -> Result<RawResult, McpError> {
    let RawResult::Tool(r) = raw else {
        return Ok(raw);
    };
    if gw.passes(entry, &r, shaping) {
        return Ok(RawResult::Tool(r));
    }
    let value =
        serde_json::to_value(&r).map_err(|e| McpError::internal_error(e.to_string(), None))?;
    let mut shaped = gw.shape(entry, value, shaping).await;
    if let (Some(uri), Some(blocks)) = (shaped.kept, shaped.result["content"].as_array_mut()) {
        let at = blocks
            .iter()
            .position(|b| b["type"] == "resource_link" && b["uri"] == uri);
        if let Some(link) = at.map(|i| blocks.remove(i)) {
            *kept = Some((uri, link));
        }
    }
    serde_json::from_value(shaped.result)
        .map(RawResult::Tool)
        .map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// A refusal as a tool error, so that the agent reads why.
fn refuse(reply: Reply) -> Result<CallToolResult, McpError> {
    result(&[Content::text(reply.text)], Some(reply.details), true)
}

/// The tool to call and its arguments ([`prepare`]'s), or the answer: a
/// tool of a per-person server nobody could list yet is found once it is
/// listed as this person, and one unlisted for want of their own login is
/// answered with the link to sign in.
async fn find(
    gw: &Session,
    client: &ClientScope,
    (name, server): (&str, Option<&str>),
    args: Option<&Value>,
    ctx: &RequestContext<RoleServer>,
) -> Result<(EntryRef, Option<Map<String, Value>>), Result<CallToolResult, McpError>> {
    let mut prepared = prepare(gw, client, name, server, args).await;
    if prepared.is_err() {
        let unlisted = gw.list_unlisted_for(client, ctx).await;
        if unlisted.listed {
            prepared = prepare(gw, client, name, server, args).await;
        }
        if prepared.is_err()
            && let Some(needed) = gw.sign_in_to_list(client, (name, server), &unlisted).await
        {
            let details = json!({"mode": "call", "tool": name, "error": "login_needed"});
            return Err(needed.answer(ctx, Some(details)));
        }
    }
    prepared.map_err(refuse)
}

/// The tool to call and its arguments, or why the call is refused.
async fn prepare(
    gw: &Session,
    client: &ClientScope,
    name: &str,
    server: Option<&str>,
    args: Option<&Value>,
) -> Result<(EntryRef, Option<Map<String, Value>>), Reply> {
    let args = parse_args(args).map_err(|e| {
        Reply::error(
            format!("Error: {e}"),
            json!({"mode": "call", "tool": name, "error": "call_failed"}),
        )
    })?;
    let target = match server {
        Some(s) => name_on(&gw.shared.host, client, name, s).await?,
        None => name.to_string(),
    };
    let entry = resolve(gw, client, name, &target, server).await?;
    Ok((entry, args))
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

/// The exposed name of the tool `name` on `server`: with `server`, the name
/// may be the original one there. Connects the server when its tools are
/// not known yet, so that the name can be found.
async fn name_on(host: &Host, client: &ClientScope, name: &str, s: &str) -> Result<String, Reply> {
    if !known(host, client, s) {
        return Err(Reply::error(
            format!("Server \"{s}\" not found. Use mcp({{}}) to see available servers."),
            json!({"mode": "call", "server": s, "error": "server_not_found"}),
        ));
    }
    if !host.servers().has_tools(s)
        && let Err(e) = host.servers().connect(s, false).await
    {
        return Err(Reply::error(
            unavailable_text(s, &e),
            json!({"mode": "call", "server": s, "error": unavailable_kind(&e)}),
        ));
    }
    if let Ok(snapshot) = host.snapshot().await
        && let Some(e) = snapshot
            .server_entries(s)
            .find(|e| e.name == name || e.tool.name == name)
    {
        return Ok(e.name.clone());
    }
    Ok(name.to_string())
}

/// The entry of `target` among the tools `client` sees.
async fn resolve(
    gw: &Session,
    client: &ClientScope,
    name: &str,
    target: &str,
    server: Option<&str>,
) -> Result<EntryRef, Reply> {
    match gw.shared.resolve_for(client, target).await {
        Ok(e) => Ok(e),
        Err(HostError::Lifecycle(e)) => {
            let s = lifecycle_server(&e).unwrap_or_default();
            Err(Reply::error(
                unavailable_text(&s, &e),
                json!({"mode": "call", "server": s, "tool": name, "error": unavailable_kind(&e)}),
            ))
        }
        Err(_) => Err(tool_not_found(&gw.shared.host, client, name, server).await),
    }
}

/// No such tool: lists the tools of the server meant (the one given, or the
/// one the name points to), so that the agent can correct the name.
async fn tool_not_found(
    host: &Host,
    client: &ClientScope,
    name: &str,
    server: Option<&str>,
) -> Reply {
    let snapshot = host.snapshot().await.ok();
    let owner = snapshot.as_ref().and_then(|s| s.owner(name));
    let in_server: Vec<&str> = snapshot
        .iter()
        .flat_map(|s| s.entries().iter())
        .filter(|e| server.or(owner) == Some(e.tool.server.as_str()))
        .filter(|e| client.sees(&e.tool))
        .map(|e| e.name.as_str())
        .take(30)
        .collect();
    let hint = if in_server.is_empty() {
        "Use mcp({ search: \"...\" }) to search.".to_string()
    } else {
        format!("Available tools: {}", in_server.join(", "))
    };
    Reply::error(
        format!("Tool \"{name}\" not found. {hint}"),
        json!({"mode": "call", "error": "tool_not_found", "tool": name}),
    )
}

/// Calls the tool along the call path, forwarding progress; the client's
/// cancellation ends the call at once. Returns once the progress has been
/// sent on.
async fn invoke(
    gw: &Session,
    caller: &Caller,
    entry: &EntryRef,
    args: Option<Map<String, Value>>,
    ctx: &RequestContext<RoleServer>,
) -> Result<Ran, McpError> {
    let (options, forwarding) = gw.call_options(ctx);
    let outcome = tokio::select! {
        r = gw.shared.host.run_call(caller, entry, args, options) => r,
        _ = ctx.ct.cancelled() => return Err(McpError::internal_error("cancelled by the client", None)),
    };
    calls::progress_sent(forwarding).await;
    Ok(outcome)
}

/// The call's result, or its failure told as a tool error: an unavailable
/// server says so, and a failed call shows the tool's parameters.
fn present_outcome(
    entry: &EntryRef,
    outcome: Result<CallOutcome, HostError>,
) -> Result<CallToolResult, McpError> {
    let reply = |text: String, details: Value| result(&[Content::text(text)], Some(details), true);
    match outcome {
        Ok(out) => {
            let mut details = call_details(entry, json!({"mcpResult": out.mcp_result}));
            if out.is_error {
                details["error"] = json!("tool_error");
            }
            result(&out.content, Some(details), out.is_error)
        }
        Err(HostError::Lifecycle(e @ (ServerError::Backoff { .. } | ServerError::Disabled(_)))) => {
            let kind = unavailable_kind(&e);
            reply(
                unavailable_text(&entry.tool.server, &e),
                call_details(entry, json!({"error": kind})),
            )
        }
        Err(HostError::Lifecycle(ServerError::Connect { error, .. })) if error.is_auth() => reply(
            format!("Server \"{}\" is unavailable: {error}", entry.tool.server),
            call_details(entry, json!({"error": "server_unavailable"})),
        ),
        Err(e) => {
            let schema =
                (entry.tool.kind == ToolKind::Tool).then(|| &**entry.tool.input_schema.object());
            let text = present::error_with_parameters(
                &format!("Error: call to \"{}\" failed: {e}", entry.name),
                schema,
            );
            reply(text, call_details(entry, json!({"error": "call_failed"})))
        }
    }
}

/// The `details` of a call: the tool called, and the keys of `extra`.
fn call_details(entry: &EntryRef, extra: Value) -> Value {
    let mut d = json!({"mode": "call", "server": entry.tool.server, "tool": entry.tool.name});
    if let Some(uri) = &entry.tool.resource_uri {
        d["resourceUri"] = json!(uri);
    }
    if let Value::Object(m) = extra {
        d.as_object_mut().expect("an object").extend(m);
    }
    d
}

/// The server a lifecycle error is about.
fn lifecycle_server(e: &ServerError) -> Option<String> {
    match e {
        ServerError::NotFound(s)
        | ServerError::Disabled(s)
        | ServerError::Reconfigured(s)
        | ServerError::NoPerson(s) => Some(s.clone()),
        ServerError::Backoff { server, .. }
        | ServerError::Connect { server, .. }
        | ServerError::PersonNeedsLogin { server, .. }
        | ServerError::Exchange { server, .. }
        | ServerError::PeopleFull { server, .. } => Some(server.clone()),
    }
}

/// The `error` of `details` for an unavailable server.
fn unavailable_kind(e: &ServerError) -> &'static str {
    match e {
        ServerError::Backoff { .. } => "server_backoff",
        ServerError::NotFound(_) => "server_not_found",
        ServerError::PersonNeedsLogin { .. } => "login_needed",
        ServerError::Exchange { .. } => "exchange_failed",
        _ => "server_unavailable",
    }
}

/// Why a server is unavailable; a server backing off says when it is
/// retried, and how to retry now.
fn unavailable_text(server: &str, e: &ServerError) -> String {
    match e {
        ServerError::Backoff {
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
