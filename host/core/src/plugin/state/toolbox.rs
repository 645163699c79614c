//! The script role's side of a guest store: what a script reaches (a
//! [`Toolbox`]), its limits, and the state of one run that the `toolbox`
//! imports work on (tickets, calls waiting for a place, the channel finished
//! calls come back on), with the limits checked there.

use super::{GuestState, service_error};
use crate::config::ScriptLimits;
use crate::plugin::limits::LimitHit;
use crate::plugin::services::{CallOutcome, ServiceError};
use crate::plugin::wit::latest::mcpw::plugin::{toolbox as wit, types};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A tool a script may call, as the toolbox describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolInfo {
    /// Agent-facing name.
    pub name: String,
    /// Its server.
    pub server: String,
    /// The server's own name for it.
    pub original_name: String,
    /// Title, when given.
    pub title: Option<String>,
    /// Description.
    pub description: String,
    /// Input schema, JSON text.
    pub input_schema: String,
    /// Output schema, JSON text, when declared.
    pub output_schema: Option<String>,
    /// Annotations, JSON text, when given.
    pub annotations: Option<String>,
    /// Tool, resource tool, or (among search hits only) skill.
    pub kind: crate::catalog::ToolKind,
}

/// One file of a skill, as a script reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFile {
    /// Its URI as clients read it.
    pub uri: String,
    /// Its MIME type, when given.
    pub mime_type: Option<String>,
    /// Its text; none for a binary file.
    pub text: Option<String>,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Called once with a started call's outcome, from any thread.
pub type Done = Box<dyn FnOnce(Result<CallOutcome, ServiceError>) + Send>;

/// What a script reaches: the tools of the session it runs for.
pub trait Toolbox: Send + Sync {
    /// Starts calling `name` with `arguments` (a JSON object text) and
    /// returns at once; `done` gets the outcome.
    fn start(&self, name: &str, arguments: &str, done: Done);
    /// Search hits among the tools the session sees, best first.
    fn search(&self, query: &str, limit: u32) -> Result<Vec<ToolInfo>, ServiceError>;
    /// One tool by its agent-facing name.
    fn describe(&self, name: &str) -> Result<ToolInfo, ServiceError>;
    /// One file of a skill the session sees (`file`: `SKILL.md` when none),
    /// from the skill's own server, checked against its digest.
    fn read_skill(&self, skill: &str, file: Option<&str>) -> Result<SkillFile, ServiceError> {
        let _ = file;
        Err(ServiceError::NotFound(format!("no skill {skill:?} here")))
    }
    /// Stops the calls still in flight: the script has ended.
    fn stop(&self);
    /// The servers the session sees (`None`: every one): what the script
    /// guest's own imports reach is limited to them.
    fn servers(&self) -> Option<std::sync::Arc<std::collections::BTreeSet<String>>> {
        None
    }
}

/// One call a script made, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CallRecord {
    /// The tool's agent-facing name.
    pub tool: String,
    /// `ok`, `tool error`, `failed: …`, or `unfinished`.
    pub outcome: String,
    /// How long it took, when it finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
}

enum Event {
    Finished(u32, Result<CallOutcome, ServiceError>),
    Cancelled,
}

/// Stops a run from another thread: the client cancelled.
#[derive(Clone)]
pub struct ScriptControl {
    cancelled: Arc<AtomicBool>,
    wake: Arc<Mutex<Option<Sender<Event>>>>,
}

impl Default for ScriptControl {
    fn default() -> Self {
        ScriptControl {
            cancelled: Arc::new(AtomicBool::new(false)),
            wake: Arc::new(Mutex::new(None)),
        }
    }
}

impl ScriptControl {
    /// Cancels the run: it stops at its next step, and its calls are stopped.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        if let Some(tx) = self.wake.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            let _ = tx.send(Event::Cancelled);
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
}

/// The state of the run a store is doing (in [`GuestState`]).
pub(crate) struct Run {
    toolbox: Arc<dyn Toolbox>,
    limits: ScriptLimits,
    started: Instant,
    control: ScriptControl,
    tx: Sender<Event>,
    rx: Receiver<Event>,
    /// Tickets started on the toolbox and not yet finished.
    in_flight: usize,
    /// Calls waiting for a place: ticket, name, arguments.
    waiting: VecDeque<(u32, String, String)>,
    records: Vec<(CallRecord, Instant)>,
}

impl Run {
    /// Whether the run must stop now (wall time or cancellation), and why.
    pub(crate) fn interrupt(&self) -> Option<Stop> {
        if self.control.is_cancelled() {
            Some(Stop::Cancelled)
        } else if self.started.elapsed() >= self.limits.wall {
            Some(Stop::Limit(LimitHit::WallTime(self.limits.wall)))
        } else {
            None
        }
    }

    fn begin(&mut self, ticket: u32, name: String, arguments: String) {
        let tx = self.tx.clone();
        self.in_flight += 1;
        self.records[ticket as usize].1 = Instant::now();
        self.toolbox.start(
            &name,
            &arguments,
            Box::new(move |outcome| {
                let _ = tx.send(Event::Finished(ticket, outcome));
            }),
        );
    }

    fn finish(&mut self, ticket: u32, outcome: &Result<CallOutcome, ServiceError>) {
        self.in_flight -= 1;
        let (record, began) = &mut self.records[ticket as usize];
        record.ms = Some(began.elapsed().as_millis() as u64);
        record.outcome = match outcome {
            Ok(o) if o.is_error => "tool error".into(),
            Ok(_) => "ok".into(),
            Err(e) => format!("failed: {e}"),
        };
        if let Some((t, n, a)) = self.waiting.pop_front() {
            self.begin(t, n, a);
        }
    }
}

/// Why the host stopped a run.
pub(crate) enum Stop {
    Limit(LimitHit),
    Cancelled,
}

impl GuestState {
    fn run_mut(&mut self) -> Result<&mut Run, types::PluginError> {
        self.script
            .as_mut()
            .ok_or_else(|| types::PluginError::Unavailable("no script is running".into()))
    }

    /// Records why the run stops and traps.
    fn stop(&mut self, stop: Stop) -> wasmtime::Error {
        let text = match &stop {
            Stop::Limit(hit) => format!("script exceeded its {hit}"),
            Stop::Cancelled => "script cancelled".into(),
        };
        self.stopped = Some(stop);
        wasmtime::Error::msg(text)
    }
}

impl wit::Host for GuestState {
    fn start_call(
        &mut self,
        name: String,
        arguments: String,
    ) -> wasmtime::Result<Result<u32, types::PluginError>> {
        let run = match self.run_mut() {
            Ok(run) => run,
            Err(e) => return Ok(Err(e)),
        };
        if run.records.len() >= run.limits.calls as usize {
            let hit = LimitHit::Calls(run.limits.calls);
            return Err(self.stop(Stop::Limit(hit)));
        }
        let ticket = run.records.len() as u32;
        run.records.push((
            CallRecord {
                tool: name.clone(),
                outcome: "unfinished".into(),
                ms: None,
            },
            Instant::now(),
        ));
        if run.in_flight < run.limits.concurrency as usize {
            run.begin(ticket, name, arguments);
        } else {
            run.waiting.push_back((ticket, name, arguments));
        }
        Ok(Ok(ticket))
    }

    fn next_finished(&mut self) -> wasmtime::Result<Option<wit::Finished>> {
        let started = Instant::now();
        let result = self.wait_finished();
        self.add_host_time(started.elapsed());
        result
    }

    fn search(
        &mut self,
        query: String,
        limit: u32,
    ) -> Result<Vec<wit::ToolInfo>, types::PluginError> {
        let toolbox = self.run_mut()?.toolbox.clone();
        let hits = self
            .waited(|_| toolbox.search(&query, limit.min(50)))
            .map_err(service_error)?;
        Ok(hits.iter().map(wit_tool_info).collect())
    }

    fn describe(&mut self, name: String) -> Result<wit::ToolInfo, types::PluginError> {
        let toolbox = self.run_mut()?.toolbox.clone();
        self.waited(|_| toolbox.describe(&name))
            .map(|t| wit_tool_info(&t))
            .map_err(service_error)
    }

    fn read_skill(
        &mut self,
        skill: String,
        file: Option<String>,
    ) -> Result<wit::SkillFile, types::PluginError> {
        let toolbox = self.run_mut()?.toolbox.clone();
        self.waited(|_| toolbox.read_skill(&skill, file.as_deref()))
            .map(|f| wit::SkillFile {
                uri: f.uri,
                mime_type: f.mime_type,
                text: f.text,
                bytes: f.bytes,
            })
            .map_err(service_error)
    }
}

impl GuestState {
    fn wait_finished(&mut self) -> wasmtime::Result<Option<wit::Finished>> {
        let Some(run) = self.script.as_mut() else {
            return Ok(None);
        };
        if run.in_flight == 0 {
            return Ok(None);
        }
        let left = run.limits.wall.saturating_sub(run.started.elapsed());
        let event = match run.rx.recv_timeout(left) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => {
                let hit = LimitHit::WallTime(run.limits.wall);
                return Err(self.stop(Stop::Limit(hit)));
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        };
        match event {
            Event::Cancelled => Err(self.stop(Stop::Cancelled)),
            Event::Finished(ticket, outcome) => {
                run.finish(ticket, &outcome);
                let outcome = outcome.map(wit_outcome).map_err(service_error);
                Ok(Some(wit::Finished { ticket, outcome }))
            }
        }
    }
}

fn wit_outcome(o: CallOutcome) -> wit::CallOutcome {
    wit::CallOutcome {
        content: o.content,
        structured_content: o.structured_content,
        is_error: o.is_error,
    }
}

pub(crate) fn wit_tool_info(t: &ToolInfo) -> wit::ToolInfo {
    wit::ToolInfo {
        name: t.name.clone(),
        server: t.server.clone(),
        original_name: t.original_name.clone(),
        title: t.title.clone(),
        description: t.description.clone(),
        input_schema: t.input_schema.clone(),
        output_schema: t.output_schema.clone(),
        annotations: t.annotations.clone(),
        kind: match t.kind {
            crate::catalog::ToolKind::Tool => types::ToolKind::Tool,
            crate::catalog::ToolKind::Resource => types::ToolKind::Resource,
            crate::catalog::ToolKind::Skill => types::ToolKind::Skill,
        },
    }
}

impl Run {
    /// A run of a script under `limits`, its calls going to `toolbox`,
    /// stopped early by `control`.
    pub(crate) fn new(
        toolbox: Arc<dyn Toolbox>,
        limits: ScriptLimits,
        control: &ScriptControl,
    ) -> Run {
        let (tx, rx) = channel();
        *control.wake.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx.clone());
        Run {
            toolbox,
            limits,
            started: Instant::now(),
            control: control.clone(),
            tx,
            rx,
            in_flight: 0,
            waiting: VecDeque::new(),
            records: Vec::new(),
        }
    }

    /// The calls made, in order, with their outcomes.
    pub(crate) fn into_records(self) -> Vec<CallRecord> {
        *self.control.wake.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.records.into_iter().map(|(c, _)| c).collect()
    }
}

impl ScriptControl {
    /// Whether the run was cancelled.
    pub(crate) fn cancelled(&self) -> bool {
        self.is_cancelled()
    }
}
