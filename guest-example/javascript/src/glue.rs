//! The contract's side: [`Script`] over [`engine`](crate::engine),
//! [`declare`](crate::declare), [`usage`](crate::usage) and
//! [`select`](crate::select), exported with the guest kit's `script!`.

use crate::declare::{ToolDecl, declaration};
use crate::engine::{self, Host, ScriptError};
use crate::select::{self, SelectError};
use mcpw_guest::script::{self, Outcome, PluginError, Script, ToolInfo, toolbox};
use serde_json::{Value, json};

struct JavaScript;

mcpw_guest::script!(JavaScript);

impl Script for JavaScript {
    fn run(code: String) -> Outcome {
        let outcome = engine::run(Box::new(Toolbox), &code);
        Outcome {
            value: outcome.value.map_err(|e| match e {
                ScriptError::Syntax(m) => script::ScriptError::Syntax(m),
                ScriptError::Thrown(m) => script::ScriptError::Thrown(m),
                ScriptError::Stalled(m) => script::ScriptError::Stalled(m),
                ScriptError::InvalidValue(m) => script::ScriptError::InvalidValue(m),
            }),
            logs: outcome.logs,
        }
    }

    fn warm() {
        engine::warm();
    }

    fn usage() -> String {
        crate::usage::TEXT.to_string()
    }

    fn declare(tools: Vec<ToolInfo>) -> Vec<String> {
        tools.iter().map(declare_one).collect()
    }

    fn select(expression: String, input: String) -> Result<String, script::SelectError> {
        select::select(&expression, input).map_err(|e| match e {
            SelectError::Syntax(m) => script::SelectError::Syntax(m),
            SelectError::Runtime(m) => script::SelectError::Runtime(m),
            SelectError::Unsupported(m) => script::SelectError::Unsupported(m),
        })
    }
}

fn declare_one(tool: &ToolInfo) -> String {
    let input = serde_json::from_str(&tool.input_schema).unwrap_or(Value::Null);
    let output = tool
        .output_schema
        .as_deref()
        .and_then(|s| serde_json::from_str(s).ok());
    declaration(&ToolDecl {
        name: &tool.name,
        description: &tool.description,
        input_schema: &input,
        output_schema: output.as_ref(),
    })
}

fn error_text(e: PluginError) -> String {
    match e {
        PluginError::InvalidInput(m)
        | PluginError::InvalidPattern(m)
        | PluginError::Denied(m)
        | PluginError::NotFound(m)
        | PluginError::Unavailable(m)
        | PluginError::Failed(m) => m,
    }
}

/// The `toolbox` import as the engine's [`Host`].
struct Toolbox;

impl Host for Toolbox {
    fn start_call(&mut self, name: &str, arguments: &str) -> Result<u32, String> {
        toolbox::start_call(name, arguments).map_err(error_text)
    }

    fn next_finished(&mut self) -> Option<(u32, String)> {
        let finished = toolbox::next_finished()?;
        let text = match finished.outcome {
            // The host's texts are JSON already: spliced, not parsed and re-written.
            Ok(o) => format!(
                "{{\"content\":{},\"structuredContent\":{},\"isError\":{}}}",
                o.content,
                o.structured_content.as_deref().unwrap_or("null"),
                o.is_error
            ),
            Err(e) => json!({ "failure": error_text(e) }).to_string(),
        };
        Some((finished.ticket, text))
    }

    fn search(&mut self, query: &str, limit: u32) -> Result<String, String> {
        let hits = toolbox::search(query, limit).map_err(error_text)?;
        let hits: Vec<Value> = hits
            .iter()
            .map(|t| match t.kind {
                // A skill is read with `mcp.readSkill`, never called.
                script::ToolKind::Skill => {
                    json!({ "name": t.name, "server": t.server, "skill": true, "description": t.description })
                }
                _ => json!({ "name": t.name, "server": t.server, "declaration": declare_one(t) }),
            })
            .collect();
        Ok(Value::Array(hits).to_string())
    }

    fn describe(&mut self, name: &str) -> Result<String, String> {
        toolbox::describe(name)
            .map(|t| declare_one(&t))
            .map_err(error_text)
    }

    fn read_skill(&mut self, skill: &str, file: Option<&str>) -> Result<String, String> {
        let f = toolbox::read_skill(skill, file).map_err(error_text)?;
        Ok(
            json!({ "uri": f.uri, "mimeType": f.mime_type, "text": f.text, "bytes": f.bytes })
                .to_string(),
        )
    }
}
