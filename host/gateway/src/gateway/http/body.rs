//! Before and after rmcp reads a POST: the body is buffered (up to
//! [`MAX_BODY_BYTES`]) and kept, so that where rmcp answers with a bare HTTP
//! status, the client gets a JSON-RPC error instead — a parse error for a body
//! that is not JSON, an invalid request for a batch or anything else that is
//! not one JSON-RPC message, and a refusal that says how to raise the limit
//! when every session slot is taken.
//!
//! rmcp still sees every request first (it checks `Host`, `Origin`, `Accept`
//! and `Content-Type` before the body), except an `initialize` arriving while
//! every slot is taken, and a session's request beyond its requests in flight
//! ([`super::per_session`]), which are refused here without asking rmcp.

use super::MAX_BODY_BYTES;
use super::ops::{self, Ops};
use super::per_session::PerSession;
use super::sessions::{CappedSessions, FULL};
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The largest rmcp error body read to find out why it failed.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// JSON-RPC: the body is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the body is not a valid request object.
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC, implementation-defined server error: no session slot is free.
const TOO_MANY_SESSIONS: i64 = -32000;
/// JSON-RPC, implementation-defined server error: the replica is stopping.
const DRAINING: i64 = -32001;
/// JSON-RPC, implementation-defined server error: the session has as many
/// requests in flight as it may.
const TOO_MANY_REQUESTS: i64 = -32002;
/// What a client refused for its requests in flight is told to wait, in seconds.
const RETRY_AFTER_SECS: &str = "1";

/// What the body checks need to know of the server.
pub(super) struct Guard {
    pub(super) sessions: Arc<CappedSessions<LocalSessionManager>>,
    /// How long an idle session lives.
    pub(super) keep_alive: Option<Duration>,
    /// Requests in flight, and whether the replica is draining.
    pub(super) ops: Arc<Ops>,
    /// Each session's requests in flight.
    pub(super) per_session: Arc<PerSession>,
}

/// The middleware: see the module documentation.
pub(super) async fn json_rpc(guard: Arc<Guard>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let in_flight = guard.ops.enter();
    let says_json = is_json(request.headers());
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let sessionless = !request.headers().contains_key("mcp-session-id");
    let (parts, body) = request.into_parts();
    let bytes = match buffer(body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let mut place = None;
    if let Some((key, id)) = in_flight_key(session.as_deref(), &parts.headers, &bytes) {
        match guard.per_session.enter(&key) {
            Some(taken) => place = Some(taken),
            None => return too_many_requests(guard.per_session.max(), id),
        }
    }
    if sessionless && guard.ops.draining() {
        return json_rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            Head::of(&bytes).id,
            DRAINING,
            "this mcpw is stopping and takes no new sessions or stateless requests: send it again (to another replica)".into(),
            None,
        );
    }
    if sessionless && guard.sessions.taken() >= guard.sessions.max() {
        let head = Head::of(&bytes);
        if head.method.as_deref() == Some("initialize") {
            return refuse_session(&guard, head.id);
        }
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    match response.status() {
        // rmcp answers 415 both for a Content-Type that is not JSON (right)
        // and for a JSON body that does not parse as a message.
        StatusCode::UNSUPPORTED_MEDIA_TYPE if says_json => invalid_body(&bytes),
        // A session refused by the slot count (a race the check above lost).
        StatusCode::INTERNAL_SERVER_ERROR if sessionless => {
            let (response_parts, body) = response.into_parts();
            let text = axum::body::to_bytes(body, MAX_ERROR_BODY_BYTES)
                .await
                .unwrap_or_default();
            if String::from_utf8_lossy(&text).contains(FULL) {
                return refuse_session(&guard, Head::of(&bytes).id);
            }
            Response::from_parts(response_parts, Body::from(text))
        }
        _ => ops::held_until_sent(response, (in_flight, place)),
    }
}

/// Where a request counts among the requests in flight, and its `id` (an
/// answer to mcpw's question or a notification takes no place): in its
/// session; a request without a session (a client of the stateless
/// revision) among those of its credential, so that a stateless client is
/// held to the cap a session is. `initialize` opens a session and is not
/// counted.
fn in_flight_key(
    session: Option<&str>,
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> Option<(String, Value)> {
    let head = Head::of(body);
    let id = head.id?;
    match (session, head.method.as_deref()) {
        (Some(session), Some(_)) => Some((session.to_string(), id)),
        (None, Some(method)) if method != "initialize" => {
            Some((stateless_key(headers.get(header::AUTHORIZATION)), id))
        }
        _ => None,
    }
}

/// The key of the stateless requests sent with `credential`: a digest, so
/// that no token is held in memory longer than its request.
fn stateless_key(credential: Option<&header::HeaderValue>) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(credential.map_or(&b""[..], |v| v.as_bytes()));
    let short: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("stateless {short}")
}

/// The answer to a request beyond its session's requests in flight.
fn too_many_requests(max: usize, id: Value) -> Response {
    let message = format!(
        "this session already has {max} requests waiting for their answers, the most mcpw \
         takes at once (settings.maxRequestsInFlight): send it again once one is answered"
    );
    tracing::debug!("refused a request: its session has {max} in flight");
    let mut response = json_rpc_error(
        StatusCode::TOO_MANY_REQUESTS,
        Some(id),
        TOO_MANY_REQUESTS,
        message,
        Some(json!({"maxRequestsInFlight": max})),
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        header::HeaderValue::from_static(RETRY_AFTER_SECS),
    );
    response
}

/// Is the `Content-Type` JSON (as rmcp decides it)?
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// The whole body, or the answer when it is too large or cannot be read.
async fn buffer(body: Body) -> Result<Bytes, Response> {
    let mut stream = body.into_data_stream();
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut len = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            (
                StatusCode::BAD_REQUEST,
                format!("Bad Request: cannot read the request body: {e}"),
            )
                .into_response()
        })?;
        len += chunk.len();
        if len > MAX_BODY_BYTES {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {MAX_BODY_BYTES} bytes"),
            )
                .into_response());
        }
        chunks.push(chunk);
    }
    // One chunk (the usual case) is kept as it came.
    Ok(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.swap_remove(0),
        _ => Bytes::from(chunks.concat()),
    })
}

/// The `id` and `method` of a JSON-RPC message, as far as the body has them.
#[derive(Default, serde::Deserialize)]
struct Head {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
}

impl Head {
    fn of(body: &[u8]) -> Head {
        let mut head: Head = serde_json::from_slice(body).unwrap_or_default();
        // Only a number or a string identifies a request.
        head.id = head.id.filter(|id| id.is_number() || id.is_string());
        head
    }
}

fn json_rpc_error(
    status: StatusCode,
    id: Option<Value>,
    code: i64,
    message: String,
    data: Option<Value>,
) -> Response {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Why a JSON body rmcp could not read is not a JSON-RPC message.
fn invalid_body(body: &[u8]) -> Response {
    let bad = |id, message: &str| {
        json_rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            INVALID_REQUEST,
            format!("Invalid Request: {message}"),
            None,
        )
    };
    match serde_json::from_slice::<Value>(body) {
        Err(e) => json_rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            PARSE_ERROR,
            format!("Parse error: the body is not JSON ({e})"),
            None,
        ),
        Ok(Value::Array(_)) => bad(
            None,
            "batches are not supported: send one JSON-RPC message per POST",
        ),
        Ok(Value::Object(message)) => {
            let id = Head::of(body).id;
            let why = if message.get("jsonrpc") != Some(&json!("2.0")) {
                "\"jsonrpc\" must be \"2.0\""
            } else if ["method", "result", "error"]
                .iter()
                .all(|k| !message.contains_key(*k))
            {
                "a JSON-RPC message needs a \"method\" (a request or a notification) or a \"result\" or an \"error\" (a response)"
            } else {
                "not a JSON-RPC request, notification or response"
            };
            bad(id, why)
        }
        Ok(_) => bad(None, "a JSON-RPC message must be a JSON object"),
    }
}

/// The answer to an `initialize` when every session slot is taken.
fn refuse_session(guard: &Guard, id: Option<Value>) -> Response {
    let max = guard.sessions.max();
    let expiry = match guard.keep_alive {
        Some(idle) => format!(", wait for one to expire after {} s idle", idle.as_secs()),
        None => String::new(),
    };
    let message = format!(
        "mcpw serves at most {max} sessions at a time and none is free: close one \
         (HTTP DELETE /mcp with its Mcp-Session-Id){expiry}, or restart `mcpw serve` \
         with a higher --max-sessions"
    );
    tracing::warn!("refused a session: {max} sessions are open (--max-sessions)");
    json_rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        TOO_MANY_SESSIONS,
        message,
        Some(json!({"maxSessions": max, "openSessions": guard.sessions.taken()})),
    )
}
