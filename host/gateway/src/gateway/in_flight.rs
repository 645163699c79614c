//! A stdio client's requests waiting for their answers, and the most that
//! may (`settings.maxRequestsInFlight`): rmcp reads a client's messages as
//! fast as they come and starts a task for each request, so a client that
//! writes requests without reading the answers would fill mcpw's memory with
//! tasks and unsent answers. [`Gated`] stops reading while that many wait:
//! the rest stay in the pipe, and the client's writes block.
//!
//! A request waits from its reading until its answer is written (an answer
//! the client does not read still counts), or until the client cancels it
//! (rmcp then drops its answer). What the client sends besides requests
//! (its answers to mcpw's questions, cancellations) never waits for room,
//! unless a request read before it does.

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The requests waiting for their answers, by id (a client may reuse one).
#[derive(Default)]
struct Waiting {
    ids: Mutex<HashMap<RequestId, usize>>,
    freed: Notify,
}

impl Waiting {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, usize>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn count(&self) -> usize {
        self.lock().values().sum()
    }

    fn started(&self, id: RequestId) {
        *self.lock().entry(id).or_default() += 1;
    }

    fn done(&self, id: &RequestId) {
        let mut ids = self.lock();
        let Some(n) = ids.get_mut(id) else { return };
        *n -= 1;
        if *n == 0 {
            ids.remove(id);
        }
        drop(ids);
        self.freed.notify_waiters();
    }

    /// Returns once fewer than `max` wait. Dropping it changes nothing.
    async fn room(&self, max: usize) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.count() < max {
                return;
            }
            freed.await;
        }
    }
}

/// A server transport that reads the client's next request only while
/// fewer than `max` of its requests wait for their answers.
pub struct Gated<T> {
    inner: T,
    max: usize,
    waiting: Arc<Waiting>,
    /// A request read while there was no room for it.
    held: Option<RxJsonRpcMessage<RoleServer>>,
}

impl<T> Gated<T> {
    /// `inner`, with at most `max` (at least 1) requests waiting.
    pub fn new(inner: T, max: usize) -> Self {
        Gated {
            inner,
            max: max.max(1),
            waiting: Arc::default(),
            held: None,
        }
    }

    /// Requests read and not yet answered.
    pub fn waiting(&self) -> usize {
        self.waiting.count()
    }
}

/// The request an answer is for.
fn answers(message: &TxJsonRpcMessage<RoleServer>) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Response(r) => Some(r.id.clone()),
        JsonRpcMessage::Error(e) => e.id.clone(),
        _ => None,
    }
}

/// The request a client's cancellation is for.
fn cancels(message: &RxJsonRpcMessage<RoleServer>) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Notification(n) => match &n.notification {
            ClientNotification::CancelledNotification(c) => c.params.request_id.as_ref(),
            _ => None,
        },
        _ => None,
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Gated<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = answers(&item);
        let waiting = self.waiting.clone();
        let send = self.inner.send(item);
        async move {
            let sent = send.await;
            if let Some(id) = answered {
                waiting.done(&id);
            }
            sent
        }
    }

    /// Cancel-safe, as rmcp needs (it is polled in a `select!`): a request
    /// read is kept in `held` until there is room for it.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.held.is_some() {
                self.waiting.room(self.max).await;
                let request = self.held.take()?;
                if let JsonRpcMessage::Request(r) = &request {
                    self.waiting.started(r.id.clone());
                }
                return Some(request);
            }
            let message = self.inner.receive().await?;
            if matches!(message, JsonRpcMessage::Request(_)) {
                self.held = Some(message);
                continue;
            }
            if let Some(id) = cancels(&message) {
                self.waiting.done(id);
            }
            return Some(message);
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
    use rmcp::transport::async_rw::AsyncRwTransport;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    fn ping(id: u64) -> String {
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")
    }

    /// Two requests may wait: the third is read only once one is answered
    /// (written: the client has not read it yet), and a cancellation frees
    /// its request's place.
    #[tokio::test]
    async fn reads_no_request_beyond_the_limit_until_one_is_answered() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server);
        let mut gated = Gated::new(AsyncRwTransport::<RoleServer, _, _>::new(read, write), 2);
        let pings: String = (1..=3).map(ping).collect();
        client.write_all(pings.as_bytes()).await.unwrap();
        let id = |m: &ClientJsonRpcMessage| match m {
            JsonRpcMessage::Request(r) => r.id.clone(),
            other => panic!("{other:?}"),
        };
        let first = gated.receive().await.unwrap();
        let second = gated.receive().await.unwrap();
        assert_eq!(gated.waiting(), 2);
        let third = tokio::time::timeout(std::time::Duration::from_millis(100), gated.receive());
        assert!(third.await.is_err(), "no room for a third request");
        assert_eq!(gated.waiting(), 2, "the request read waits outside");
        let answer: ServerJsonRpcMessage =
            JsonRpcMessage::response(rmcp::model::ServerResult::empty(()), id(&first));
        gated.send(answer).await.unwrap();
        assert_eq!(id(&gated.receive().await.unwrap()), RequestId::Number(3));
        assert_eq!(gated.waiting(), 2);
        // A cancellation frees its request's place.
        let cancel = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{}}}}}\n{}",
            serde_json::to_string(&id(&second)).unwrap(),
            ping(4)
        );
        client.write_all(cancel.as_bytes()).await.unwrap();
        assert!(matches!(
            gated.receive().await.unwrap(),
            JsonRpcMessage::Notification(_)
        ));
        assert_eq!(id(&gated.receive().await.unwrap()), RequestId::Number(4));
        let mut answered = BufReader::new(client);
        let mut line = String::new();
        answered.read_line(&mut line).await.unwrap();
        assert!(line.contains("\"id\":1"), "{line}");
    }
}
