//! The rmcp test server as a `wasi:http/proxy` component: a request comes
//! in through `wasi:http/incoming-handler`, goes to rmcp's Streamable HTTP
//! service (stateless: every request stands alone, as an instance per
//! request needs), and its answer goes back out. What outlives a request is
//! kept in `wasi:keyvalue` ([`counter`]).

#[path = "../../rmcp-stdio/src/server.rs"]
mod server;
mod counter;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use wasi::exports::http::incoming_handler::Guest;
use wasi::http::types::{Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam};
use wasi::io::streams::StreamError;

struct Handler;

impl Guest for Handler {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime");
        let answer = runtime.block_on(serve(request));
        send(out, answer);
    }
}

wasi::http::proxy::export!(Handler);

/// The request as `http` types, answered by rmcp.
async fn serve(request: IncomingRequest) -> http::Response<Bytes> {
    let incoming = match read(request) {
        Ok(r) => r,
        Err(why) => return plain(400, why),
    };
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    let service = StreamableHttpService::new(
        || Ok(server::Probe::with_tools(server::Probe::counter_router())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let response = match tower_service::Service::call(&mut service.clone(), incoming).await {
        Ok(r) => r,
        Err(e) => return plain(500, format!("{e}")),
    };
    let (parts, body) = response.into_parts();
    match body.collect().await {
        Ok(body) => http::Response::from_parts(parts, body.to_bytes()),
        Err(e) => plain(500, format!("{e}")),
    }
}

fn plain(status: u16, text: impl Into<String>) -> http::Response<Bytes> {
    let mut response = http::Response::new(Bytes::from(text.into()));
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    response
}

/// The incoming request, its body read whole.
fn read(request: IncomingRequest) -> Result<http::Request<Full<Bytes>>, String> {
    let method = match request.method() {
        Method::Get => http::Method::GET,
        Method::Post => http::Method::POST,
        Method::Delete => http::Method::DELETE,
        Method::Options => http::Method::OPTIONS,
        other => return Err(format!("{other:?} is not served")),
    };
    let authority = request.authority().unwrap_or_else(|| "localhost".into());
    let path = request.path_with_query().unwrap_or_else(|| "/".into());
    let mut builder = http::Request::builder().method(method).uri(format!("http://{authority}{path}"));
    for (name, value) in request.headers().entries() {
        builder = builder.header(name, value);
    }
    let body = request.consume().map_err(|()| "the body was taken")?;
    let stream = body.stream().map_err(|()| "the body has no stream")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(e) => return Err(format!("reading the body: {e:?}")),
        }
    }
    drop(stream);
    builder.body(Full::new(Bytes::from(bytes))).map_err(|e| e.to_string())
}

/// Sends `answer` out.
fn send(out: ResponseOutparam, answer: http::Response<Bytes>) {
    let pairs: Vec<(String, Vec<u8>)> = answer
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
        .collect();
    let headers = Fields::from_list(&pairs).unwrap_or_else(|_| Fields::new());
    let response = OutgoingResponse::new(headers);
    let _ = response.set_status_code(answer.status().as_u16());
    let body = response.body().expect("a body");
    ResponseOutparam::set(out, Ok(response));
    let stream = body.write().expect("a body stream");
    for chunk in answer.body().chunks(4096) {
        if stream.blocking_write_and_flush(chunk).is_err() {
            return;
        }
    }
    drop(stream);
    let _ = OutgoingBody::finish(body, None);
}
