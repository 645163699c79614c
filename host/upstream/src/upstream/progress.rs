//! Progress and log messages read off the wire, handed on in the order
//! they came.
//!
//! rmcp hands every notification to a task of its own, so progress a server
//! sends at once (one that flushes it together with the result, as the
//! conformance suite's reference server does) could reach the client out of
//! order, or after the result, which the client then drops; so could a log
//! message sent just before a result, which a client of 2026-07-28 hears
//! only on that request's stream. Every transport reads messages in order
//! (Streamable HTTP, stdio, legacy SSE, a component's pipes): each routes
//! them here as it reads them, before rmcp sees what follows.
//!
//! A call's route is known only once rmcp has queued its request (rmcp picks
//! the progress token then), so a server that answers at once may be read
//! before the route is in place: while a call with progress is being sent,
//! progress for no route is held (up to [`HELD_AT_MOST`]) and handed to the
//! call when its route comes.

use super::events::LogMessage;
use crate::log_level::LogLevel;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// A progress notification of an upstream call.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressUpdate {
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A message, when given.
    pub message: Option<String>,
}

/// What each transport hands over as it reads a message, before rmcp (which
/// hands every notification to a task of its own) sees what follows.
pub(crate) type ProgressRoutes = Arc<Wire>;

/// Where a connection's transport hands what it reads in order.
#[derive(Default)]
pub(crate) struct Wire {
    /// Progress of in-flight calls, by the token mcpw gave each call.
    pub calls: Mutex<HashMap<String, mpsc::UnboundedSender<ProgressUpdate>>>,
    /// Progress read before its call's route was in place (see
    /// [`sending`]); locked after `calls`, never before.
    held: Mutex<Held>,
    /// Where the server's log messages go (set by the connection's handler).
    pub logs: std::sync::OnceLock<Box<dyn Fn(LogMessage) + Send + Sync>>,
    /// Whether the transport reads the wire (else rmcp's handler passes log
    /// messages on).
    pub read: std::sync::atomic::AtomicBool,
}

/// Longer than any progress or log notification mcpw passes on: a longer
/// message is a result, and is not searched.
const PROGRESS_AT_MOST: usize = 64 << 10;

/// Progress notifications held for calls being sent, at most; the oldest go
/// first. A call's route comes right after its request is queued, so only a
/// server sending progress for calls that asked none could fill this.
const HELD_AT_MOST: usize = 256;

/// Progress read before its call's route, while calls with progress are
/// being sent.
#[derive(Default)]
struct Held {
    /// Calls with progress being sent, whose route is not in place yet.
    sending: usize,
    /// By token, in the order read.
    updates: VecDeque<(String, ProgressUpdate)>,
}

/// Hands `message` to its call when it is a `notifications/progress` for a
/// call in flight.
pub(crate) fn route(routes: &ProgressRoutes, message: &str) {
    routes.read.store(true, Ordering::Relaxed);
    if let Some(sink) = routes.logs.get()
        && let Some(log) = log_message(message)
    {
        sink(log);
        return;
    }
    let Some((token, update)) = parse(message) else {
        return;
    };
    // One lock over looking up and holding: a route put in place meanwhile
    // (see [`Sending::route`]) would miss what is held after it looked.
    let calls = super::origin::lock(&routes.calls);
    match calls.get(&token) {
        Some(tx) => {
            let _ = tx.send(update);
        }
        None => super::origin::lock(&routes.held).hold(token, update),
    }
}

impl Held {
    fn hold(&mut self, token: String, update: ProgressUpdate) {
        if self.sending == 0 {
            return;
        }
        if self.updates.len() >= HELD_AT_MOST {
            self.updates.pop_front();
        }
        self.updates.push_back((token, update));
    }
}

/// A call with progress about to be sent: progress read for it before its
/// route is held for it until [`Sending::route`] or drop.
pub(crate) struct Sending {
    wire: ProgressRoutes,
}

/// Counts a call with progress as being sent on `wire`.
pub(crate) fn sending(wire: &ProgressRoutes) -> Sending {
    super::origin::lock(&wire.held).sending += 1;
    Sending { wire: wire.clone() }
}

impl Sending {
    /// Routes the progress of token `key` to `tx` from now on, after what was
    /// read for it before, in the order read.
    pub(crate) fn route(self, key: String, tx: mpsc::UnboundedSender<ProgressUpdate>) -> Route {
        let wire = self.wire.clone();
        {
            let mut calls = super::origin::lock(&wire.calls);
            let mut held = super::origin::lock(&wire.held);
            held.updates.retain(|(token, update)| {
                let mine = *token == key;
                if mine {
                    let _ = tx.send(update.clone());
                }
                !mine
            });
            calls.insert(key.clone(), tx);
        }
        Route { wire, key }
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        let mut held = super::origin::lock(&self.wire.held);
        held.sending -= 1;
        if held.sending == 0 {
            // Nobody is left to claim them.
            held.updates.clear();
        }
    }
}

/// A call's progress route, removed when dropped.
pub(crate) struct Route {
    wire: ProgressRoutes,
    key: String,
}

impl Drop for Route {
    fn drop(&mut self) {
        super::origin::lock(&self.wire.calls).remove(&self.key);
    }
}

/// The log message a `notifications/message`'s text carries.
fn log_message(message: &str) -> Option<LogMessage> {
    if message.len() > PROGRESS_AT_MOST || !message.contains("notifications/message") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(message).ok()?;
    if v["method"] != "notifications/message" {
        return None;
    }
    let params = &v["params"];
    Some(LogMessage {
        level: LogLevel::of(&params["level"])?,
        logger: params["logger"].as_str().map(str::to_string),
        data: params["data"].clone(),
    })
}

/// The token and update of a progress notification's text.
fn parse(message: &str) -> Option<(String, ProgressUpdate)> {
    if message.len() > PROGRESS_AT_MOST || !message.contains("notifications/progress") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(message).ok()?;
    if v["method"] != "notifications/progress" {
        return None;
    }
    let params = &v["params"];
    let token = match &params["progressToken"] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let update = ProgressUpdate {
        progress: params["progress"].as_f64()?,
        total: params["total"].as_f64(),
        message: params["message"].as_str().map(str::to_string),
    };
    Some((token, update))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_goes_to_its_call_in_the_order_read_and_nothing_else_does() {
        let routes = ProgressRoutes::default();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        routes.calls.lock().unwrap().insert("3".into(), tx);
        for p in [0, 50, 100] {
            route(
                &routes,
                &format!(
                    r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":3,"progress":{p},"total":100}}}}"#
                ),
            );
        }
        route(
            &routes,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"other","progress":1}}"#,
        );
        route(
            &routes,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"notifications/progress"}]}}"#,
        );
        let got: Vec<f64> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|u| u.progress)
            .collect();
        assert_eq!(got, vec![0.0, 50.0, 100.0]);
    }

    fn progress(token: &str, p: usize) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"{token}","progress":{p}}}}}"#
        )
    }

    /// Progress for no route waits only while a call with progress is being
    /// sent, and never more than [`HELD_AT_MOST`] of it.
    #[test]
    fn progress_before_its_route_is_held_for_the_call_being_sent_and_bounded() {
        let wire = ProgressRoutes::default();
        route(&wire, &progress("2", 0));
        let call = sending(&wire);
        route(&wire, &progress("2", 1));
        // A server reporting on calls that asked for no progress.
        for p in 0..HELD_AT_MOST {
            route(&wire, &progress("other", p));
        }
        route(&wire, &progress("2", 2));
        assert_eq!(wire.held.lock().unwrap().updates.len(), HELD_AT_MOST);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let _route = call.route("2".into(), tx);
        route(&wire, &progress("2", 3));
        let got: Vec<f64> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|u| u.progress)
            .collect();
        // 0 came before the call was sent; 1 was pushed out by the flood.
        assert_eq!(got, [2.0, 3.0]);
        assert!(
            wire.held.lock().unwrap().updates.is_empty(),
            "nobody is left to claim the rest"
        );
    }
}
