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

use super::events::LogMessage;
use super::handler::{ProgressRoutes, ProgressUpdate};
use crate::log_level::LogLevel;
use std::sync::atomic::Ordering;

/// Longer than any progress or log notification mcpw passes on: a longer
/// message is a result, and is not searched.
const PROGRESS_AT_MOST: usize = 64 << 10;

/// Hands `message` to its call when it is a `notifications/progress` for a
/// call in flight.
pub fn route(routes: &ProgressRoutes, message: &str) {
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
    let route = super::origin::lock(&routes.calls).get(&token).cloned();
    if let Some(tx) = route {
        let _ = tx.send(update);
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
}
