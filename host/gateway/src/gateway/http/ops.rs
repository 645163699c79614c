//! What a load balancer and an operator ask of a replica: `GET /healthz`
//! (live), `GET /readyz` (the catalog is loaded, shared state was reached
//! and the other replicas are heard, and the replica is not draining), `GET /metrics` (Prometheus text), and
//! draining on a stop: no new sessions, the calls in flight finish up to a
//! deadline.
//!
//! Shared state that goes away after a replica was ready leaves it ready,
//! and `/readyz` says so: every replica shares the one Redis, so taking them
//! out of the balancer would stop a gateway that still serves from memory.

use crate::team_state::sessions::SharedSessions;
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// How long a stopping replica waits for the calls in flight, by default.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(25);

/// A replica's state as the operations endpoints report it.
#[derive(Default)]
pub struct Ops {
    ready: AtomicBool,
    /// The replica's sessions in shared state, when there is shared state:
    /// whether Redis answers, and whether the replica hears the others.
    shared: Option<Arc<SharedSessions>>,
    draining: AtomicBool,
    in_flight: AtomicUsize,
    idle: Notify,
}

/// One POST in flight, from its arrival until its response body ends.
pub(super) struct InFlight(Arc<Ops>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Ops {
    /// A replica's state, with its sessions in shared state if any.
    pub fn new(shared: Option<Arc<SharedSessions>>) -> Ops {
        Ops {
            shared,
            ..Default::default()
        }
    }

    /// The catalog snapshot is loaded: the replica can answer.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// Whether the replica takes no new sessions.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    pub(super) fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }

    /// Stops taking sessions, then waits until no request is in flight or
    /// `deadline` has passed. True when everything finished.
    pub async fn drain(&self, deadline: Duration) -> bool {
        self.draining.store(true, Ordering::Release);
        let all_done = async {
            loop {
                let idle = self.idle.notified();
                if self.in_flight() == 0 {
                    return;
                }
                idle.await;
            }
        };
        tokio::time::timeout(deadline, all_done).await.is_ok()
    }

    /// `GET /healthz`.
    pub(super) fn health() -> Response {
        text(StatusCode::OK, "live\n".into())
    }

    /// `GET /readyz`.
    pub(super) fn readiness(&self) -> Response {
        use crate::team_state::Reach;
        let unavailable = StatusCode::SERVICE_UNAVAILABLE;
        if self.draining() {
            return text(unavailable, "draining\n".into());
        }
        if !self.ready.load(Ordering::Acquire) {
            return text(unavailable, "starting\n".into());
        }
        let Some(sessions) = &self.shared else {
            return text(StatusCode::OK, "ready\n".into());
        };
        let health = sessions.state().health();
        let location = health.location();
        if !health.ever_up() {
            return text(
                unavailable,
                format!("starting: shared state {location} not reached yet\n"),
            );
        }
        if !sessions.has_listened() {
            return text(
                unavailable,
                format!("starting: not yet listening to the other replicas through {location}\n"),
            );
        }
        match health.reach() {
            Reach::Up => text(StatusCode::OK, "ready\n".into()),
            Reach::Down(for_how_long) => text(
                StatusCode::OK,
                format!(
                    "ready, degraded: shared state {location} unreachable for {} s; serving from memory\n",
                    for_how_long.as_secs()
                ),
            ),
            Reach::Unknown => text(
                StatusCode::OK,
                format!("ready, degraded: shared state {location} not answering\n"),
            ),
        }
    }
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `GET /metrics`: the host's metrics in the OpenMetrics text format, which
/// Prometheus reads.
pub(super) fn metrics(text: String) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// Holds `in_flight` (and whatever else counts the request) until
/// `response`'s body has been sent (or dropped): a call's result streams
/// after the handler returns.
pub(super) fn held_until_sent(
    response: Response,
    in_flight: impl Send + Sync + 'static,
) -> Response {
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &in_flight;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drain_waits_for_requests_in_flight_and_no_longer_than_the_deadline() {
        let ops = Arc::new(Ops::default());
        assert!(ops.drain(Duration::from_secs(5)).await, "nothing in flight");
        let held = ops.enter();
        assert!(
            !ops.drain(Duration::from_millis(50)).await,
            "a request still in flight at the deadline"
        );
        let waiting = tokio::spawn({
            let ops = ops.clone();
            async move { ops.drain(Duration::from_secs(30)).await }
        });
        tokio::task::yield_now().await;
        drop(held);
        assert!(waiting.await.unwrap(), "done once the request ended");
        assert!(ops.draining());
    }

    #[test]
    fn readiness_follows_loading_and_draining() {
        let ops = Ops::default();
        assert_eq!(ops.readiness().status(), StatusCode::SERVICE_UNAVAILABLE);
        ops.set_ready();
        assert_eq!(ops.readiness().status(), StatusCode::OK);
        ops.draining.store(true, Ordering::Release);
        assert_eq!(ops.readiness().status(), StatusCode::SERVICE_UNAVAILABLE);
    }
}
