//! What a session hears without asking: the list changes and resource updates
//! that concern it, and log messages of the servers its client sees, at the
//! level it set.

use super::{ClientScope, Gateway, listen, watching};
use crate::log_level::LogLevel;
use crate::servers::ServerEvent;
use rmcp::service::RoleServer;
use serde_json::json;
use std::sync::{Arc, Mutex, Weak};

/// Forwards the host's events to one session until it ends. `watching` is
/// weak: the session's subscriptions end with the session, not with this task.
pub(super) fn spawn(
    shared: &Gateway,
    peer: rmcp::Peer<RoleServer>,
    watching: Weak<watching::Watching>,
    log_level: Arc<Mutex<Option<LogLevel>>>,
    client: ClientScope,
) {
    let mut events = shared.host.servers().subscribe();
    let host = shared.host.clone();
    let exposed = shared.exposed();
    // A quiet host sends no events: the session's end is checked every
    // few seconds, so that the task and what it holds go with the session.
    let mut check = tokio::time::interval(std::time::Duration::from_secs(5));
    tokio::spawn(async move {
        loop {
            let received = tokio::select! {
                received = events.recv() => received,
                _ = check.tick() => {
                    if peer.is_transport_closed() || watching.strong_count() == 0 {
                        return;
                    }
                    continue;
                }
            };
            match received {
                Ok(ServerEvent::Log { server, message }) => {
                    let wanted = *log_level.lock().unwrap_or_else(|p| p.into_inner());
                    if client.allows(&server)
                        && wanted.is_some_and(|w| w.admits(message.level))
                        && log_forward(&peer, &server, message).await.is_err()
                    {
                        return;
                    }
                }
                Ok(event) => {
                    let Some(watching) = watching.upgrade() else {
                        return;
                    };
                    for n in listen::changes(&host, exposed, &watching, &event).await {
                        if peer.send_notification(n).await.is_err() {
                            return;
                        }
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => return,
            }
        }
    });
}

/// A server's log message to a session, the logger named after the server
/// (`<server>` or `<server>/<its logger>`).
#[allow(deprecated)] // logging is in every revision before 2026-07-28
pub(super) async fn log_forward(
    peer: &rmcp::Peer<RoleServer>,
    server: &str,
    message: crate::servers::LogMessage,
) -> Result<(), rmcp::service::ServiceError> {
    let logger = match message.logger {
        Some(l) => format!("{server}/{l}"),
        None => server.to_string(),
    };
    let params = json!({"level": message.level, "logger": logger, "data": message.data});
    match serde_json::from_value(params) {
        Ok(params) => peer.notify_logging_message(params).await,
        Err(_) => Ok(()),
    }
}
