//! The HTTP client under every Streamable HTTP connection: rmcp's reqwest
//! client, except for the answer to `subscriptions/listen`.
//!
//! That answer is a stream that does not end. The 2026-07-28 revision sends it
//! as SSE; the conformance suite's reference server sends it as a JSON body of
//! one message per line. rmcp reads a JSON answer whole, so such a listen
//! would never be answered. Here both framings become the event stream rmcp
//! reads: SSE as it comes, JSON as one event per message. A JSON body whose
//! first message is the request's answer (an error, say) stays an answer.

use super::super::handler::ProgressRoutes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

type Error = StreamableHttpError<reqwest::Error>;
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// rmcp's reqwest client, reading a listen answer in either framing, and
/// handing the progress it reads to its call as it reads it.
#[derive(Clone)]
pub struct HttpClient {
    http: reqwest::Client,
    progress: ProgressRoutes,
}

impl HttpClient {
    /// A client whose progress goes to `progress` (see
    /// [`super::super::progress`]).
    pub(crate) fn new(progress: ProgressRoutes) -> HttpClient {
        HttpClient {
            http: reqwest::Client::new(),
            progress,
        }
    }

    /// `events` with the progress among them handed on as it passes.
    fn routing_progress(&self, events: Events) -> Events {
        let progress = self.progress.clone();
        events
            .inspect(move |event| {
                if let Ok(Sse {
                    data: Some(data), ..
                }) = event
                {
                    super::super::progress::route(&progress, data);
                }
            })
            .boxed()
    }
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut custom_headers = custom_headers;
        if let Some(traceparent) = traceparent(&message)
            && let Ok(value) = HeaderValue::from_str(traceparent)
        {
            custom_headers.insert(HeaderName::from_static("traceparent"), value);
        }
        let Some(listen_id) = listen_id(&message) else {
            let answer = self
                .http
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await?;
            return Ok(match answer {
                StreamableHttpPostResponse::Sse(events, session) => {
                    StreamableHttpPostResponse::Sse(self.routing_progress(events), session)
                }
                answer => answer,
            });
        };
        let mut request = self
            .http
            .post(uri.as_ref())
            .header(ACCEPT, "text/event-stream, application/json");
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(session) = &session_id {
            request = request.header("Mcp-Session-Id", session.as_ref());
        }
        let response = request.json(&message).send().await?;
        let status = response.status();
        if !status.is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("subscriptions/listen: HTTP {status}"),
            )));
        }
        let session = session_id.map(|s| s.to_string());
        let answer = listen_answer(response, limits, session).await?;
        Ok(match answer {
            StreamableHttpPostResponse::Sse(events, session) => {
                let events = events.map(move |event| {
                    event.map(|mut event| {
                        event.data = event.data.map(|d| same_id(d, &listen_id));
                        event
                    })
                });
                StreamableHttpPostResponse::Sse(events.boxed(), session)
            }
            other => other,
        })
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        self.http
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, Error> {
        let events = self
            .http
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(self.routing_progress(events))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, Error> {
        let events = self
            .http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.routing_progress(events))
    }
}

/// The id of a `subscriptions/listen` request; `None` for any other message.
fn listen_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        ClientJsonRpcMessage::Request(r)
            if matches!(r.request, ClientRequest::SubscriptionsListenRequest(_)) =>
        {
            Some(r.id.clone())
        }
        _ => None,
    }
}

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A message of the stream with its subscription id as the request's own:
/// the reference server sends a numeric id back as a string ("7" for 7),
/// which rmcp would not match to the subscription, and so never see it
/// acknowledged.
fn same_id(data: String, id: &RequestId) -> String {
    let RequestId::Number(n) = id else {
        return data;
    };
    if !data.contains(SUBSCRIPTION_ID) {
        return data;
    }
    let Ok(mut message) = serde_json::from_str::<serde_json::Value>(&data) else {
        return data;
    };
    let Some(sub) = message
        .pointer_mut("/params/_meta")
        .and_then(|m| m.get_mut(SUBSCRIPTION_ID))
    else {
        return data;
    };
    if sub.as_str() != Some(n.to_string().as_str()) {
        return data;
    }
    *sub = serde_json::json!(n);
    message.to_string()
}

/// The answer to a `subscriptions/listen` POST as a stream of events, in
/// either framing a server may use: SSE, or JSON lines.
async fn listen_answer(
    response: reqwest::Response,
    limits: StreamableHttpResponseLimits,
    session: Option<String>,
) -> Result<StreamableHttpPostResponse, Error> {
    let media = super::media_type(response.headers());
    let body = response
        .bytes_stream()
        .map(|chunk| chunk.map_err(|e| SseError::Body(Box::new(e))));
    match media.as_deref() {
        Some("text/event-stream") => Ok(StreamableHttpPostResponse::Sse(
            SseStream::from_bytes_stream(body).boxed(),
            session,
        )),
        Some("application/json") => {
            json_messages(body.boxed(), limits.max_sse_event_size, session).await
        }
        other => Err(StreamableHttpError::UnexpectedContentType(
            other.map(str::to_string),
        )),
    }
}

/// A JSON body of one or more messages, read as they arrive. Its first
/// message decides: the request's answer comes back as one, anything else
/// opens a stream of events that carries it and the rest.
async fn json_messages(
    body: BoxStream<'static, Result<bytes::Bytes, SseError>>,
    max_message: usize,
    session: Option<String>,
) -> Result<StreamableHttpPostResponse, Error> {
    let mut messages = JsonMessages::new(body, max_message).into_stream();
    let first = match messages.next().await {
        Some(Ok(first)) => first,
        Some(Err(e)) => return Err(e.into()),
        None => {
            return Err(StreamableHttpError::UnexpectedServerResponse(
                "subscriptions/listen: an empty JSON body".into(),
            ));
        }
    };
    let data = first.data.as_deref().unwrap_or_default();
    if let Ok(answer @ (ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))) =
        serde_json::from_str::<ServerJsonRpcMessage>(data)
    {
        return Ok(StreamableHttpPostResponse::Json(answer, session));
    }
    let events = futures::stream::once(async { Ok(first) }).chain(messages);
    Ok(StreamableHttpPostResponse::Sse(events.boxed(), session))
}

/// Splits a byte stream into the JSON values it carries, whatever the
/// whitespace between them (a newline each, or none).
struct JsonMessages {
    body: BoxStream<'static, Result<bytes::Bytes, SseError>>,
    buffer: Vec<u8>,
    max_message: usize,
}

impl JsonMessages {
    fn new(body: BoxStream<'static, Result<bytes::Bytes, SseError>>, max_message: usize) -> Self {
        JsonMessages {
            body,
            buffer: Vec::new(),
            max_message,
        }
    }

    fn into_stream(self) -> Events {
        futures::stream::unfold(Some(self), |state| async move {
            let mut this = state?;
            match this.next().await {
                Some(Ok(event)) => Some((Ok(event), Some(this))),
                Some(Err(e)) => Some((Err(e), None)),
                None => None,
            }
        })
        .boxed()
    }

    /// The next whole value, waiting for more of the body as needed.
    async fn next(&mut self) -> Option<Result<Sse, SseError>> {
        loop {
            match self.take_value() {
                Ok(Some(value)) => return Some(Ok(Sse::default().data(value))),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                Some(Err(e)) => return Some(Err(e)),
                None if self.buffer.iter().all(u8::is_ascii_whitespace) => return None,
                None => return Some(Err(SseError::InvalidLine)),
            }
        }
    }

    /// A complete value from the front of the buffer, if one is there.
    fn take_value(&mut self) -> Result<Option<String>, SseError> {
        let start = self
            .buffer
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(self.buffer.len());
        let mut values = serde_json::Deserializer::from_slice(&self.buffer[start..])
            .into_iter::<&serde_json::value::RawValue>();
        let taken = match values.next() {
            Some(Ok(value)) => Some((value.get().to_string(), start + values.byte_offset())),
            Some(Err(e)) if e.is_eof() => None,
            Some(Err(e)) => return Err(SseError::Body(Box::new(e))),
            None => None,
        };
        match taken {
            Some((value, end)) => {
                self.buffer.drain(..end);
                Ok(Some(value))
            }
            None if self.buffer.len() - start > self.max_message => Err(SseError::Body(
                format!("a listen message over {} bytes", self.max_message).into(),
            )),
            None => Ok(None),
        }
    }
}

/// The trace a request passes on in its `_meta` (see
/// [`super::super::traced`]), for its `traceparent` header.
fn traceparent(message: &ClientJsonRpcMessage) -> Option<&str> {
    use rmcp::model::RequestParamsMeta as _;
    let rmcp::model::JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let meta = match &request.request {
        ClientRequest::CallToolRequest(r) => r.params.meta(),
        ClientRequest::ReadResourceRequest(r) => r.params.meta(),
        ClientRequest::GetPromptRequest(r) => r.params.meta(),
        ClientRequest::CompleteRequest(r) => r.params.meta(),
        _ => None,
    };
    meta.and_then(|m| m.get_traceparent())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(chunks: &[&'static str]) -> BoxStream<'static, Result<bytes::Bytes, SseError>> {
        let chunks: Vec<_> = chunks
            .iter()
            .map(|c| Ok(bytes::Bytes::from_static(c.as_bytes())))
            .collect();
        futures::stream::iter(chunks).boxed()
    }

    async fn values(chunks: &[&'static str]) -> Vec<Result<String, String>> {
        JsonMessages::new(body(chunks), 1024)
            .into_stream()
            .map(|r| r.map(|e| e.data.unwrap()).map_err(|e| e.to_string()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn lines_split_anywhere_come_out_whole() {
        let got = values(&["{\"a\":1}\n{\"b\"", ":[1,2]}\n", "\n{\"c\":\"x\\n\"}\n"]).await;
        assert_eq!(
            got,
            vec![
                Ok(r#"{"a":1}"#.to_string()),
                Ok(r#"{"b":[1,2]}"#.to_string()),
                Ok(r#"{"c":"x\n"}"#.to_string())
            ]
        );
    }

    #[tokio::test]
    async fn a_pretty_printed_body_and_values_with_no_newline_between() {
        let got = values(&["{\n  \"a\": 1\n}{\"b\":2}"]).await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(Result::is_ok));
    }

    #[tokio::test]
    async fn a_cut_value_and_a_broken_one_are_errors() {
        let cut = values(&["{\"a\":1}\n{\"b\":"]).await;
        assert_eq!(cut.len(), 2);
        assert!(cut[1].is_err(), "{cut:?}");
        let broken = values(&["{\"a\" 1}\n"]).await;
        assert!(broken[0].is_err(), "{broken:?}");
    }

    #[tokio::test]
    async fn a_message_past_the_limit_is_refused_before_it_ends() {
        let long: &'static str =
            Box::leak(format!("{{\"a\":\"{}", "x".repeat(2000)).into_boxed_str());
        let got = values(&[long]).await;
        assert!(
            got[0].as_ref().is_err_and(|e| e.contains("over 1024")),
            "{got:?}"
        );
    }

    #[test]
    fn a_numeric_id_sent_back_as_a_string_is_the_request_s_own() {
        let ack = r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"7"}}}"#;
        let fixed = same_id(ack.into(), &RequestId::Number(7));
        assert!(
            fixed.contains(r#""io.modelcontextprotocol/subscriptionId":7"#),
            "{fixed}"
        );
        // Another id, or a string request id, is left as it came.
        assert_eq!(same_id(ack.into(), &RequestId::Number(8)), ack);
        assert_eq!(same_id(ack.into(), &RequestId::String("7".into())), ack);
    }

    #[tokio::test]
    async fn an_answer_first_is_an_answer_and_a_notification_first_opens_a_stream() {
        let error = r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#;
        let got = json_messages(body(&[error]), 1024, None).await.unwrap();
        assert!(matches!(
            got,
            StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(_), _)
        ));
        let ack = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{}}\n";
        let StreamableHttpPostResponse::Sse(events, _) =
            json_messages(body(&[ack, ack]), 1024, None).await.unwrap()
        else {
            panic!("a stream")
        };
        assert_eq!(events.collect::<Vec<_>>().await.len(), 2);
    }
}
