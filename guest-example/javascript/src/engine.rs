//! The JavaScript side of a script run, over the Boa engine and a [`Host`]
//! that reaches tools: the globals a script sees (`tools`, `mcp`, `console`),
//! and the loop that runs a script's jobs while its calls finish.
//!
//! Calls are asynchronous the simple way: `mcp.call` starts a call on the host
//! and returns a pending promise; when the script has nothing left to run, the
//! loop asks the host for the next finished call and settles its promise.
//! Calls the script starts together (`Promise.all`) run together on the host.

use boa_engine::builtins::promise::{OperationType, PromiseState, ResolvingFunctions};
use boa_engine::context::HostHooks;
use boa_engine::object::builtins::JsPromise;
use boa_engine::{
    Context, JsError, JsNativeError, JsObject, JsResult, JsString, JsValue, NativeFunction, Source,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::rc::Rc;

/// What the engine needs from the host: the `toolbox` import, natively
/// replaceable so that the loop is tested without wasm.
pub trait Host {
    /// Starts a call; its ticket, or why it cannot start.
    fn start_call(&mut self, name: &str, arguments: &str) -> Result<u32, String>;
    /// The next finished call: its ticket and its outcome as JSON text
    /// (`{"content":…,"structuredContent":…,"isError":…}` or `{"failure":…}`);
    /// `None` when no call is in flight.
    fn next_finished(&mut self) -> Option<(u32, String)>;
    /// Search hits as a JSON array text of `{name, server, declaration}`, or why not.
    fn search(&mut self, query: &str, limit: u32) -> Result<String, String>;
    /// One tool's declaration, or why not.
    fn describe(&mut self, name: &str) -> Result<String, String>;
    /// One file of a skill as JSON text (`{uri, mimeType, text, bytes}`), or
    /// why not.
    fn read_skill(&mut self, skill: &str, file: Option<&str>) -> Result<String, String> {
        let _ = file;
        Err(format!("no skill {skill:?} here"))
    }
}

/// Why a script failed, by its own fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptError {
    /// It does not parse.
    Syntax(String),
    /// It threw, or a promise it awaited was rejected (or left one rejected
    /// with nobody to handle it).
    Thrown(String),
    /// It awaits something that no call in flight can settle.
    Stalled(String),
    /// Its value cannot be written as JSON.
    InvalidValue(String),
}

/// What a run produced: the value as JSON text, and what the script logged.
#[derive(Debug)]
pub struct Outcome {
    /// The script's value (JSON text), or why it failed.
    pub value: Result<String, ScriptError>,
    /// Its log lines, in order.
    pub logs: Vec<String>,
}

/// Definitions the script's globals are made of; the native functions they
/// call start with `__`.
const PRELUDE: &str = include_str!("prelude.js");

/// Recursion depth a script may reach: deep enough for real code, and a clean
/// `RangeError` long before the sandbox's stack runs out.
const RECURSION_LIMIT: usize = 400;

/// Per-run state the native functions share: the host, the promises waiting
/// on calls, the log, and rejections nobody handled.
struct RunState {
    host: Box<dyn Host>,
    pending: HashMap<u32, ResolvingFunctions>,
    logs: Vec<String>,
}

thread_local! {
    static RUN: RefCell<Option<RunState>> = const { RefCell::new(None) };
    // Never dropped: Boa's collector is thread-local too, and may be gone
    // first when a thread ends (an instance ends with its memory anyway).
    static ENGINE: RefCell<Option<ManuallyDrop<Engine>>> = const { RefCell::new(None) };
}

/// A Boa context with the prelude loaded, and its rejection tracker.
struct Engine {
    context: Context,
    unhandled: Rc<Unhandled>,
}

/// Promises rejected with no handler yet (the host hook that tracks them).
#[derive(Default)]
struct Unhandled(RefCell<Vec<JsObject>>);

impl HostHooks for Unhandled {
    fn promise_rejection_tracker(
        &self,
        promise: &JsObject<boa_engine::builtins::promise::Promise>,
        operation: OperationType,
        _context: &mut Context,
    ) {
        let promise = promise.clone().upcast();
        let mut list = self.0.borrow_mut();
        match operation {
            OperationType::Reject => list.push(promise),
            OperationType::Handle => list.retain(|p| p != &promise),
        }
    }
}

impl Engine {
    fn new() -> Engine {
        let unhandled = Rc::new(Unhandled::default());
        let mut context = Context::builder()
            .host_hooks(unhandled.clone())
            .build()
            .expect("a Boa context builds");
        context
            .runtime_limits_mut()
            .set_recursion_limit(RECURSION_LIMIT);
        register_natives(&mut context);
        context
            .eval(Source::from_bytes(PRELUDE))
            .expect("the prelude evaluates");
        Engine { context, unhandled }
    }
}

/// Creates the engine now, so that the next [`run`] starts at once.
pub fn warm() {
    ENGINE.with(|e| {
        e.borrow_mut()
            .get_or_insert_with(|| ManuallyDrop::new(Engine::new()));
    });
}

/// Runs `code` with `host` to the end: its value, and every call it started.
pub fn run(host: Box<dyn Host>, code: &str) -> Outcome {
    warm();
    RUN.with(|r| {
        *r.borrow_mut() = Some(RunState {
            host,
            pending: HashMap::new(),
            logs: Vec::new(),
        })
    });
    let value = ENGINE.with(|e| {
        let mut engine = e.borrow_mut();
        let engine = engine.as_mut().expect("warmed above");
        run_in(engine, code)
    });
    let state = RUN.with(|r| r.borrow_mut().take()).expect("set above");
    Outcome {
        value,
        logs: state.logs,
    }
}

fn run_in(engine: &mut Engine, code: &str) -> Result<String, ScriptError> {
    let context = &mut engine.context;
    let promise = start(context, code)?;
    let settled = drive(context, &promise);
    // Calls the script started but never awaited still run to the end, so a
    // rejection among them is seen.
    drain(context);
    let value = match settled {
        Some(PromiseState::Fulfilled(v)) => v,
        Some(PromiseState::Rejected(e)) => return Err(ScriptError::Thrown(describe(context, &e))),
        Some(PromiseState::Pending) | None => {
            return Err(ScriptError::Stalled(
                "the script awaits a promise that nothing can settle (no call is in flight)".into(),
            ));
        }
    };
    if let Some(e) = first_unhandled(engine) {
        return Err(ScriptError::Thrown(format!("unhandled rejection: {e}")));
    }
    to_json(&mut engine.context, &value)
}

/// Compiles and starts the script as the body of an async function, or as one
/// expression when it is one (`tools.x({})` gives that call's value).
fn start(context: &mut Context, code: &str) -> Result<JsPromise, ScriptError> {
    // The wrapper opens on the script's first line, so error lines match its own.
    let expression = format!("(async () => ({code}\n))()");
    let body = format!("(async () => {{{code}\n}})()");
    let path = std::path::Path::new("script");
    let value = match context.eval(Source::from_bytes(&expression).with_path(path)) {
        Ok(v) => v,
        Err(e) if is_syntax(&e) => match context.eval(Source::from_bytes(&body).with_path(path)) {
            Ok(v) => v,
            Err(e) if is_syntax(&e) => return Err(ScriptError::Syntax(e.to_string())),
            Err(e) => return Err(ScriptError::Thrown(error_text(context, e))),
        },
        Err(e) => return Err(ScriptError::Thrown(error_text(context, e))),
    };
    let object = value
        .as_object()
        .and_then(|o| JsPromise::from_object(o).ok());
    object.ok_or_else(|| ScriptError::Thrown("the script did not start".into()))
}

fn is_syntax(e: &JsError) -> bool {
    e.as_native()
        .is_some_and(|n| matches!(n.kind(), boa_engine::JsNativeErrorKind::Syntax))
}

/// Runs jobs and settles finished calls until the script's promise settles,
/// or until nothing can settle it (`None`).
fn drive(context: &mut Context, promise: &JsPromise) -> Option<PromiseState> {
    loop {
        let _ = context.run_jobs();
        let state = promise.state();
        if !matches!(state, PromiseState::Pending) {
            return Some(state);
        }
        if !settle_next(context) {
            return None;
        }
    }
}

/// Waits for the rest of the calls in flight and settles their promises.
fn drain(context: &mut Context) {
    let _ = context.run_jobs();
    while settle_next(context) {
        let _ = context.run_jobs();
    }
}

/// Settles the promise of the next finished call; false when none is in flight.
fn settle_next(context: &mut Context) -> bool {
    let Some((ticket, outcome)) = with_run(|r| r.host.next_finished()) else {
        return false;
    };
    if let Some(resolving) = with_run(|r| r.pending.remove(&ticket)) {
        let text = JsValue::from(JsString::from(outcome.as_str()));
        let _ = resolving
            .resolve
            .call(&JsValue::undefined(), &[text], context);
    }
    true
}

fn first_unhandled(engine: &mut Engine) -> Option<String> {
    let first = engine.unhandled.0.borrow().first().cloned()?;
    let reason = match JsPromise::from_object(first).map(|p| p.state()) {
        Ok(PromiseState::Rejected(e)) => e,
        _ => return None,
    };
    Some(describe(&mut engine.context, &reason))
}

/// The script's value as JSON text; `undefined` and functions are `null`.
fn to_json(context: &mut Context, value: &JsValue) -> Result<String, ScriptError> {
    if value.is_undefined() {
        return Ok("null".into());
    }
    let text = call_global(context, "__toJson", std::slice::from_ref(value))
        .map_err(|e| ScriptError::InvalidValue(error_text(context, e)))?;
    Ok(text
        .to_string(context)
        .map_or_else(|_| "null".into(), |s| s.to_std_string_escaped()))
}

/// An error value as text: `Name: message`, with the script's own frames of
/// its stack when it has one.
fn describe(context: &mut Context, error: &JsValue) -> String {
    match call_global(context, "__describe", std::slice::from_ref(error)) {
        Ok(v) => v.to_string(context).map_or_else(
            |_| "error".into(),
            |s| tidy_stack(&s.to_std_string_escaped()),
        ),
        Err(_) => "an error that cannot be described".into(),
    }
}

/// Frames of a stack that most errors keep.
const MAX_FRAMES: usize = 8;

/// Keeps the first line of an error text and the stack frames in the
/// script's own code (not the prelude's or the engine's), repeats folded.
pub fn tidy_stack(text: &str) -> String {
    let mut lines = text.lines();
    let mut out = lines.next().unwrap_or_default().to_string();
    let mut last: Option<(&str, usize)> = None;
    let mut frames = 0;
    let flush = |out: &mut String, last: Option<(&str, usize)>| {
        if let Some((frame, n)) = last {
            out.push_str("\n    ");
            out.push_str(frame);
            if n > 1 {
                out.push_str(&format!(" (×{n})"));
            }
        }
    };
    for frame in lines.map(str::trim).filter(|l| l.contains("(script:")) {
        match &mut last {
            Some((f, n)) if *f == frame => *n += 1,
            _ => {
                flush(&mut out, last.take());
                frames += 1;
                if frames > MAX_FRAMES {
                    break;
                }
                last = Some((frame, 1));
            }
        }
    }
    flush(&mut out, last);
    out
}

fn error_text(context: &mut Context, error: JsError) -> String {
    if let Some(native) = error.as_native() {
        return tidy_stack(&native.to_string());
    }
    match error.into_opaque(context) {
        Ok(value) => describe(context, &value),
        Err(e) => tidy_stack(&e.to_string()),
    }
}

fn call_global(context: &mut Context, name: &str, args: &[JsValue]) -> JsResult<JsValue> {
    let global = context.global_object();
    let function = global.get(JsString::from(name), context)?;
    let function = function
        .as_callable()
        .ok_or_else(|| JsNativeError::typ().with_message(format!("{name} is missing")))?;
    function.call(&JsValue::undefined(), args, context)
}

fn with_run<R>(f: impl FnOnce(&mut RunState) -> R) -> R {
    RUN.with(|r| f(r.borrow_mut().as_mut().expect("a script is running")))
}

fn register_natives(context: &mut Context) {
    let natives: [(
        &str,
        usize,
        boa_engine::native_function::NativeFunctionPointer,
    ); 5] = [
        ("__call", 2, native_call),
        ("__search", 2, native_search),
        ("__describeTool", 1, native_describe),
        ("__readSkill", 2, native_read_skill),
        ("__log", 1, native_log),
    ];
    for (name, length, f) in natives {
        context
            .register_global_callable(JsString::from(name), length, NativeFunction::from_fn_ptr(f))
            .expect("the native functions register");
    }
}

fn arg(args: &[JsValue], i: usize, context: &mut Context) -> JsResult<String> {
    let value = args.get(i).cloned().unwrap_or_default();
    Ok(value.to_string(context)?.to_std_string_escaped())
}

/// `__call(name, argumentsJson)`: a promise of the call's outcome (JSON text).
fn native_call(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let name = arg(args, 0, context)?;
    let arguments = arg(args, 1, context)?;
    let ticket = with_run(|r| r.host.start_call(&name, &arguments))
        .map_err(|e| JsNativeError::error().with_message(e))?;
    let (promise, resolving) = JsPromise::new_pending(context);
    with_run(|r| r.pending.insert(ticket, resolving));
    Ok(promise.into())
}

/// `__search(query, limit)`: the hits as JSON text.
fn native_search(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let query = arg(args, 0, context)?;
    let limit = args.get(1).cloned().unwrap_or_default().to_u32(context)?;
    let hits = with_run(|r| r.host.search(&query, limit))
        .map_err(|e| JsNativeError::error().with_message(e))?;
    Ok(JsString::from(hits.as_str()).into())
}

/// `__describeTool(name)`: the tool's declaration.
fn native_describe(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let name = arg(args, 0, context)?;
    let tool =
        with_run(|r| r.host.describe(&name)).map_err(|e| JsNativeError::error().with_message(e))?;
    Ok(JsString::from(tool.as_str()).into())
}

/// `__readSkill(skill, file)`: the file as JSON text (`file` undefined or
/// null: its `SKILL.md`).
fn native_read_skill(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let skill = arg(args, 0, context)?;
    let file = match args.get(1) {
        Some(v) if !v.is_null_or_undefined() => Some(arg(args, 1, context)?),
        _ => None,
    };
    let read = with_run(|r| r.host.read_skill(&skill, file.as_deref()))
        .map_err(|e| JsNativeError::error().with_message(e))?;
    Ok(JsString::from(read.as_str()).into())
}

/// `__log(line)`: keeps one log line.
fn native_log(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let line = arg(args, 0, context)?;
    with_run(|r| r.logs.push(line));
    Ok(JsValue::undefined())
}
