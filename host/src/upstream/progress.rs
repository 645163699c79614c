//! Progress read off the wire, handed to its call in the order it came.
//!
//! rmcp hands every notification to a task of its own, so progress a server
//! sends at once (one that flushes it together with the result, as the
//! conformance suite's reference server does) could reach the client out of
//! order, or after the result, which the client then drops. Every transport
//! reads messages in order (Streamable HTTP, stdio, legacy SSE): each routes
//! progress here as it reads it, before rmcp sees what follows.

use super::handler::{ProgressRoutes, ProgressUpdate};

/// Longer than any progress notification: a longer message is a result, and
/// is not searched.
const PROGRESS_AT_MOST: usize = 64 << 10;

/// Hands `message` to its call when it is a `notifications/progress` for a
/// call in flight.
pub fn route(routes: &ProgressRoutes, message: &str) {
    let Some((token, update)) = parse(message) else {
        return;
    };
    let route = super::origin::lock(routes).get(&token).cloned();
    if let Some(tx) = route {
        let _ = tx.send(update);
    }
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
        routes.lock().unwrap().insert("3".into(), tx);
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
