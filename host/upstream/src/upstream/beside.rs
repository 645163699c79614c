//! A handshake-era connection beside a stateless one.
//!
//! A server that offers both eras is spoken to in 2026-07-28 by default: one
//! connection serves every session. That revision has no requests from the
//! server to the client and no `resources/subscribe`; a server may ask for
//! sampling, elicitation or roots, or send resource updates, only in the
//! handshake era. A session of that era whose client takes such requests, or
//! that watches a resource the stateless connection cannot watch, is served
//! on a second connection to the same server, opened with `initialize` on
//! first need and closed with the first. So a server has at most two
//! connections (two processes for a stdio server).

use super::{ConnectError, Connection, Listing, is_legacy_revision};
use crate::clock::Instant;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// What a use of a server needs of its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need<'a> {
    /// Anything the server answers: the shared connection serves.
    Any,
    /// The server's requests (sampling, elicitation, roots) reach the
    /// session, in a call of the tool named (if any): on a stateless
    /// connection they cannot. A tool the server lists only in the stateless
    /// revision is called there (it asks with `inputRequired`, if at all).
    ServerRequests(Option<&'a str>),
    /// `notifications/resources/updated`: a stateless connection whose
    /// server announces no resource subscriptions sends none.
    ResourceUpdates,
}

/// After a server refused the handshake era, how long before it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(60);

/// The connection beside, as far as it was tried.
#[derive(Default)]
pub(super) struct Beside {
    conn: Option<Arc<Connection>>,
    /// The tools it lists.
    tools: HashSet<String>,
    refused_at: Option<Instant>,
}

impl Beside {
    /// The connection, for closing with the first.
    pub(super) fn take(&mut self) -> Option<Arc<Connection>> {
        self.conn.take()
    }

    /// The connection, if open.
    pub(super) fn open(&self) -> Option<Arc<Connection>> {
        self.conn.clone().filter(|c| c.is_open())
    }
}

impl Connection {
    /// Whether this connection cannot serve `need` and one beside it should.
    pub fn needs_beside(&self, need: Need<'_>) -> bool {
        let stateless = self.is_stateless();
        match need {
            Need::Any => false,
            Need::ServerRequests(_) => stateless,
            Need::ResourceUpdates => stateless && !self.announces_subscribe(),
        }
    }

    /// Whether a connection of the handshake era offered its server less
    /// than mcpw's clients now take (it says what it takes only when it
    /// opens; a stateless one says it with each request).
    pub fn offers_less(&self) -> bool {
        if self.is_stateless() {
            return false;
        }
        let wanted = self.routes.sessions.capabilities(&self.routes.server);
        let Ok(serde_json::Value::Object(wanted)) = serde_json::to_value(wanted) else {
            return false;
        };
        let offered = super::origin::lock(&self.routes.offered);
        let apps = crate::apps::declared(&wanted);
        super::origin::OFFERED
            .iter()
            .any(|k| wanted.contains_key(*k) && !offered.contains(*k))
            || (apps && !offered.contains(crate::apps::EXTENSION))
    }

    fn announces_subscribe(&self) -> bool {
        self.service
            .peer_info()
            .and_then(|i| i.capabilities.resources.clone())
            .is_some_and(|r| r.subscribe == Some(true))
    }

    /// The handshake-era connection beside this one, opened with `open` on
    /// first need; `None` when the server does not speak that era (tried
    /// again a minute later).
    pub async fn beside<F>(
        &self,
        need: Need<'_>,
        open: impl FnOnce() -> F,
    ) -> Option<Arc<Connection>>
    where
        F: Future<Output = Result<(Connection, Listing), ConnectError>>,
    {
        let mut beside = self.beside.lock().await;
        let serves = |b: &Beside| match need {
            Need::ServerRequests(Some(tool)) => b.tools.contains(tool),
            _ => true,
        };
        if let Some(conn) = beside.conn.as_ref().filter(|c| c.is_open()) {
            return serves(&beside).then(|| conn.clone());
        }
        if beside
            .refused_at
            .is_some_and(|at| at.elapsed() < RETRY_AFTER)
        {
            return None;
        }
        match open().await {
            Ok((conn, listing))
                if listing
                    .protocol_version
                    .as_deref()
                    .is_some_and(is_legacy_revision) =>
            {
                tracing::info!(
                    server = %self.routes.server,
                    "a handshake-era connection beside the stateless one, for a session that needs it"
                );
                // Told the log level sessions want, as the first was.
                let level = *super::origin::lock(&self.log_level);
                if let Some(level) = level {
                    let _ = conn.set_log_level(level, Duration::from_secs(10)).await;
                }
                let conn = Arc::new(conn);
                beside.conn = Some(conn.clone());
                beside.tools = listing.tools.into_iter().map(|t| t.name.into()).collect();
                beside.refused_at = None;
                serves(&beside).then_some(conn)
            }
            Ok((conn, _)) => {
                conn.close().await;
                beside.refused_at = Some(Instant::now());
                None
            }
            Err(e) => {
                tracing::debug!(server = %self.routes.server, "no handshake-era connection beside the stateless one: {e}");
                beside.refused_at = Some(Instant::now());
                None
            }
        }
    }
}
