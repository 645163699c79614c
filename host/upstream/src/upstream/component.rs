//! A connection to a component server (see [`crate::components`]): a
//! command's instance spoken to over its pipes as a stdio server is, or a
//! proxy's incoming handler handed each Streamable HTTP request in this
//! process, no port.

use super::{ConnectContext, ConnectError, Connection, Routes, stdio};
use crate::components::{HttpServer, Started};
use crate::config::permissions::Permissions;
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::SseStream;
use std::collections::HashMap;
use std::sync::Arc;

/// The address a proxy component is spoken to at: requests never leave the
/// process, and a server that checks `Host` sees a loopback name.
const URL: &str = "http://localhost/mcp";

impl Connection {
    /// Starts the component in `file` and initializes with it.
    pub(super) async fn instance(
        (file, sha256): (&str, Option<&str>),
        permissions: &Permissions,
        debug: bool,
        ctx: &ConnectContext,
        routes: &Routes,
    ) -> Result<(Connection, Arc<stdio::StderrTail>), ConnectError> {
        let env = crate::secrets::resolve_all(
            &permissions.env,
            "permissions.env",
            &ctx.server,
            &ctx.redact,
            Some(&ctx.secrets),
        )
        .await?;
        let tail = Arc::new(stdio::StderrTail::default());
        let (noted, kept) = (tail.clone(), tail.clone());
        let from = crate::components::Start {
            file,
            sha256,
            permissions,
            env: &env,
            cache_dir: ctx.env.cache_dir().join("components"),
            server: &ctx.server,
            stores: ctx.stores.clone(),
        };
        let server = ctx.server.clone();
        let stderr = move |line: String| kept.heard(&server, debug, line);
        let started = crate::components::start(from, move |why| noted.note(why, true), stderr)
            .await
            .map_err(|message| ConnectError::Spawn {
                command: file.to_string(),
                message,
            })?;
        let conn = match started {
            Started::Command(instance) => {
                stdio::follow_stderr(instance.stderr, tail.clone(), ctx.server.clone(), debug);
                let progress = routes.progress.clone();
                let answered = Some(instance.answered);
                let (transport, tail) = stdio::lines(
                    instance.read,
                    instance.write,
                    progress,
                    tail.clone(),
                    answered,
                );
                let mut conn = Connection::over_lines(transport, tail, None, ctx, routes).await?;
                conn.instance = Some(instance.stop);
                conn
            }
            Started::Http(server) => {
                let client = ComponentClient(server);
                let service =
                    super::http::connect_with(client, URL, HashMap::new(), ctx, routes).await?;
                let kind = super::TransportKind::StreamableHttp;
                Connection::new(service, kind, Some(tail.clone()), ctx, routes)
            }
        };
        Ok((conn, tail))
    }
}

/// rmcp's Streamable HTTP client, its requests handed to a proxy component.
#[derive(Clone)]
struct ComponentClient(Arc<HttpServer>);

/// Why a component did not answer a request.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ComponentError(String);

type Error = StreamableHttpError<ComponentError>;

impl ComponentClient {
    /// Sends `request` and returns the component's answer, or why it gave none.
    async fn send(
        &self,
        request: http::request::Builder,
        body: Vec<u8>,
    ) -> Result<http::Response<wasmtime_wasi_http::p2::body::HyperOutgoingBody>, Error> {
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| StreamableHttpError::Client(ComponentError(e.to_string())))?;
        self.0
            .handle(request)
            .await
            .map_err(|e| StreamableHttpError::Client(ComponentError(e)))
    }
}

/// A request to `uri` with the headers every request carries.
fn request(
    method: http::Method,
    uri: &str,
    session: Option<&str>,
    auth: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> http::request::Builder {
    let mut request = http::Request::builder().method(method).uri(uri);
    for (name, value) in custom {
        request = request.header(name, value);
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    if let Some(token) = auth {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    request
}

impl StreamableHttpClient for ComponentClient {
    type Error = ComponentError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let body = serde_json::to_vec(&message)?;
        let post = request(
            http::Method::POST,
            &uri,
            session_id.as_deref(),
            auth_header,
            custom_headers,
        )
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json");
        let response = self.send(post, body).await?;
        answer(response).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let delete = request(
            http::Method::DELETE,
            &uri,
            Some(&session_id),
            auth_header,
            custom_headers,
        );
        self.send(delete, Vec::new()).await.map(drop)
    }

    async fn get_stream(
        &self,
        _uri: Arc<str>,
        _session_id: Option<Arc<str>>,
        _last_event_id: Option<String>,
        _auth_header: Option<String>,
        _custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<futures::stream::BoxStream<'static, Result<sse_stream::Sse, SseError>>, Error> {
        // An instance lives for one request: nothing stays to stream.
        Err(StreamableHttpError::ServerDoesNotSupportSse)
    }
}

/// The component's answer to a POST, as rmcp reads one.
async fn answer(
    response: http::Response<wasmtime_wasi_http::p2::body::HyperOutgoingBody>,
) -> Result<StreamableHttpPostResponse, Error> {
    let status = response.status();
    if matches!(
        status,
        http::StatusCode::ACCEPTED | http::StatusCode::NO_CONTENT
    ) {
        return Ok(StreamableHttpPostResponse::Accepted);
    }
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let media = super::http::media_type(response.headers());
    let body = response.into_body();
    if !status.is_success() {
        let text = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        return Err(StreamableHttpError::UnexpectedServerResponse(
            format!("HTTP {status}: {text}").into(),
        ));
    }
    match media.as_deref() {
        Some("application/json") => {
            let bytes = body
                .collect()
                .await
                .map_err(|e| StreamableHttpError::Client(ComponentError(format!("{e:?}"))))?
                .to_bytes();
            let message: ServerJsonRpcMessage = serde_json::from_slice(&bytes)?;
            Ok(StreamableHttpPostResponse::Json(message, session))
        }
        Some("text/event-stream") => {
            let bytes = body.into_data_stream().map(|chunk| {
                chunk.map_err(|e| SseError::Body(Box::new(ComponentError(format!("{e:?}")))))
            });
            Ok(StreamableHttpPostResponse::Sse(
                SseStream::from_bytes_stream(bytes).boxed(),
                session,
            ))
        }
        other => Err(StreamableHttpError::UnexpectedContentType(
            other.map(str::to_string),
        )),
    }
}
