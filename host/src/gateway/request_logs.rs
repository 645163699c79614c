//! Log messages for a client of the stateless revision (2026-07-28), which
//! asks for them per request (`io.modelcontextprotocol/logLevel` in `_meta`)
//! instead of with `logging/setLevel`: the messages its servers send while its
//! tool call, prompt or read runs, at or above that level, go on that
//! request's own stream.
//! Servers are asked for that level as for a session's (see
//! [`crate::lifecycle::Manager::set_log_level`]).

use super::{ClientScope, Gateway, session_events};
use crate::lifecycle::LifecycleEvent;
use crate::log_level::LogLevel;
use rmcp::service::{RequestContext, RoleServer};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

impl Gateway {
    /// Runs `call`, passing on the log messages the request asked for.
    pub(super) async fn with_request_logs<T>(
        &self,
        context: &RequestContext<RoleServer>,
        call: impl Future<Output = T>,
    ) -> T {
        // A session of the handshake era hears its logs on the session.
        let asked = context.meta.log_level().as_ref().and_then(LogLevel::of);
        let Some(level) = asked.filter(|_| !self.has_session()) else {
            return call.await;
        };
        let client = &self.client(&context.extensions);
        let manager = self.shared.host.manager();
        let mut events = manager.subscribe();
        manager.set_log_level(level).await;
        let forward = forward(&mut events, client, level, context);
        let out = tokio::select! {
            out = call => out,
            () = forward => unreachable!("forwarding ends only with the host"),
        };
        // What came in with the result, as far as the host has it.
        let _ = drain(&mut events, client, level, context).await;
        out
    }

    fn has_session(&self) -> bool {
        let session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        session.is_some()
    }
}

/// Whether `event` is a log message `client` gets at `level`.
fn wanted(
    event: LifecycleEvent,
    client: &ClientScope,
    level: LogLevel,
) -> Option<(String, crate::upstream::LogMessage)> {
    match event {
        LifecycleEvent::Log { server, message }
            if client.allows(&server) && level.admits(message.level) =>
        {
            Some((server, message))
        }
        _ => None,
    }
}

async fn forward(
    events: &mut Receiver<LifecycleEvent>,
    client: &ClientScope,
    level: LogLevel,
    context: &RequestContext<RoleServer>,
) {
    loop {
        match events.recv().await {
            Ok(event) => {
                if let Some((server, message)) = wanted(event, client, level) {
                    let _ = session_events::log_forward(&context.peer, &server, message).await;
                }
            }
            Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => std::future::pending().await,
        }
    }
}

async fn drain(
    events: &mut Receiver<LifecycleEvent>,
    client: &ClientScope,
    level: LogLevel,
    context: &RequestContext<RoleServer>,
) -> Result<(), TryRecvError> {
    // rmcp hands each notification to a task of its own: let those that
    // came before the result run first.
    tokio::task::yield_now().await;
    loop {
        match events.try_recv() {
            Ok(event) => {
                if let Some((server, message)) = wanted(event, client, level) {
                    let _ = session_events::log_forward(&context.peer, &server, message).await;
                }
            }
            Err(TryRecvError::Lagged(_)) => {}
            Err(e) => return Err(e),
        }
    }
}
