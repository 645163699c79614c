//! Big results in the gateway (see [`crate::results`]): a tool result over
//! its budget reaches the agent as a preview, with a note that says how to
//! read the rest, and the whole is kept for this session. The agent reads on
//! by range, projection or format with `mcp({result})` (proxy exposure) or
//! the `read_result` tool (the others), and a client with `resources/read`.

mod read;

pub(crate) use read::{TOOL_NAME, tool_definition};

use super::Session;
use crate::catalog::Entry;
use crate::config::results::{Format, budget_for, format_for};
use crate::results::{self, CHARS_PER_TOKEN, encode, parse_json};
use serde_json::{Map, Value, json};

/// How an agent reads on in a kept result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    /// `mcp({result: …})`.
    Proxy,
    /// `tools.read_result(…)` in a script.
    Script,
    /// `read_result(…)`.
    Tool,
}

/// The `_meta` key that tells a client the most characters a tool's result
/// takes, so that it does not cut a result mcpw cut already.
const MAX_RESULT_CHARS: &str = "anthropic/maxResultSizeChars";

/// Whether `read_result` is offered: some results may be cut.
pub(crate) fn offered(config: &crate::config::Config) -> bool {
    config.settings.results.budget != 0
        || config
            .servers
            .iter()
            .any(|s| s.config.result_budget.is_some())
}

/// The `_meta` a tool of `server` named `names` carries, when mcpw guards
/// its results.
pub(crate) fn tool_meta(
    config: &crate::config::Config,
    server: &str,
    names: &[&str],
) -> Option<Value> {
    meta(budget_for(config, server, names))
}

/// The `_meta` of a tool whose results have `budget` tokens; none for no
/// budget.
pub(crate) fn meta(budget: usize) -> Option<Value> {
    (budget != 0).then(|| json!({MAX_RESULT_CHARS: budget * CHARS_PER_TOKEN}))
}

/// What the agent asked of a call's result, beyond the call.
#[derive(Debug, Default, Clone)]
pub struct Shaping {
    /// A jq expression to project the result's JSON with.
    pub select: Option<String>,
    /// How to write its structured content.
    pub format: Option<Format>,
}

impl Shaping {
    /// What a tool's arguments ask (`select`, `format`).
    pub fn of(args: &Map<String, Value>) -> Shaping {
        Shaping {
            select: args
                .get("select")
                .and_then(Value::as_str)
                .map(str::to_string),
            format: args
                .get("format")
                .and_then(Value::as_str)
                .and_then(Format::parse),
        }
    }

    fn asks(&self) -> bool {
        self.select.is_some() || self.format.is_some()
    }
}

/// A result as the agent gets it.
pub(crate) struct Shaped {
    /// The `tools/call` result, as JSON.
    pub result: Value,
    /// Where the whole is kept, when the result was cut.
    pub kept: Option<String>,
    /// This is the session's first result kept: `read_result` joined its
    /// tool list, which the client is to be told.
    pub first: bool,
}

impl Shaped {
    /// `result` as it is: nothing kept.
    fn as_is(result: Value) -> Shaped {
        Shaped {
            result,
            kept: None,
            first: false,
        }
    }
}

impl Session {
    /// Tokens a result of `entry` may take; `0` for no budget.
    fn budget_of(&self, entry: &Entry) -> usize {
        let names = [entry.tool.name.as_str(), entry.name.as_str()];
        budget_for(&self.shared.host.config(), &entry.tool.server, &names)
    }

    /// How `entry`'s structured results are written, and whether only when
    /// shorter; none: as the server wrote them.
    fn format_of(&self, entry: &Entry) -> Option<(Format, bool)> {
        let names = [entry.tool.name.as_str(), entry.name.as_str()];
        format_for(&self.shared.host.config(), &entry.tool.server, &names)
    }

    /// Whether a result of `entry` reaches the agent as it came: nothing is
    /// asked of it, no format applies, and it is within the budget. Most
    /// results are, and are not taken apart.
    pub(super) fn passes(
        &self,
        entry: &Entry,
        result: &impl serde::Serialize,
        asked: &Shaping,
    ) -> bool {
        !asked.asks()
            && self.format_of(entry).is_none()
            && !results::over_budget(result, self.budget_of(entry))
    }

    /// `raw`, a tool's result as its server sent it (as JSON), as the agent
    /// gets it: projected and formatted as asked, and cut to a preview when
    /// over `entry`'s budget, the whole kept for this session.
    pub(super) async fn shape(&self, entry: &Entry, raw: Value, asked: &Shaping) -> Shaped {
        let budget = self.budget_of(entry);
        let mut notes = Vec::new();
        let mut result = raw;
        // A tool's error is told as it is: no projection or format hides it.
        let failed = result.get("isError") == Some(&Value::Bool(true));
        if !failed && let Some(expression) = &asked.select {
            result = match self.project(&result, expression).await {
                Ok(value) => {
                    let format = asked.format.unwrap_or(Format::Json);
                    json!({"content": [{"type": "text", "text": written(&value, format, &mut notes)}]})
                }
                Err(e) => {
                    return Shaped::as_is(
                        json!({"content": [{"type": "text", "text": e}], "isError": true}),
                    );
                }
            };
        } else if !failed
            && let Some((format, if_shorter)) = asked
                .format
                .map(|f| (f, false))
                .or_else(|| self.format_of(entry))
        {
            reformat(&mut result, format, if_shorter, &mut notes);
        }
        if !results::over_budget(&result, budget) {
            append_notes(&mut result, &notes);
            return Shaped::as_is(result);
        }
        let from = format!("{}/{}", entry.tool.server, entry.tool.name);
        self.cut(result, budget, from, notes).await
    }

    /// `result` cut to a preview within `budget` tokens, the whole kept (and
    /// shared with the other replicas, in a team).
    pub(super) async fn cut(
        &self,
        result: Value,
        budget: usize,
        from: String,
        mut notes: Vec<String>,
    ) -> Shaped {
        let json = has_project_input(&result);
        let whole = crate::kept::Whole::new(results::parts(&result), from);
        // The size the agent would read through: that of the text ranges read.
        let size = whole.text.chars().count();
        let text = whole.text.clone();
        let record = self
            .state
            .link
            .is_shared()
            .then(|| serde_json::to_string(&whole).ok())
            .flatten();
        let kept = self.state.shelf.keep_whole(whole);
        if let (Some(uri), Some(record)) = (&kept, record) {
            let id = uri.trim_start_matches(crate::kept::URI_PREFIX);
            let ttl = self.state.shelf.limits().ttl;
            self.state.link.share_result(id, &record, ttl).await;
        }
        let how = match &kept {
            Some(uri) => {
                let id = uri.trim_start_matches(crate::kept::URI_PREFIX);
                let file = match &self.state.files {
                    // Up to 128 MiB written and synced: off the async threads.
                    Some(files) => {
                        let (files, id, text) = (files.clone(), id.to_string(), text.clone());
                        tokio::task::spawn_blocking(move || files.write(&id, &text))
                            .await
                            .map_err(std::io::Error::other)
                            .and_then(|written| written)
                            .inspect_err(|e| {
                                tracing::warn!("a kept result was not written to a file: {e}")
                            })
                            .ok()
                    }
                    None => None,
                };
                self.how_to_read(uri, json, file.as_deref())
            }
            None => "It was too big to keep: ask for less (a narrower call).".to_string(),
        };
        // The note's length is known before the preview: room for it is kept.
        let note = |summary: &str| {
            format!(
                "[Cut to fit the result budget of {} tokens: {summary} left out. The whole result is {} characters (about {} tokens). {how}]",
                crate::results::thousands(budget),
                crate::results::thousands(size),
                crate::results::thousands(results::tokens(size)),
            )
        };
        let reserve = note("").len() + 400 + notes.iter().map(|n| n.len() + 40).sum::<usize>();
        let preview = results::preview(&result, budget * CHARS_PER_TOKEN, reserve);
        let mut out = preview.result;
        notes.push(note(&preview.summary));
        append_notes(&mut out, &notes);
        if let (Some(uri), Some(blocks)) =
            (&kept, out.get_mut("content").and_then(Value::as_array_mut))
        {
            blocks.push(json!({"type": "resource_link", "uri": uri,
                "name": uri.trim_start_matches(crate::kept::URI_PREFIX),
                "description": "The whole result, kept for this session",
                "size": size}));
        }
        let first = kept.is_some()
            && !self
                .state
                .results_kept
                .swap(true, std::sync::atomic::Ordering::AcqRel);
        Shaped {
            result: out,
            kept,
            first,
        }
    }

    /// The whole result kept as `id` (or its URI) by this session, here or,
    /// in a team, at another replica.
    pub(crate) async fn kept_whole(&self, id: &str) -> Option<std::sync::Arc<crate::kept::Whole>> {
        if let Some(whole) = self.state.shelf.whole(id) {
            return Some(whole);
        }
        let id = id.strip_prefix(crate::kept::URI_PREFIX).unwrap_or(id);
        self.state
            .link
            .shared_result(id)
            .await
            .map(std::sync::Arc::new)
    }

    /// How the agent reads the rest of a kept result, in this exposure.
    fn how_to_read(&self, uri: &str, json: bool, file: Option<&std::path::Path>) -> String {
        let id = uri.trim_start_matches(crate::kept::URI_PREFIX);
        let ttl = match self.state.shelf.limits().ttl.as_secs() {
            s if s < 120 => format!("{s} seconds"),
            s => format!("{} minutes", s / 60),
        };
        let (range, select) = match self.shared.exposed().reads_results() {
            Reading::Proxy => (
                format!("mcp({{result: \"{id}\", offset: 0, limit: 20000}})"),
                format!("mcp({{result: \"{id}\", select: \"<jq>\"}})"),
            ),
            Reading::Script => (
                format!(
                    "a script: return await tools.{TOOL_NAME}({{id: \"{id}\", offset: 0, limit: 20000}})"
                ),
                format!("tools.{TOOL_NAME}({{id: \"{id}\", select: \"<jq>\"}})"),
            ),
            Reading::Tool => (
                format!("{TOOL_NAME}({{id: \"{id}\", offset: 0, limit: 20000}})"),
                format!("{TOOL_NAME}({{id: \"{id}\", select: \"<jq>\"}})"),
            ),
        };
        let select = if json {
            format!(", or project its JSON with jq: {select}")
        } else {
            String::new()
        };
        let file = file.map_or(String::new(), |f| {
            format!(" Its text is in the file {} too.", f.display())
        });
        format!(
            "It is kept for {ttl} as {uri} (resources/read). Read a range of it (offset and limit in characters) with {range}{select}.{file}"
        )
    }
}

/// The JSON a projection or format works on: the one text block, when it
/// parses as JSON (what the agent reads), or else the structured content.
pub(super) fn project_input(result: &Value) -> Option<Value> {
    single_text(result)
        .and_then(parse_json)
        .or_else(|| structured(result).cloned())
}

/// Whether a result has JSON to project, as [`project_input`] finds it,
/// without building it (the result may be tens of MB).
fn has_project_input(result: &Value) -> bool {
    single_text(result).is_some_and(results::is_json) || structured(result).is_some()
}

/// A result's text, when it has exactly one text block.
fn single_text(result: &Value) -> Option<&str> {
    let mut texts = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str));
    let one = texts.next()?;
    texts.next().is_none().then_some(one)
}

/// A result's structured content, when it has some.
fn structured(result: &Value) -> Option<&Value> {
    result.get("structuredContent").filter(|s| !s.is_null())
}

/// `value` written in `format`; CSV that does not apply falls back to JSON,
/// with a note.
pub(super) fn written(value: &Value, format: Format, notes: &mut Vec<String>) -> String {
    match encode::encode(value, format) {
        Ok(text) => text,
        Err(e) => {
            notes.push(format!("[Written as JSON: {e}.]"));
            value.to_string()
        }
    }
}

/// Writes a result's JSON text in `format`: each text block that is JSON, or
/// else the structured content as a text block of its own. With
/// `if_shorter`, only where that is shorter.
fn reformat(result: &mut Value, format: Format, if_shorter: bool, notes: &mut Vec<String>) {
    let structured = structured(result).cloned();
    let Some(blocks) = result.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    let mut any = false;
    for block in blocks.iter_mut() {
        if block.get("type").and_then(Value::as_str) != Some("text") {
            continue;
        }
        let Some(value) = block
            .get("text")
            .and_then(Value::as_str)
            .and_then(parse_json)
        else {
            continue;
        };
        any = true;
        let text = written(&value, format, notes);
        let shorter = text.len() < block["text"].as_str().map_or(0, str::len);
        if !if_shorter || shorter {
            block["text"] = json!(text);
        }
    }
    if !any && let Some(s) = structured {
        let text = written(&s, format, notes);
        if !if_shorter || text.len() < s.to_string().len() {
            blocks.insert(0, json!({"type": "text", "text": text}));
        }
    }
}

/// Adds `notes` as a text block at the end of the result's content.
fn append_notes(result: &mut Value, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    if let Some(blocks) = result.get_mut("content").and_then(Value::as_array_mut) {
        blocks.push(json!({"type": "text", "text": notes.join("\n")}));
    }
}

#[cfg(test)]
mod tests;
