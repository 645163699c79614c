//! Change notifications from a server of the stateless revision (2026-07-28).
//! Such a server sends list changes and resource updates only on a
//! `subscriptions/listen` stream: mcpw keeps one open per connection, asking
//! for every list change and for updates of the resources watched, and opens
//! a new one (then closes the old) when the watched set changes.
//!
//! The stream is an extra, never a condition of the connection: it is opened
//! after the connection is made, and one that fails, ends, or is never
//! acknowledged is retried with backoff while the server stays connected.
//! Until it is up, the lifecycle relists when lists are needed
//! ([`Connection::hears_changes`]).

use super::events::{EventSender, UpstreamEvent};
use super::{ConnectError, Connection};
use crate::catalog::ListenReport;
use crate::secrets;
use rmcp::RoleClient;
use rmcp::model::{ErrorCode, ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, ServiceError};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, oneshot, watch};

/// How long a new stream may take to be acknowledged, at most: less when
/// the server's own `startupTimeoutMs` is shorter.
const ACK_WITHIN: Duration = Duration::from_secs(10);
/// The first retry after a failure; doubled each time, up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(300);
/// A stream that lived this long before ending starts the backoff afresh.
const LIVED_LONG: Duration = Duration::from_secs(60);

/// Where a connection's listen stream stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenState {
    /// Being opened, not acknowledged yet.
    Starting,
    /// Open: changes arrive as they happen.
    Listening,
    /// The server has no such stream (it does not know the method).
    Unsupported,
    /// Failed, or ended; tried again at `next_try`.
    Retrying {
        /// Why, the last time.
        error: String,
        /// Failures in a row.
        attempts: u32,
        /// When it is tried again.
        next_try: Instant,
    },
}

impl ListenState {
    /// What `mcpw status` reports of it, now.
    pub fn report(&self) -> ListenReport {
        match self {
            ListenState::Starting => ListenReport::Starting,
            ListenState::Listening => ListenReport::Listening,
            ListenState::Unsupported => ListenReport::Unsupported,
            ListenState::Retrying {
                error,
                attempts,
                next_try,
            } => ListenReport::Retrying {
                error: error.clone(),
                attempts: *attempts,
                retry_in_s: next_try
                    .saturating_duration_since(Instant::now())
                    .as_millis()
                    .div_ceil(1000) as u64,
            },
        }
    }
}

/// A connection's listen stream and the task that keeps it open.
pub(super) struct Listen {
    shared: Arc<Shared>,
    /// Dropped with the connection, which ends the keeper.
    _stop: oneshot::Sender<()>,
}

struct Shared {
    peer: Peer<RoleClient>,
    server: String,
    events: EventSender,
    redact: secrets::Redactions,
    stream: tokio::sync::Mutex<Stream>,
    state: watch::Sender<ListenState>,
    /// Told when a stream ends by itself (not when it is replaced).
    ended: Notify,
    /// Bumped by every stream opened: only the newest may report its end.
    generation: AtomicU64,
    /// How long a new stream may take to be acknowledged.
    ack_within: Duration,
}

/// The open stream: the resources it asks updates for, and its reader.
#[derive(Default)]
struct Stream {
    uris: BTreeSet<String>,
    reader: Option<oneshot::Sender<()>>,
}

/// Why a stream did not open.
enum Refused {
    /// The server does not know `subscriptions/listen`.
    Unsupported,
    /// No acknowledgement within `ack_within`.
    Unacknowledged,
    Failed(ConnectError),
}

impl Connection {
    /// Starts listening for changes in the background, on a stateless
    /// revision; a connection of another revision hears them without it.
    pub(super) fn start_listening(&mut self, startup_timeout: Duration) {
        if self
            .protocol_version()
            .is_none_or(|v| super::is_legacy_revision(&v))
        {
            return;
        }
        let (stop, stopped) = oneshot::channel();
        let shared = Arc::new(Shared {
            peer: self.service.peer().clone(),
            server: self.routes.server.clone(),
            events: self.routes.events.clone(),
            redact: self.redact.clone(),
            stream: Default::default(),
            state: watch::Sender::new(ListenState::Starting),
            ended: Notify::new(),
            generation: AtomicU64::new(0),
            ack_within: startup_timeout.min(ACK_WITHIN),
        });
        tokio::spawn(keep(shared.clone(), stopped));
        self.listening = Some(Listen {
            shared,
            _stop: stop,
        });
    }

    /// Where the listen stream stands; `None` for a revision without one.
    pub fn listen_state(&self) -> Option<ListenState> {
        self.listening
            .as_ref()
            .map(|l| l.shared.state.borrow().clone())
    }

    /// Waits until the first attempt at a listen stream has an outcome.
    pub async fn listen_settled(&self) {
        if let Some(l) = &self.listening {
            let mut state = l.shared.state.subscribe();
            let _ = state
                .wait_for(|s| !matches!(s, ListenState::Starting))
                .await;
        }
    }

    /// Whether the server's changes reach mcpw as they happen: always on an
    /// `initialize`-era revision, only with an open stream on a stateless one.
    pub fn hears_changes(&self) -> bool {
        self.listen_state()
            .is_none_or(|s| s == ListenState::Listening)
    }

    /// Asks for updates of `uri` on the listen stream (`subscribe`), or no
    /// more: a new stream for the new set replaces the old one once it is
    /// acknowledged.
    pub(super) async fn listen_to_resource(
        &self,
        uri: &str,
        subscribe: bool,
    ) -> Result<(), ConnectError> {
        let Some(listening) = &self.listening else {
            return Err(ConnectError::Rpc(
                "this connection has no listen stream".into(),
            ));
        };
        let shared = &listening.shared;
        let watched = shared
            .reopen(|uris| {
                if subscribe {
                    uris.insert(uri.to_string());
                } else {
                    uris.remove(uri);
                }
            })
            .await;
        match watched {
            Ok(()) => Ok(()),
            Err(Refused::Failed(e)) => Err(e),
            Err(Refused::Unsupported) => Err(ConnectError::Rpc(
                "the server has no subscriptions/listen".into(),
            )),
            Err(Refused::Unacknowledged) => Err(ConnectError::Rpc(format!(
                "the server did not acknowledge a listen stream within {} ms",
                shared.ack_within.as_millis()
            ))),
        }
    }
}

/// Keeps a stream open for as long as the connection lives.
async fn keep(shared: Arc<Shared>, mut stop: oneshot::Receiver<()>) {
    let mut failures = 0u32;
    let mut warned = false;
    loop {
        let up = *shared.state.borrow() == ListenState::Listening;
        let error = if up {
            let opened_at = Instant::now();
            tokio::select! {
                _ = &mut stop => return,
                () = shared.ended.notified() => {}
            }
            if *shared.state.borrow() == ListenState::Listening {
                continue; // replaced by a newer stream, not ended
            }
            if opened_at.elapsed() >= LIVED_LONG {
                failures = 0;
            }
            "the stream ended".to_string()
        } else {
            let opened = tokio::select! {
                _ = &mut stop => return,
                r = shared.reopen(|_| {}) => r,
            };
            match opened {
                Ok(()) => {
                    if warned {
                        tracing::info!(server = %shared.server, "listening for changes again");
                    }
                    failures = 0;
                    continue;
                }
                Err(Refused::Unsupported) => {
                    tracing::debug!(server = %shared.server, "no subscriptions/listen: lists are fetched again when needed");
                    shared.state.send_replace(ListenState::Unsupported);
                    return;
                }
                Err(Refused::Failed(e)) => e.to_string(),
                Err(Refused::Unacknowledged) => format!(
                    "not acknowledged within {} ms",
                    shared.ack_within.as_millis()
                ),
            }
        };
        if shared.peer.is_transport_closed() {
            return; // the connection is gone: nothing to retry, nothing to tell
        }
        failures += 1;
        let delay = RETRY_FIRST
            .saturating_mul(1 << (failures - 1).min(16))
            .min(RETRY_MAX);
        if warned {
            tracing::debug!(server = %shared.server, "listen stream: {error}; retrying in {} s", delay.as_secs());
        } else {
            tracing::warn!(
                server = %shared.server,
                "not listening for changes ({error}): lists are fetched again when needed; retrying in {} s",
                delay.as_secs()
            );
            warned = true;
        }
        shared.state.send_replace(ListenState::Retrying {
            error,
            attempts: failures,
            next_try: Instant::now() + delay,
        });
        tokio::select! {
            _ = &mut stop => return,
            () = tokio::time::sleep(delay) => {}
        }
    }
}

impl Shared {
    /// Opens a stream for the watched resources as `change` leaves them,
    /// waiting at most `ack_within` for its acknowledgement.
    async fn reopen(
        self: &Arc<Self>,
        change: impl FnOnce(&mut BTreeSet<String>),
    ) -> Result<(), Refused> {
        let mut stream = self.stream.lock().await;
        let mut uris = stream.uris.clone();
        change(&mut uris);
        tokio::time::timeout(self.ack_within, self.open(&mut stream, uris))
            .await
            .unwrap_or(Err(Refused::Unacknowledged))
    }

    /// Opens a stream for `uris` and every list change, then closes the old one.
    async fn open(
        self: &Arc<Self>,
        stream: &mut Stream,
        uris: BTreeSet<String>,
    ) -> Result<(), Refused> {
        let mut filter = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resources_list_changed();
        if !uris.is_empty() {
            filter = filter.resource_subscriptions(uris.iter().cloned());
        }
        let mut subscription = match self.peer.listen(filter.build()).await {
            Ok(s) => s,
            Err(ServiceError::McpError(e)) if e.code == ErrorCode::METHOD_NOT_FOUND => {
                return Err(Refused::Unsupported);
            }
            Err(e) => {
                return Err(Refused::Failed(
                    ConnectError::from_service(e, None).redacted(&self.redact),
                ));
            }
        };
        let accepted = subscription
            .acknowledged()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        if let Some(refused) = uris.iter().find(|u| !accepted.contains(u)) {
            let _ = subscription.cancel().await;
            return Err(Refused::Failed(ConnectError::Rpc(format!(
                "the server does not send updates of \"{refused}\""
            ))));
        }
        let (stop, mut stopped) = oneshot::channel::<()>();
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let (server, events) = (self.server.clone(), self.events.clone());
        let shared = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let notification = tokio::select! {
                    n = subscription.next() => n,
                    _ = &mut stopped => {
                        let _ = subscription.cancel().await;
                        return;
                    }
                };
                let event = match notification {
                    Ok(Some(n)) => event(&server, n),
                    Ok(None) | Err(_) => break,
                };
                if let Some(event) = event
                    && !events.change(event)
                {
                    return;
                }
            }
            // Ended by itself: the keeper opens another, unless a newer
            // stream has already taken this one's place.
            if let Some(shared) = shared.upgrade()
                && shared.generation.load(Ordering::Acquire) == generation
            {
                shared.state.send_replace(ListenState::Retrying {
                    error: "the stream ended".into(),
                    attempts: 0,
                    next_try: Instant::now(),
                });
                shared.ended.notify_one();
            }
        });
        stream.uris = uris;
        stream.reader = Some(stop);
        self.state.send_replace(ListenState::Listening);
        Ok(())
    }
}

/// What a notification on the stream means to the host.
fn event(server: &str, notification: ServerNotification) -> Option<UpstreamEvent> {
    match notification {
        ServerNotification::ToolListChangedNotification(_)
        | ServerNotification::PromptListChangedNotification(_)
        | ServerNotification::ResourceListChangedNotification(_) => {
            Some(UpstreamEvent::ListChanged(server.to_string()))
        }
        ServerNotification::ResourceUpdatedNotification(n) => Some(UpstreamEvent::ResourceUpdated(
            server.to_string(),
            n.params.uri,
        )),
        _ => None,
    }
}
