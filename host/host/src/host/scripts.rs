//! Code mode in the host: the script guest (the user's
//! `settings.plugins.script` or the embedded JavaScript guest), loaded on
//! first use and then kept, with its pool of warmed instances filled in the
//! background; how a script's call is made and told; and scripts run from
//! Rust against every tool of the host.

use super::{Host, HostError};
use crate::host::pipeline::{Caller, Ran, Unattended, Via};
use crate::kept::{Blob, Shelf};
use crate::plugin::script::{
    Done, ScriptControl, ScriptLimits, ScriptReport, Scripter, SkillFile, ToolInfo, Toolbox,
};
use crate::plugin::{
    CallOutcome, Grants, GuestModule, LoadOptions, PluginError, Role, SearchOptions, ServiceError,
};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The script guest once loaded, or why it could not be.
pub(super) type Loaded = tokio::sync::OnceCell<Result<Arc<Scripter>, Arc<PluginError>>>;

impl Host {
    /// The script guest. Loading it compiles a JavaScript engine (seconds,
    /// once per machine: the compile cache keeps it), so it waits for the
    /// first script.
    pub async fn scripter(&self) -> Result<Arc<Scripter>, HostError> {
        let loaded = self
            .scripter
            .get_or_init(|| async {
                let (config, services) = self.guests.clone();
                let limits = self.config().settings.script_limits;
                let loaded = tokio::task::spawn_blocking(move || {
                    let scripter = load(&config, services, limits)?;
                    let filler = scripter.clone();
                    // Instances get ready while the first script runs.
                    std::thread::spawn(move || filler.fill());
                    Ok(scripter)
                })
                .await
                .unwrap_or_else(|e| {
                    Err(PluginError::Load {
                        guest: "script".into(),
                        message: format!("loading stopped: {e}"),
                    })
                });
                loaded.map_err(Arc::new)
            })
            .await;
        loaded.clone().map_err(HostError::Script)
    }
}

fn load(
    config: &crate::plugin::PolicyConfig,
    services: Arc<dyn crate::plugin::HostServices>,
    limits: ScriptLimits,
) -> Result<Arc<Scripter>, PluginError> {
    let options = LoadOptions {
        limits: crate::plugin::Limits {
            memory_bytes: limits.memory_bytes,
            deadline: limits.cpu,
        },
        // The toolbox is the script role's own import; nothing else is granted.
        grants: config
            .grants
            .get(&Role::Script)
            .copied()
            .unwrap_or_else(Grants::none),
        services,
        cache: config.cache.clone(),
    };
    let module = match config.guests.get(&Role::Script) {
        Some(path) => {
            let wasm = std::fs::read(path).map_err(|source| PluginError::Io {
                path: path.clone(),
                source,
            })?;
            GuestModule::load(&path.display().to_string(), &wasm, options)?
        }
        None => GuestModule::load("javascript", crate::guests::DEFAULT_SCRIPT_GUEST, options)?,
    };
    Scripter::new(module, limits)
}

/// The calls a toolbox started, on the runtime it was made on; stopped
/// (aborted) when the script ends, so that no call outlives its script.
pub struct ScriptCalls {
    runtime: tokio::runtime::Handle,
    tasks: std::sync::Mutex<Vec<tokio::task::AbortHandle>>,
}

impl ScriptCalls {
    /// Calls started on the current runtime.
    // No `Default`: this takes the current runtime, and panics outside one.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        ScriptCalls {
            runtime: tokio::runtime::Handle::current(),
            tasks: Default::default(),
        }
    }

    /// Starts `call` and keeps its handle.
    /// The call is part of the script's trace.
    pub fn spawn(&self, call: impl std::future::Future<Output = ()> + Send + 'static) {
        let task = self.runtime.spawn(crate::telemetry::carried(call));
        self.lock().push(task.abort_handle());
    }

    /// Waits for `f` from the script's (blocking) thread.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }

    /// Aborts every call still running.
    pub fn stop(&self) {
        for task in self.lock().drain(..) {
            task.abort();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<tokio::task::AbortHandle>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for ScriptCalls {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One call of a script, made for `caller` along the path every call
/// takes; its result as a script gets it, binary content kept on `shelf`
/// and replaced by a reference.
pub async fn script_call(
    host: &Host,
    caller: &Caller,
    entry: &crate::catalog::Entry,
    arguments: &str,
    options: crate::host::CallOptions,
    shelf: &Shelf,
) -> Result<CallOutcome, ServiceError> {
    let args = script_arguments(arguments)?;
    match host.run_call(caller, entry, Some(args), options).await {
        Ran::Done(Ok(raw)) => Ok(for_script_result(entry, raw, shelf)),
        Ran::Done(Err(e)) => Err(service_error(e)),
        Ran::Refused(why) | Ran::Withheld(why) => Err(ServiceError::Failed(why)),
    }
}

/// A script's arguments (JSON text) as an object, or why they are not one.
pub fn script_arguments(arguments: &str) -> Result<Map<String, Value>, ServiceError> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(ServiceError::InvalidInput(
            "arguments must be a JSON object".into(),
        )),
    }
}

/// A call's result as a script gets it: the server's blocks, or for an
/// error the agent's text of it (the tool's message or the JSON-RPC error,
/// with the expected parameters).
fn for_script_result(
    entry: &crate::catalog::Entry,
    raw: crate::host::RawResult,
    shelf: &Shelf,
) -> CallOutcome {
    let out = crate::host::present_result(entry, raw);
    let blocks: Vec<Value> = if out.is_error {
        let told = out.content.iter().map(serde_json::to_value);
        told.filter_map(Result::ok).collect()
    } else if let Some(Value::Array(contents)) = out.mcp_result.get("contents") {
        // A resource read: its text as text, binary contents as embedded
        // resources (kept below).
        contents
            .iter()
            .map(|c| match c.get("text") {
                Some(text) => json!({"type": "text", "text": text}),
                None => json!({"type": "resource", "resource": c}),
            })
            .collect()
    } else if let Some(Value::Array(blocks)) = out.mcp_result.get("content") {
        blocks.clone()
    } else {
        Vec::new()
    };
    let content = blocks.iter().map(|b| for_script(b, shelf)).collect();
    CallOutcome {
        content: Value::Array(content).to_string(),
        structured_content: out.structured_content.map(|v| v.to_string()),
        is_error: out.is_error,
    }
}

/// A content block as a script sees it: binary data (images, audio, blobs
/// of embedded resources) kept on `shelf`, and in its place its type, MIME
/// type, size and `uri`, where the session reads it (`resources/read`).
/// `uri` is null when the shelf has no room for it.
fn for_script(block: &Value, shelf: &Shelf) -> Value {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    let resource = block.get("resource").unwrap_or(&Value::Null);
    let Some((mime, data)) = crate::results::binary_of(block) else {
        if kind == "resource" {
            return json!({"type": "resource", "uri": resource.get("uri"),
                "mimeType": resource.get("mimeType"), "text": resource.get("text")});
        }
        return block.clone();
    };
    let blob = Blob {
        mime_type: mime.unwrap_or_default().to_string(),
        base64: data.into(),
    };
    let mut seen = json!({"type": kind, "mimeType": blob.mime_type, "bytes": blob.bytes()});
    if let Some(source) = resource.get("uri") {
        seen["source"] = source.clone();
    }
    seen["uri"] = json!(shelf.keep(blob));
    seen
}

/// A host error as a script's toolbox tells it.
pub fn service_error(e: HostError) -> ServiceError {
    match e {
        HostError::ToolNotFound { .. } => ServiceError::NotFound(e.to_string()),
        HostError::Lifecycle(_) => ServiceError::Unavailable(e.to_string()),
        HostError::BadArguments(_) => ServiceError::InvalidInput(e.to_string()),
        other => ServiceError::Failed(other.to_string()),
    }
}

/// A catalog entry as a script's toolbox describes it.
pub fn tool_info(e: &crate::catalog::Entry) -> ToolInfo {
    ToolInfo {
        name: e.name.clone(),
        server: e.tool.server.clone(),
        original_name: e.tool.name.clone(),
        title: e.tool.title.clone(),
        description: e.tool.description.clone(),
        input_schema: e.tool.input_schema.text().to_string(),
        output_schema: e.tool.output_schema.as_ref().map(|s| s.text().to_string()),
        annotations: e.tool.annotations.as_ref().map(|a| a.to_string()),
        kind: e.tool.kind,
    }
}

/// One file of the skill `name` (`<server>/<skill>` or its URI) among the
/// servers `sees` admits, for a script: read from the skill's own server as
/// `caller`'s read, through the pipeline (scope, guards, audit) and checked
/// against its digest. A binary file comes without its bytes.
pub async fn read_skill(
    host: &Host,
    caller: &Caller,
    name: &str,
    file: Option<&str>,
    sees: &(dyn Fn(&str) -> bool + Sync),
    options: crate::upstream::CallOptions,
) -> Result<SkillFile, ServiceError> {
    let snapshot = host.snapshot().await.map_err(service_error)?;
    let skill = snapshot.skills().find(name, sees).ok_or_else(|| {
        ServiceError::NotFound(format!("no skill {name:?}: mcp.search finds skills"))
    })?;
    let uri = skill.file_uri(file);
    let route = host
        .route_resource_within(&uri, sees)
        .await
        .map_err(service_error)?;
    let read = host
        .read_routed_as(caller, &route, options)
        .await
        .map_err(service_error)?;
    let first = read.get("contents").and_then(|c| c.get(0));
    let text = first.and_then(|c| c.get("text")).and_then(Value::as_str);
    let blob = first.and_then(|c| c.get("blob")).and_then(Value::as_str);
    Ok(SkillFile {
        uri,
        mime_type: first
            .and_then(|c| c.get("mimeType"))
            .and_then(Value::as_str)
            .map(String::from),
        text: text.map(String::from),
        // Base64 holds 3 bytes in every 4 characters.
        bytes: text.map_or(
            blob.map_or(0, |b| b.trim_end_matches('=').len() * 3 / 4),
            str::len,
        ) as u64,
    })
}

/// Every tool of the host as a script's toolbox: what the Rust API runs
/// scripts with (no session: servers' requests have nowhere to go).
struct HostToolbox {
    host: Arc<Host>,
    /// Who the script's calls are made for.
    caller: Caller,
    calls: ScriptCalls,
}

impl Toolbox for HostToolbox {
    fn start(&self, name: &str, arguments: &str, done: Done) {
        let (host, name, arguments) = (self.host.clone(), name.to_string(), arguments.to_string());
        let caller = self.caller.clone();
        self.calls.spawn(async move {
            let outcome = match host.resolve(&name).await {
                Ok(entry) => {
                    let shelf = &host.shelf;
                    script_call(
                        &host,
                        &caller,
                        &entry,
                        &arguments,
                        Default::default(),
                        shelf,
                    )
                    .await
                }
                Err(e) => Err(service_error(e)),
            };
            done(outcome);
        });
    }

    fn search(&self, query: &str, limit: u32) -> Result<Vec<ToolInfo>, ServiceError> {
        let options = SearchOptions {
            limit,
            ..Default::default()
        };
        let hits = self
            .calls
            .block_on(self.host.search_refs(query, options))
            .map_err(service_error)?;
        Ok(hits.iter().map(|h| tool_info(&h.entry)).collect())
    }

    fn describe(&self, name: &str) -> Result<ToolInfo, ServiceError> {
        self.calls
            .block_on(self.host.resolve(name))
            .map(|e| tool_info(&e))
            .map_err(service_error)
    }

    fn read_skill(&self, skill: &str, file: Option<&str>) -> Result<SkillFile, ServiceError> {
        let every = |_: &str| true;
        self.calls.block_on(read_skill(
            &self.host,
            &self.caller,
            skill,
            file,
            &every,
            Default::default(),
        ))
    }

    fn stop(&self) {
        self.calls.stop();
    }
}

impl Host {
    /// Binary content that a script run from Rust got, by the `uri` it saw
    /// in its place; none once expired or evicted.
    pub fn kept(&self, uri: &str) -> Option<Blob> {
        self.shelf.read(uri)
    }

    /// A new shelf for one session's binary content.
    pub fn new_shelf(&self) -> Shelf {
        self.kept.shelf()
    }

    /// Runs a script against every tool of the host (code mode from Rust),
    /// under the configured limits lowered to `limits` where given; `control`
    /// cancels it. Its calls take the path every call takes, as a local
    /// caller that nobody can be asked for.
    pub async fn run_script(
        self: &Arc<Self>,
        code: &str,
        limits: Option<ScriptLimits>,
        control: ScriptControl,
    ) -> Result<ScriptReport, HostError> {
        let caller = Caller {
            via: Via::Script,
            ..Caller::local(Arc::new(Unattended))
        };
        let toolbox = Arc::new(HostToolbox {
            host: self.clone(),
            caller,
            calls: ScriptCalls::new(),
        });
        self.run_script_with(code, |c| limits.unwrap_or(c), toolbox, control)
            .await
    }

    /// Runs a script with `toolbox` on a blocking thread. `limits` makes the
    /// run's limits from the configured ones; the scripter keeps each at most
    /// the configured one. Fails with [`HostError::Script`] when the script
    /// guest cannot be loaded.
    pub async fn run_script_with(
        &self,
        code: &str,
        limits: impl FnOnce(ScriptLimits) -> ScriptLimits,
        toolbox: Arc<dyn Toolbox>,
        control: ScriptControl,
    ) -> Result<ScriptReport, HostError> {
        let scripter = self.scripter().await?;
        let limits = limits(scripter.limits());
        let code = code.to_string();
        let span = crate::telemetry::Span::child("script", || {
            let mut a = vec![crate::telemetry::Attribute::new(
                "mcpw.script.bytes",
                code.len() as i64,
            )];
            a.extend(crate::telemetry::content("mcpw.script.code", &code));
            a
        });
        let servers = toolbox.servers();
        let run = span.carry(move || {
            super::services::acting_for(servers, || scripter.run(&code, limits, toolbox, &control))
        });
        tokio::task::spawn_blocking(run).await.map_err(|e| {
            HostError::Policy(PluginError::Trap {
                guest: "script".into(),
                message: format!("the script's thread failed: {e}"),
            })
        })
    }

    /// `input` projected by the jq `expression`, run by the script guest in
    /// its sandbox (a runaway expression meets its limits, not the host's);
    /// or why not, as the agent reads it.
    pub async fn select(&self, expression: &str, input: &Value) -> Result<Value, String> {
        let scripter = self
            .scripter()
            .await
            .map_err(|e| format!("select is unavailable: {e}"))?;
        let (expression, input) = (expression.to_string(), input.clone());
        tokio::task::spawn_blocking(move || scripter.select(&expression, &input))
            .await
            .map_err(|e| format!("select failed: {e}"))?
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Entry, Tool};
    use crate::host::RawResult;

    fn entry() -> Entry {
        let mut tool = Tool::new("s", "echo", "Echoes");
        tool.input_schema = json!({"type": "object", "properties": {"message": {"type": "string"}},
                                   "required": ["message"]})
        .into();
        Entry {
            name: "s__echo".into(),
            tool: tool.into(),
        }
    }

    #[test]
    fn an_error_reaches_a_script_with_its_message_and_the_expected_parameters() {
        let shelf = crate::kept::Store::new(Default::default()).shelf();
        let rpc = for_script_result(&entry(), RawResult::Rpc("invalid params".into()), &shelf);
        assert!(rpc.is_error);
        assert!(
            rpc.content.contains("Error: invalid params"),
            "{}",
            rpc.content
        );
        assert!(
            rpc.content.contains("message (string) *required*"),
            "{}",
            rpc.content
        );
        let tool_error: rmcp::model::CallToolResult = serde_json::from_value(
            json!({"content": [{"type": "text", "text": "disk full"}], "isError": true}),
        )
        .unwrap();
        let told = for_script_result(&entry(), RawResult::Tool(tool_error), &shelf);
        assert!(told.content.contains("disk full") && told.content.contains("Expected parameters"));
    }

    #[test]
    fn a_result_reaches_a_script_with_its_image_kept_as_a_reference() {
        let shelf = crate::kept::Store::new(Default::default()).shelf();
        let result: rmcp::model::CallToolResult = serde_json::from_value(json!({"content": [
            {"type": "text", "text": "here"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}))
        .unwrap();
        let out = for_script_result(&entry(), RawResult::Tool(result), &shelf);
        let blocks: Value = serde_json::from_str(&out.content).unwrap();
        assert_eq!(blocks[0], json!({"type": "text", "text": "here"}));
        assert_eq!(blocks[1]["bytes"], 3);
        assert!(!out.content.contains("AAAA"), "no bytes: {}", out.content);
        assert!(shelf.read(blocks[1]["uri"].as_str().unwrap()).is_some());
    }
}
