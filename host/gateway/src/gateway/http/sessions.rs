//! A cap on the Streamable HTTP sessions open at once, around rmcp's session
//! manager, and giving memory back to the system once sessions end.
//!
//! rmcp creates a session for each `initialize` and closes it through the
//! manager when the client DELETEs it, when it idles past its keep-alive, or
//! when its worker ends for any other reason; every one of those passes
//! through [`CappedSessions::close_session`], which frees the slot (once).
//!
//! With client tokens, each session also records the client that opened it
//! ([`CappedSessions::claim`]): only that client may use it.

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Sessions open at once unless `--max-sessions` says otherwise.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;

/// How long after a session ends memory is given back: sessions ending
/// together (expiring in a burst, a client closing many) share one trim, and
/// the session's tasks have ended by then (the gateway checks every 5 s).
const TRIM_AFTER: Duration = Duration::from_secs(10);

/// What refusing a session says in rmcp's error path; [`super::body`] turns
/// it into the client's answer.
pub(super) const FULL: &str = "mcpw session limit reached";

/// The session manager `M` with at most `max` sessions open.
pub(super) struct CappedSessions<M> {
    inner: M,
    max: usize,
    /// Slots taken: sessions open, and sessions being created.
    taken: AtomicUsize,
    /// Sessions open, with the name of the client that opened each (once
    /// claimed): a session closed twice (by a DELETE, then by its worker
    /// ending) frees its slot once.
    open: Mutex<HashMap<SessionId, Option<Arc<str>>>>,
    trim_pending: Arc<AtomicBool>,
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum CappedError<E: std::error::Error> {
    /// Every slot is taken.
    #[error("{FULL} ({0} sessions)")]
    Full(usize),
    /// The session manager itself.
    #[error(transparent)]
    Inner(E),
}

impl<M: SessionManager> CappedSessions<M> {
    pub(super) fn new(inner: M, max: usize) -> Self {
        CappedSessions {
            inner,
            max,
            taken: AtomicUsize::new(0),
            open: Mutex::new(HashMap::new()),
            trim_pending: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The cap.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// Sessions open or being created.
    pub(super) fn taken(&self) -> usize {
        self.taken.load(Ordering::Acquire)
    }

    /// Takes a slot, unless every one is taken.
    fn take_slot(&self) -> bool {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_ok()
    }

    fn free_slot(&self) {
        self.taken.fetch_sub(1, Ordering::AcqRel);
    }

    fn opened(&self, id: &SessionId) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), None);
    }

    /// Records `client` as the opener of session `id`, if it is open.
    pub(super) fn claim(&self, id: &str, client: &str) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(owner) = open.get_mut(id) {
            *owner = Some(client.into());
        }
    }

    /// The client that opened session `id`, once claimed.
    pub(super) fn owner(&self, id: &str) -> Option<Arc<str>> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(id).cloned().flatten()
    }

    /// Frees the slot of `id` if it still holds one; then, soon, the memory
    /// the session held.
    fn closed(&self, id: &SessionId) {
        let was_open = self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
            .is_some();
        if was_open {
            self.free_slot();
            self.trim_soon();
        }
    }

    /// Gives freed memory back to the system [`TRIM_AFTER`] from now, unless
    /// a trim is already due: at most one trim per [`TRIM_AFTER`], and the
    /// session's own task has dropped its state by then.
    fn trim_soon(&self) {
        if self.trim_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let pending = self.trim_pending.clone();
        tokio::spawn(async move {
            tokio::time::sleep(TRIM_AFTER).await;
            pending.store(false, Ordering::Release);
            let _ = tokio::task::spawn_blocking(crate::host::release_free_memory).await;
        });
    }
}

impl<M: SessionManager> SessionManager for CappedSessions<M> {
    type Error = CappedError<M::Error>;
    type Transport = M::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if !self.take_slot() {
            return Err(CappedError::Full(self.max));
        }
        match self.inner.create_session().await {
            Ok((id, transport)) => {
                self.opened(&id);
                Ok((id, transport))
            }
            Err(e) => {
                self.free_slot();
                Err(CappedError::Inner(e))
            }
        }
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner
            .initialize_session(id, message)
            .await
            .map_err(CappedError::Inner)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await.map_err(CappedError::Inner)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closing = self.inner.close_session(id).await;
        self.closed(id);
        closing.map_err(CappedError::Inner)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner
            .create_stream(id, message)
            .await
            .map_err(CappedError::Inner)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner
            .accept_message(id, message)
            .await
            .map_err(CappedError::Inner)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner
            .create_standalone_stream(id)
            .await
            .map_err(CappedError::Inner)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner
            .resume(id, last_event_id)
            .await
            .map_err(CappedError::Inner)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        if !self.take_slot() {
            return Err(CappedError::Full(self.max));
        }
        let outcome = self
            .inner
            .restore_session(id.clone())
            .await
            .map_err(CappedError::Inner);
        match &outcome {
            Ok(RestoreOutcome::Restored(_)) => self.opened(&id),
            _ => self.free_slot(),
        }
        outcome
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

    #[tokio::test]
    async fn the_cap_counts_open_sessions_and_each_close_frees_one_slot() {
        let sessions = CappedSessions::new(LocalSessionManager::default(), 2);
        let (a, _ta) = sessions.create_session().await.unwrap();
        let (_b, _tb) = sessions.create_session().await.unwrap();
        let refused = sessions.create_session().await.err().unwrap();
        assert!(matches!(refused, CappedError::Full(2)));
        // rmcp reports it as "… when create session: {error}"; the middleware looks for FULL.
        assert!(refused.to_string().contains(FULL));
        assert_eq!(sessions.taken(), 2);
        // A DELETE, then the session's worker ending: one slot.
        sessions.close_session(&a).await.unwrap();
        sessions.close_session(&a).await.unwrap();
        assert_eq!(sessions.taken(), 1);
        let (_c, _tc) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.taken(), 2);
        assert!(sessions.create_session().await.is_err());
        // Closing a session nobody knows frees nothing.
        sessions.close_session(&"unknown".into()).await.unwrap();
        assert_eq!(sessions.taken(), 2);
    }

    #[tokio::test]
    async fn a_session_is_claimed_by_its_opener_until_it_closes() {
        let sessions = CappedSessions::new(LocalSessionManager::default(), 2);
        let (a, _ta) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.owner(&a), None);
        sessions.claim(&a, "ci");
        assert_eq!(sessions.owner(&a).as_deref(), Some("ci"));
        sessions.close_session(&a).await.unwrap();
        assert_eq!(sessions.owner(&a), None);
        // A closed (or unknown) session cannot be claimed.
        sessions.claim(&a, "alice");
        assert_eq!(sessions.owner(&a), None);
    }
}
