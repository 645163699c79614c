//! Progress that arrives just before a call's result must reach the client
//! before the result does. rmcp hands every notification to a task of its
//! own, so the result can overtake the progress sent ahead of it; the client
//! then drops that progress (its request is over). The ledger counts, per
//! watched progress token, the notifications seen on the wire (in order with
//! the result) and those handled; a call waits until the two agree before it
//! answers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;

/// Longer than any progress notification.
const PROGRESS_AT_MOST: usize = 64 << 10;

/// Seen and handled progress notifications of the tokens being watched.
#[derive(Default)]
pub struct ProgressLedger {
    counts: Mutex<HashMap<String, (u64, u64)>>,
    changed: Notify,
}

impl ProgressLedger {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, (u64, u64)>) -> T) -> T {
        f(&mut self.counts.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Starts counting `token`'s notifications.
    pub fn watch(&self, token: &str) {
        self.with(|c| c.insert(token.to_string(), (0, 0)));
    }

    /// Stops counting `token`.
    pub fn forget(&self, token: &str) {
        self.with(|c| c.remove(token));
    }

    /// A notification for `token` came off the wire.
    pub fn seen(&self, token: &str) {
        self.with(|c| c.get_mut(token).map(|(seen, _)| *seen += 1));
    }

    /// A notification for `token` was handed on.
    pub fn handled(&self, token: &str) {
        if self
            .with(|c| c.get_mut(token).map(|(_, handled)| *handled += 1))
            .is_some()
        {
            self.changed.notify_waiters();
        }
    }

    /// Some notification seen for `token` is not handed on yet.
    pub fn behind(&self, token: &str) -> bool {
        self.with(|c| c.get(token).is_some_and(|(seen, handled)| handled < seen))
    }

    /// Waits, at most `within`, until every notification seen for `token`
    /// has been handed on.
    pub async fn settled(&self, token: &str, within: Duration) {
        let wait = async {
            loop {
                // Registered before the check, so a hand-on between the two
                // is not missed.
                let notified = self.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if !self.behind(token) {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(within, wait).await;
    }

    /// The progress token of a JSON-RPC message's text when it is a
    /// `notifications/progress`. A long message is a result, not progress:
    /// it is not searched.
    pub fn token_of(message: &str) -> Option<String> {
        if message.len() > PROGRESS_AT_MOST || !message.contains("notifications/progress") {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(message).ok()?;
        if v["method"] != "notifications/progress" {
            return None;
        }
        match &v["params"]["progressToken"] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_call_waits_for_the_progress_seen_before_its_result() {
        let ledger = Arc::new(ProgressLedger::default());
        ledger.watch("7");
        ledger.seen("7");
        ledger.seen("7");
        ledger.seen("other"); // not watched: not counted
        let handler = {
            let ledger = ledger.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                ledger.handled("7");
                ledger.handled("7");
            })
        };
        ledger.settled("7", Duration::from_secs(5)).await;
        assert_eq!(ledger.with(|c| c["7"]), (2, 2));
        handler.await.unwrap();
        ledger.forget("7");
        assert!(ledger.with(|c| c.is_empty()));
    }

    #[test]
    fn finds_the_token_of_a_progress_notification_only() {
        let n = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1}}"#;
        assert_eq!(ProgressLedger::token_of(n), Some("3".into()));
        let r = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"notifications/progress"}]}}"#;
        assert_eq!(ProgressLedger::token_of(r), None);
    }
}
