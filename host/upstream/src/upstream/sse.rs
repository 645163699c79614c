//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp no longer ships:
//! GET the event stream, wait for the `endpoint` event, then POST each message
//! to that endpoint while responses arrive as `message` events.

use super::http::{Headers, StatusError, header_map};
use super::{
    ConnectError,
    error::{needs_auth, root_cause},
};
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::SseStream;
use tokio::sync::mpsc;

/// The largest single event accepted, so a broken server cannot exhaust memory.
const MAX_EVENT_BYTES: usize = super::stdio::MAX_MESSAGE_BYTES;

pub(crate) struct SseTransport {
    rx: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    reader: tokio::task::JoinHandle<()>,
}

fn http_error(what: &str, e: reqwest::Error) -> ConnectError {
    let e = e.without_url();
    ConnectError::Http(format!("{what}: {e}{}", root_cause(&e)))
}

impl SseTransport {
    /// Connects; the progress read is handed to its call through `progress`
    /// (see [`super::progress`]).
    pub(crate) async fn connect(
        url: &str,
        headers: &Headers,
        progress: super::handler::ProgressRoutes,
    ) -> Result<SseTransport, ConnectError> {
        let base = reqwest::Url::parse(url)
            .map_err(|e| ConnectError::Http(format!("invalid URL: {e}")))?;
        let headers = header_map(headers)?;
        let client = reqwest::Client::new();
        let response = client
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| http_error("SSE GET", e))?;
        let status = response.status().as_u16();
        if status == 401 || status == 403 {
            return Err(needs_auth(status));
        }
        if !response.status().is_success() {
            return Err(ConnectError::Http(format!(
                "SSE GET answered HTTP {status}"
            )));
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            return Err(ConnectError::Http(
                "SSE GET did not answer with an event stream".into(),
            ));
        }
        let mut events = SseStream::from_bytes_stream(response.bytes_stream());
        let endpoint = endpoint(&mut events, &base).await?;
        let (tx, rx) = mpsc::channel(64);
        let reader = tokio::spawn(read_messages(events, tx, progress));
        Ok(SseTransport {
            rx,
            client,
            endpoint,
            headers,
            reader,
        })
    }
}

/// The stream's `endpoint` event, resolved against `base`: where messages
/// are posted. Credentials go with every POST, so only to the server asked.
async fn endpoint<E: std::fmt::Display>(
    events: &mut (impl futures::Stream<Item = Result<sse_stream::Sse, E>> + Unpin),
    base: &reqwest::Url,
) -> Result<reqwest::Url, ConnectError> {
    loop {
        match events.next().await {
            Some(Ok(ev)) if ev.event.as_deref() == Some("endpoint") => {
                let data = ev.data.unwrap_or_default();
                let endpoint = base
                    .join(data.trim())
                    .map_err(|e| ConnectError::Http(format!("bad SSE endpoint {data:?}: {e}")))?;
                if endpoint.origin() != base.origin() {
                    return Err(ConnectError::Http(format!(
                        "the SSE endpoint is on another origin ({}), refused",
                        endpoint.origin().ascii_serialization()
                    )));
                }
                return Ok(endpoint);
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(ConnectError::Http(format!("SSE stream: {e}"))),
            None => {
                return Err(ConnectError::Http(
                    "the SSE stream ended before announcing its endpoint".into(),
                ));
            }
        }
    }
}

/// Hands the stream's JSON-RPC messages to the transport, routing progress
/// as it reads it; an oversized or unreadable message is dropped, not fatal.
async fn read_messages<E>(
    mut events: impl futures::Stream<Item = Result<sse_stream::Sse, E>> + Unpin,
    tx: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    progress: super::handler::ProgressRoutes,
) {
    while let Some(event) = events.next().await {
        let Ok(event) = event else { break };
        if !matches!(event.event.as_deref(), None | Some("message")) {
            continue;
        }
        let Some(data) = event.data else { continue };
        if data.len() > MAX_EVENT_BYTES {
            tracing::warn!("dropping an SSE message of {} bytes", data.len());
            continue;
        }
        super::progress::route(&progress, &data);
        match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&data) {
            Ok(message) => {
                if tx.send(message).await.is_err() {
                    break;
                }
            }
            Err(e) => tracing::warn!("ignoring an SSE message that is not JSON-RPC: {e}"),
        }
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone());
        async move {
            let body = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            let response = request
                .header(CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .map_err(|e| std::io::Error::other(e.without_url()))?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(std::io::Error::other(StatusError(
                    response.status().as_u16(),
                )))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.rx.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.reader.abort();
        std::future::ready(Ok(()))
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
