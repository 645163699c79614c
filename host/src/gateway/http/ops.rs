//! What a load balancer and an operator ask of a replica: `GET /healthz`
//! (live), `GET /readyz` (the catalog is loaded and the replica is not
//! draining), `GET /metrics` (Prometheus text), and draining on a stop: no new
//! sessions, the calls in flight finish up to a deadline.

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
        text(StatusCode::OK, "live\n")
    }

    /// `GET /readyz`.
    pub(super) fn readiness(&self) -> Response {
        if self.draining() {
            text(StatusCode::SERVICE_UNAVAILABLE, "draining\n")
        } else if !self.ready.load(Ordering::Acquire) {
            text(StatusCode::SERVICE_UNAVAILABLE, "starting\n")
        } else {
            text(StatusCode::OK, "ready\n")
        }
    }
}

fn text(status: StatusCode, body: &'static str) -> Response {
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

/// Holds `in_flight` until `response`'s body has been sent (or dropped):
/// a call's result streams after the handler returns.
pub(super) fn held_until_sent(response: Response, in_flight: InFlight) -> Response {
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
