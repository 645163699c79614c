//! Reading a kept result: a range of its text (in characters), a jq
//! projection of its JSON, or its JSON in another format; by `mcp({result})`
//! in the proxy exposure and by the `read_result` tool in the others.

use super::{Shaping, parse_json, project_input, written};
use crate::config::results::Format;
use crate::gateway::Session;
use crate::gateway::results::Reading;
use crate::gateway::wire::result;
use crate::present::Content;
use crate::results::{self, CHARS_PER_TOKEN};
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

/// The tool that reads kept results, in every exposure but the proxy.
pub(crate) const TOOL_NAME: &str = "read_result";

/// The room a range's note may take, out of the budget.
const NOTE_ROOM: usize = 400;

/// `read_result`'s definition.
pub(crate) fn tool_definition() -> Value {
    json!({
        "name": TOOL_NAME,
        "description": "Reads a result that was too big to show whole (its preview names its id): a range of its text, or its JSON projected with a jq expression (select) or written as toon or csv (format).",
        "inputSchema": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The result's id (or its mcpw://results/ URI)"},
                "offset": {"type": "integer", "minimum": 0, "description": "First character to read (default 0)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Characters to read (default and most: the result budget)"},
                "select": {"type": "string", "description": "jq expression run on the result's JSON"},
                "format": {"type": "string", "enum": ["json", "toon", "csv"]},
            },
            "required": ["id"],
        },
    })
}

impl Session {
    /// Reads the kept result `id` for the agent: a range of its text, after
    /// the projection and format asked for.
    pub(crate) async fn read_kept(
        &self,
        id: &str,
        offset: Option<u64>,
        limit: Option<u64>,
        asked: &Shaping,
    ) -> Result<CallToolResult, McpError> {
        let details = |extra: Value| {
            let mut d = json!({"mode": "result", "id": id});
            if let (Some(d), Value::Object(m)) = (d.as_object_mut(), extra) {
                d.extend(m);
            }
            d
        };
        let Some(whole) = self.kept_whole(id).await else {
            let text = format!(
                "Result \"{id}\" not found: kept results expire, and belong to the session that got them."
            );
            return result(
                &[Content::text(text)],
                Some(details(json!({"error": "not_found"}))),
                true,
            );
        };
        let mut notes = Vec::new();
        let text = match self.kept_text(&whole, asked, &mut notes).await {
            Ok(text) => text,
            Err((text, error)) => {
                let details = Some(details(json!({"error": error})));
                return result(&[Content::text(text)], details, true);
            }
        };
        let budget = self.shared.host.config().settings.results.budget;
        let most = match budget {
            0 => usize::MAX,
            b => (b * CHARS_PER_TOKEN).saturating_sub(NOTE_ROOM).max(1),
        };
        let limit = limit.map_or(most, |l| (l as usize).clamp(1, most));
        let range = results::read_range(&text, offset.unwrap_or(0) as usize, limit);
        let (from, end, total) = (range.offset, range.end, range.total);
        let next = self.read_on(id, &range);
        notes.push(format!(
            "[Characters {from} to {end} of {total}. {next}]",
            from = results::thousands(from),
            end = results::thousands(end),
            total = results::thousands(total),
        ));
        result(
            &[Content::text(range.text), Content::text(notes.join("\n"))],
            Some(details(
                json!({"offset": from, "end": end, "total": total, "more": end < total}),
            )),
            false,
        )
    }

    /// The text of a kept result as the agent asked for it: projected by
    /// `select` and written in `format` (JSON only), or as it is; else what
    /// to tell the agent, and the error's kind.
    async fn kept_text(
        &self,
        whole: &crate::kept::Whole,
        asked: &Shaping,
        notes: &mut Vec<String>,
    ) -> Result<std::sync::Arc<str>, (String, &'static str)> {
        if asked.select.is_none() && asked.format.is_none() {
            return Ok(whole.text.clone());
        }
        let json = parse_json(&whole.text).or_else(|| {
            whole
                .structured()
                .and_then(|s| serde_json::from_str(s).ok())
        });
        let Some(value) = json else {
            let text = "This result is not JSON: select and format apply to JSON only; read ranges of its text.";
            return Err((text.into(), "not_json"));
        };
        let value = match &asked.select {
            Some(expression) => self
                .select(expression, &value)
                .await
                .map_err(|e| (e, "select_failed"))?,
            None => value,
        };
        Ok(written(&value, asked.format.unwrap_or(Format::Json), notes).into())
    }

    /// How to read on past `range` of result `id`, or that it is the end.
    fn read_on(&self, id: &str, range: &results::Range) -> String {
        if !range.more() {
            return "That is the end.".to_string();
        }
        let end = range.end;
        let proxy = self.shared.exposed().reads_results() == Reading::Proxy;
        let call = match proxy {
            true => format!("mcp({{result: \"{id}\", offset: {end}}})"),
            false => format!("{TOOL_NAME}({{id: \"{id}\", offset: {end}}})"),
        };
        format!("Read on with {call}.")
    }

    /// `result`'s JSON (its structured content, or its text that parses as
    /// JSON) projected by the jq `expression`; or why not, for the agent.
    pub(super) async fn project(&self, result: &Value, expression: &str) -> Result<Value, String> {
        let input = project_input(result).ok_or_else(|| {
            "select applies to JSON: this result has no structured content, and its text is not JSON.".to_string()
        })?;
        self.select(expression, &input).await
    }

    /// `input` projected by the jq `expression`, in the script sandbox; or
    /// why not, as the agent reads it.
    pub(in crate::gateway) async fn select(
        &self,
        expression: &str,
        input: &Value,
    ) -> Result<Value, String> {
        self.shared
            .host
            .select(expression, input)
            .await
            .map_err(|e| format!("Error: {e}"))
    }

    /// `read_result`'s call: its arguments read as the tool takes them.
    pub(crate) async fn read_result_tool(
        &self,
        args: &Map<String, Value>,
    ) -> Result<CallToolResult, McpError> {
        let id = args.get("id").and_then(Value::as_str).unwrap_or_default();
        let asked = Shaping::of(args);
        let number = |k: &str| args.get(k).and_then(Value::as_u64);
        self.read_kept(id, number("offset"), number("limit"), &asked)
            .await
    }
}
