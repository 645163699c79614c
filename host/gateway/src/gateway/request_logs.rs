//! Log messages for a client of the stateless revision (2026-07-28), which
//! asks for them per request (`io.modelcontextprotocol/logLevel` in `_meta`)
//! instead of with `logging/setLevel`: the messages its servers send while its
//! tool call, prompt or read runs, at or above that level, go on that
//! request's own stream.
//! Servers are asked for that level as for a session's (see
//! [`crate::servers::Servers::set_log_level`]).

use super::{ClientScope, Session, session_events};
use crate::log_level::LogLevel;
use crate::servers::ServerEvent;
use rmcp::service::{RequestContext, RoleServer};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

/// How long a request's answer waits at most for the log messages that
/// came before it to be passed on.
const LOGS_PASSED_ON_WITHIN: std::time::Duration = std::time::Duration::from_millis(250);

impl Session {
    /// Runs `call`, passing on the log messages the request asked for: of
    /// `only` that server when the request goes to one alone (a server's
    /// tool, a prompt, a read), else of every server the client sees (mcpw's
    /// own tools may reach several, through `mcp` or a script).
    pub(super) async fn with_request_logs<T>(
        &self,
        context: &RequestContext<RoleServer>,
        only: Option<String>,
        call: impl Future<Output = T>,
    ) -> T {
        // A session of the handshake era hears its logs on the session.
        let asked = context.meta.log_level().as_ref().and_then(LogLevel::of);
        let Some(level) = asked.filter(|_| !self.has_session()) else {
            return call.await;
        };
        let client = &self.client(&context.extensions);
        let wanted = Wanted {
            client,
            only: only.as_deref(),
            level,
        };
        let servers = self.shared.host.servers();
        let mut events = servers.subscribe();
        servers.set_log_level(level).await;
        let forward = forward(&mut events, &wanted, context);
        let out = tokio::select! {
            out = call => out,
            () = forward => unreachable!("forwarding ends only with the host"),
        };
        // What came in before the result: each transport hands a log
        // message on as it reads it, so by now it is on its way to the
        // subscribers; waited for a little at most (a flood of other
        // servers' messages need not end).
        let passed_on = servers.logs_passed_on();
        let _ = tokio::time::timeout(LOGS_PASSED_ON_WITHIN, passed_on).await;
        let _ = drain(&mut events, &wanted, context).await;
        out
    }

    fn has_session(&self) -> bool {
        let session = self
            .state
            .registered
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        session.is_some()
    }
}

/// Which log messages a request gets.
struct Wanted<'a> {
    client: &'a ClientScope,
    /// The one server the request goes to, if it goes to one.
    only: Option<&'a str>,
    level: LogLevel,
}

impl Wanted<'_> {
    /// `event`, when it is a log message the request gets.
    fn of(&self, event: ServerEvent) -> Option<(String, crate::servers::LogMessage)> {
        match event {
            ServerEvent::Log { server, message }
                if self.client.allows(&server)
                    && self.only.is_none_or(|o| o == server)
                    && self.level.admits(message.level) =>
            {
                Some((server, message))
            }
            _ => None,
        }
    }
}

async fn forward(
    events: &mut Receiver<ServerEvent>,
    wanted: &Wanted<'_>,
    context: &RequestContext<RoleServer>,
) {
    loop {
        match events.recv().await {
            Ok(event) => {
                if let Some((server, message)) = wanted.of(event) {
                    let _ = session_events::log_forward(&context.peer, &server, message).await;
                }
            }
            Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => std::future::pending().await,
        }
    }
}

async fn drain(
    events: &mut Receiver<ServerEvent>,
    wanted: &Wanted<'_>,
    context: &RequestContext<RoleServer>,
) -> Result<(), TryRecvError> {
    loop {
        match events.try_recv() {
            Ok(event) => {
                if let Some((server, message)) = wanted.of(event) {
                    let _ = session_events::log_forward(&context.peer, &server, message).await;
                }
            }
            Err(TryRecvError::Lagged(_)) => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::LogMessage;

    fn log(server: &str, level: LogLevel) -> ServerEvent {
        let message = LogMessage {
            level,
            logger: None,
            data: serde_json::json!("m"),
        };
        ServerEvent::Log {
            server: server.into(),
            message,
        }
    }

    #[test]
    fn a_request_gets_its_servers_messages_at_its_level() {
        let client = ClientScope::only("c", ["a".to_string(), "b".to_string()]);
        let read = Wanted {
            client: &client,
            only: Some("a"),
            level: LogLevel::Info,
        };
        assert!(read.of(log("a", LogLevel::Warning)).is_some());
        assert!(
            read.of(log("a", LogLevel::Debug)).is_none(),
            "below its level"
        );
        assert!(
            read.of(log("b", LogLevel::Error)).is_none(),
            "another server"
        );
        let call = Wanted { only: None, ..read };
        assert!(call.of(log("b", LogLevel::Error)).is_some());
        assert!(
            call.of(log("z", LogLevel::Error)).is_none(),
            "not the client's"
        );
    }
}
