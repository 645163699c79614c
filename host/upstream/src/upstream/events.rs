//! What upstream servers tell the host, on its way to the host's event loop.
//!
//! Changes (list_changed, resource updates) always get through; the host folds
//! repeats. Log messages go on only at or above the most verbose level a
//! session asked for (none before one asks), and are bounded: past
//! [`LOG_BACKLOG`] waiting, more are dropped and counted, so a server flooding
//! them costs memory in proportion to the backlog, not to the flood. rmcp hands
//! each notification to a task of its own and cannot be slowed down, so the
//! bound has to be here.

use crate::log_level::LogLevel;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// Log messages waiting for the host's event loop, across all servers, before
/// more are dropped.
pub const LOG_BACKLOG: usize = 1024;

/// Something an upstream server told us.
#[derive(Clone, Debug, PartialEq)]
pub enum UpstreamEvent {
    /// `notifications/tools/list_changed` (or resources) from this server.
    ListChanged(String),
    /// `notifications/resources/updated`: (server, the server's URI).
    ResourceUpdated(String, String),
    /// `notifications/message` from this server.
    Log(String, LogMessage),
}

/// A server's log message.
#[derive(Clone, Debug, PartialEq)]
pub struct LogMessage {
    /// Its severity.
    pub level: LogLevel,
    /// The server's logger name, if it gave one.
    pub logger: Option<String>,
    /// The message.
    pub data: serde_json::Value,
}

/// The sending side, one per host, cloned into every connection.
#[derive(Clone)]
pub struct EventSender {
    tx: mpsc::UnboundedSender<UpstreamEvent>,
    logs_waiting: Arc<LogsWaiting>,
    /// The least severe level wanted, as `level as u8 + 1`; 0 for none.
    wanted: Arc<AtomicU8>,
}

/// The host's side.
pub struct EventReceiver {
    rx: mpsc::UnboundedReceiver<UpstreamEvent>,
    logs_waiting: Arc<LogsWaiting>,
}

/// Log messages sent and not yet passed on by the host, and a signal when
/// none is left.
#[derive(Default)]
struct LogsWaiting {
    count: AtomicUsize,
    none: tokio::sync::Notify,
}

impl LogsWaiting {
    fn fetch_add(&self, n: usize, order: Ordering) -> usize {
        self.count.fetch_add(n, order)
    }

    fn fetch_sub(&self, n: usize, order: Ordering) -> usize {
        let was = self.count.fetch_sub(n, order);
        if was == n {
            self.none.notify_waiters();
        }
        was
    }
}

/// A new channel.
pub fn channel() -> (EventSender, EventReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let logs_waiting = Arc::new(LogsWaiting::default());
    (
        EventSender {
            tx,
            logs_waiting: logs_waiting.clone(),
            wanted: Arc::new(AtomicU8::new(0)),
        },
        EventReceiver { rx, logs_waiting },
    )
}

impl EventSender {
    /// Sends a change; false once the host is gone.
    pub fn change(&self, event: UpstreamEvent) -> bool {
        self.tx.send(event).is_ok()
    }

    /// Log messages of `level` and above are wanted from now on.
    pub fn want(&self, level: LogLevel) {
        self.wanted.store(level as u8 + 1, Ordering::Release);
    }

    /// Sends a log message if its level is wanted, unless [`LOG_BACKLOG`] are
    /// already waiting: then it is dropped and `dropped` counts it. False if
    /// it was not sent.
    pub fn log(&self, server: &str, message: LogMessage, dropped: &AtomicU64) -> bool {
        let wanted = self.wanted.load(Ordering::Acquire);
        if wanted == 0 || (message.level as u8) < wanted - 1 {
            return false;
        }
        if self.logs_waiting.fetch_add(1, Ordering::AcqRel) >= LOG_BACKLOG {
            self.logs_waiting.fetch_sub(1, Ordering::AcqRel);
            let n = dropped.fetch_add(1, Ordering::Relaxed);
            // Said at the first drop and every 10,000th after, not per message.
            if n.is_multiple_of(10_000) {
                tracing::warn!(
                    server,
                    "log messages come faster than mcpw relays them; dropping some ({} so far)",
                    n + 1
                );
            }
            return false;
        }
        let sent = self
            .tx
            .send(UpstreamEvent::Log(server.to_string(), message));
        if sent.is_err() {
            self.logs_waiting.fetch_sub(1, Ordering::AcqRel);
        }
        sent.is_ok()
    }
}

impl EventSender {
    /// Once every log message sent before this call has been passed on by
    /// the host ([`EventReceiver::passed_on`]): a transport sends a message
    /// as it reads it, so one a server sent before its answer has reached
    /// the host's subscribers once this returns after that answer.
    pub async fn logs_passed_on(&self) {
        loop {
            let none = self.logs_waiting.none.notified();
            if self.logs_waiting.count.load(Ordering::Acquire) == 0 {
                return;
            }
            none.await;
        }
    }
}

impl EventReceiver {
    /// The next event; `None` once every sender is gone. A log message
    /// counts as waiting until [`EventReceiver::passed_on`].
    pub async fn recv(&mut self) -> Option<UpstreamEvent> {
        self.rx.recv().await
    }

    /// A log message [`EventReceiver::recv`] gave has been passed on.
    pub fn passed_on(&self) {
        self.logs_waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(i: usize) -> LogMessage {
        LogMessage {
            level: LogLevel::Info,
            logger: None,
            data: i.into(),
        }
    }

    #[test]
    fn only_wanted_levels_are_sent() {
        let (tx, _rx) = channel();
        let dropped = AtomicU64::new(0);
        let at = |level| LogMessage {
            level,
            ..message(0)
        };
        assert!(
            !tx.log("s", at(LogLevel::Emergency), &dropped),
            "none wanted yet"
        );
        tx.want(LogLevel::Warning);
        assert!(!tx.log("s", at(LogLevel::Info), &dropped));
        assert!(tx.log("s", at(LogLevel::Warning), &dropped));
        assert!(tx.log("s", at(LogLevel::Error), &dropped));
        tx.want(LogLevel::Debug);
        assert!(tx.log("s", at(LogLevel::Debug), &dropped));
        assert_eq!(
            dropped.load(Ordering::Relaxed),
            0,
            "not wanted is not dropped"
        );
    }

    #[tokio::test]
    async fn logs_past_the_backlog_are_dropped_and_changes_never_are() {
        let (tx, mut rx) = channel();
        tx.want(LogLevel::Debug);
        let dropped = AtomicU64::new(0);
        let sent = (0..LOG_BACKLOG + 10)
            .filter(|&i| tx.log("s", message(i), &dropped))
            .count();
        assert_eq!(sent, LOG_BACKLOG);
        assert_eq!(dropped.load(Ordering::Relaxed), 10);
        assert!(tx.change(UpstreamEvent::ListChanged("s".into())));
        for i in 0..LOG_BACKLOG {
            assert_eq!(
                rx.recv().await,
                Some(UpstreamEvent::Log("s".into(), message(i)))
            );
        }
        assert_eq!(
            rx.recv().await,
            Some(UpstreamEvent::ListChanged("s".into()))
        );
        // Taken, not yet passed on: still waiting, no room.
        assert!(!tx.log("s", message(0), &dropped));
        let passed = tx.clone();
        let waiter = tokio::spawn(async move { passed.logs_passed_on().await });
        (0..LOG_BACKLOG).for_each(|_| rx.passed_on());
        // Passed on: the waiter is told, and there is room again.
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("told once every message was passed on")
            .unwrap();
        assert!(tx.log("s", message(0), &dropped));
    }
}
