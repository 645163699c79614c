//! Code mode: an agent's script run by the script guest, its calls made for
//! the session the way the session's own calls are (scope, statistics,
//! sampling and elicitation routed back, cancellation), and its outcome told
//! as a tool result.

mod toolbox;

use super::wire::result;
use super::{ClientScope, Session};
use crate::host::HostError;
use crate::plugin::script::{ScriptControl, ScriptFailure, ScriptLimits, ScriptReport};
use crate::present::Content;
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResult;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use std::sync::Arc;

/// The code tool's name in the `code` exposure.
pub const TOOL_NAME: &str = crate::host::CODE_TOOL_NAME;

/// The code tool's definition: the script guest's own description of how to
/// write a script, with the limits and the servers the client sees.
pub async fn tool_definition(gw: &Session, client: &ClientScope) -> Value {
    let host = &gw.shared.host;
    let usage = gw
        .shared
        .code_usage
        .get_or_init(|| async {
            match host.scripter().await {
                Ok(s) => tokio::task::spawn_blocking(move || s.usage())
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|u| u.map_err(|e| e.to_string()))
                    .unwrap_or_else(|e| format!("Code mode is unavailable: {e}")),
                Err(e) => format!("Code mode is unavailable: {e}"),
            }
        })
        .await;
    let servers: Vec<String> = host
        .config()
        .servers
        .iter()
        .filter(|s| s.config.enabled && client.allows(&s.name))
        .map(|s| s.name.clone())
        .take(30)
        .collect();
    let l = host.config().settings.script_limits;
    let description = format!(
        "{usage}\n\nServers: {}.\nLimits: {} s, {} MiB of memory, {} calls, {} KiB returned.",
        servers.join(", "),
        l.wall.as_secs(),
        l.memory_bytes >> 20,
        l.calls,
        l.output_bytes >> 10
    );
    json!({
        "name": TOOL_NAME,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The script (JavaScript)"},
                "limits": {"type": "object", "description": "Lower limits for this script: timeoutMs, cpuMs, memoryMb, maxCalls, maxOutputKb"},
                "select": {"type": "string", "description": "jq expression run on the script's value"},
                "format": {"type": "string", "enum": ["json", "toon", "csv"], "description": "How the value is written"},
            },
            "required": ["code"],
        },
    })
}

/// Runs `code` for the session of `ctx` and tells its outcome: the value as
/// JSON, then the log; a failure is a tool error that names the limit or the
/// error and lists the calls made by then.
pub async fn run(
    gw: &Session,
    client: &ClientScope,
    code: &str,
    limits: Option<&serde_json::Map<String, Value>>,
    shaping: &super::results::Shaping,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let toolbox = Arc::new(toolbox::SessionToolbox::new(gw, client, ctx));
    let control = ScriptControl::default();
    let stopper = {
        let (ct, control) = (ctx.ct.clone(), control.clone());
        tokio::spawn(async move {
            ct.cancelled().await;
            control.cancel();
        })
    };
    // A call may lower the configured limits (the scripter never lets it
    // raise them).
    let limits = |configured| limits.map_or(configured, |l| ScriptLimits::read(l, configured));
    let report = gw
        .shared
        .host
        .run_script_with(code, limits, toolbox, control)
        .await;
    stopper.abort();
    let report = match report {
        Ok(report) => report,
        Err(e @ HostError::Script(_)) => {
            let text = format!("Error: code mode is unavailable: {e}");
            return result(
                &[Content::text(text)],
                Some(json!({"mode": "code", "error": "unavailable"})),
                true,
            );
        }
        Err(e) => {
            return Err(McpError::internal_error(
                format!("the script runner failed: {e}"),
                None,
            ));
        }
    };
    if matches!(report.value, Err(ScriptFailure::Cancelled)) {
        return Err(McpError::internal_error("cancelled by the client", None));
    }
    let report = match shape_value(gw, report, shaping).await {
        Ok(report) => report,
        Err(refused) => return refused,
    };
    let budget = gw.shared.host.config().settings.results.budget;
    if let Ok(value) = &report.value
        && crate::results::over_budget(&value.as_str(), budget)
    {
        return Ok(cut_value(gw, report, budget).await);
    }
    let links = match &report.value {
        Ok(value) => kept_links(value, &gw.state.shelf),
        Err(_) => Vec::new(),
    };
    let told = tell(report)?;
    if links.is_empty() {
        return Ok(told);
    }
    let mut told = serde_json::to_value(told).map_err(super::wire::internal)?;
    if let Some(Value::Array(content)) = told.get_mut("content") {
        content.extend(links);
    }
    super::wire::from_json(told)
}

/// The report with its value projected (`select`) and written (`format`)
/// as asked; a projection that fails is the call's error.
async fn shape_value(
    gw: &Session,
    mut report: ScriptReport,
    shaping: &super::results::Shaping,
) -> Result<ScriptReport, Result<CallToolResult, McpError>> {
    let Ok(text) = &report.value else {
        return Ok(report);
    };
    if shaping.select.is_none() && shaping.format.is_none() {
        return Ok(report);
    }
    let mut value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    if let Some(expression) = &shaping.select {
        value = match gw.select(expression, &value).await {
            Ok(v) => v,
            Err(e) => {
                let details = json!({"mode": "code", "error": "select_failed", "logs": report.logs, "calls": report.calls});
                return Err(result(&[Content::text(e)], Some(details), true));
            }
        };
    }
    let format = shaping
        .format
        .unwrap_or(crate::config::results::Format::Json);
    report.value = Ok(super::results::written(&value, format, &mut report.logs));
    Ok(report)
}

/// A script's value over the budget: its preview, the whole kept.
async fn cut_value(gw: &Session, report: ScriptReport, budget: usize) -> CallToolResult {
    let value = report.value.as_deref().unwrap_or_default();
    let shaped = gw
        .cut(
            json!({"content": [{"type": "text", "text": value}]}),
            budget,
            "code".into(),
            Vec::new(),
        )
        .await;
    let mut out = shaped.result;
    if !report.logs.is_empty()
        && let Some(blocks) = out["content"].as_array_mut()
    {
        blocks.push(json!({"type": "text", "text": format!("Log:\n{}", report.logs.join("\n"))}));
    }
    out["structuredContent"] = json!({"mode": "code", "kept": shaped.kept,
        "logs": report.logs, "calls": report.calls});
    out["isError"] = json!(false);
    serde_json::from_value(out).unwrap_or_default()
}

/// A `resource_link` for each kept item whose URI the script's value names,
/// so that a client sees what it can read.
fn kept_links(value: &str, shelf: &crate::kept::Shelf) -> Vec<Value> {
    let prefix = crate::kept::URI_PREFIX;
    let mut links: Vec<Value> = Vec::new();
    for (at, _) in value.match_indices(prefix) {
        let id_len = value[at + prefix.len()..]
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(value.len() - at - prefix.len());
        let uri = &value[at..at + prefix.len() + id_len];
        if links.iter().any(|l| l["uri"] == uri) {
            continue;
        }
        if let Some(blob) = shelf.read(uri) {
            links.push(json!({"type": "resource_link", "uri": uri,
                "name": uri.trim_start_matches(prefix), "mimeType": blob.mime_type,
                "size": blob.bytes()}));
        }
    }
    links
}

/// The report as the agent reads it.
fn tell(report: ScriptReport) -> Result<CallToolResult, McpError> {
    let logs = if report.logs.is_empty() {
        String::new()
    } else {
        format!("\n\nLog:\n{}", report.logs.join("\n"))
    };
    let details = |value: Value, error: Option<&str>| {
        let mut d =
            json!({"mode": "code", "value": value, "logs": report.logs, "calls": report.calls});
        if let Some(e) = error {
            d["error"] = json!(e);
        }
        d
    };
    match &report.value {
        Ok(v) => {
            let value: Value = serde_json::from_str(v).unwrap_or(Value::Null);
            let text = format!("{v}{logs}");
            result(&[Content::text(text)], Some(details(value, None)), false)
        }
        Err(failure) => {
            let calls = calls_made(&report.calls);
            let text = format!("Error: {failure}\n{calls}{logs}");
            result(
                &[Content::text(text)],
                Some(details(Value::Null, Some(kind(failure)))),
                true,
            )
        }
    }
}

/// Calls listed in a failure's text, beyond which they are only counted.
const CALLS_LISTED: usize = 10;

/// The calls a failed script made: the first ones, then counts by outcome.
fn calls_made(calls: &[crate::plugin::script::CallRecord]) -> String {
    if calls.is_empty() {
        return "It made no calls.".into();
    }
    let mut text = format!("Calls it made ({}):", calls.len());
    for c in calls.iter().take(CALLS_LISTED) {
        match c.ms {
            Some(ms) => text.push_str(&format!("\n- {}: {} ({ms} ms)", c.tool, c.outcome)),
            None => text.push_str(&format!("\n- {}: {}", c.tool, c.outcome)),
        }
    }
    if calls.len() > CALLS_LISTED {
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        for c in &calls[CALLS_LISTED..] {
            let kind = c.outcome.split(':').next().unwrap_or_default();
            *counts.entry(kind).or_default() += 1;
        }
        let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
        text.push_str(&format!(
            "\n- and {} more: {}",
            calls.len() - CALLS_LISTED,
            counts.join(", ")
        ));
    }
    text
}

fn kind(failure: &ScriptFailure) -> &'static str {
    match failure {
        ScriptFailure::Syntax(_) => "syntax_error",
        ScriptFailure::Thrown(_) => "thrown",
        ScriptFailure::Stalled(_) => "stalled",
        ScriptFailure::InvalidValue(_) => "invalid_value",
        ScriptFailure::Limit(_) => "limit",
        ScriptFailure::Cancelled => "cancelled",
        ScriptFailure::Guest(_) => "guest_failed",
    }
}
