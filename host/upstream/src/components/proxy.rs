//! The `wasi:http/proxy` shape: a component that serves Streamable HTTP. mcpw
//! hands each request to its incoming handler in this process (no port): a
//! fresh instance per request, from the pre-instantiated component, under
//! the permissions (its memory per instance, `timeoutMs` per request). Its
//! own outgoing requests reach only the hosts granted.

use super::sandbox::{self, Allowed};
use super::{ServerEngine, ServerState};
use crate::config::permissions::Permissions;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::sync::Arc;
use std::time::Duration;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::{WasiBody, WasiHttpHooks};

/// The most of its standard error a request keeps.
const STDERR_BYTES: usize = 64 * 1024;

/// A `wasi:http/proxy` component ready to take requests.
pub struct HttpServer {
    pub(super) pre: ProxyPre<ServerState>,
    pub(super) permissions: Permissions,
    pub(super) env: Vec<(String, String)>,
    pub(super) name: String,
    pub(super) allowed: Arc<Allowed>,
    pub(super) kv: super::keyvalue::Scope,
    /// Told each line the component wrote to its standard error.
    pub(super) stderr: Box<dyn Fn(String) + Send + Sync>,
}

impl HttpServer {
    /// Answers `request` with a fresh instance.
    pub async fn handle(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<HyperOutgoingBody>, String> {
        let timeout = Duration::from_millis(self.permissions.timeout_ms);
        let stderr = MemoryOutputPipe::new(STDERR_BYTES);
        let answered = tokio::time::timeout(timeout, self.instance(request, stderr.clone())).await;
        for line in String::from_utf8_lossy(&stderr.contents()).lines() {
            (self.stderr)(line.to_string());
        }
        match answered {
            Ok(answer) => answer,
            Err(_) => Err(format!(
                "the component answered a request for longer than its timeoutMs ({} ms) and was stopped",
                timeout.as_millis()
            )),
        }
    }

    async fn instance(
        &self,
        request: http::Request<Full<Bytes>>,
        stderr: MemoryOutputPipe,
    ) -> Result<http::Response<HyperOutgoingBody>, String> {
        let wasi = sandbox::http_context(
            &self.permissions,
            &self.env,
            &self.name,
            stderr,
            self.allowed.clone(),
        )?;
        let state = ServerState::new(
            wasi,
            &self.permissions,
            self.allowed.clone(),
            self.kv.clone(),
        );
        let engine = ServerEngine::shared();
        let _live = engine.live();
        let mut store = engine.store(state);
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let mut http = wasmtime_wasi_http::WasiHttpView::http(store.data_mut());
        let incoming = http
            .new_incoming_request(Scheme::Http, request)
            .map_err(|e| e.to_string())?;
        let out = http
            .new_response_outparam(sender)
            .map_err(|e| e.to_string())?;
        let pre = self.pre.clone();
        let run = tokio::spawn(async move {
            let proxy = pre.instantiate_async(&mut store).await?;
            proxy
                .wasi_http_incoming_handler()
                .call_handle(&mut store, incoming, out)
                .await
        });
        match receiver.await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(code)) => Err(format!("the component answered with an error: {code:?}")),
            Err(_) => match run.await {
                Ok(Ok(())) => Err("the component gave no answer".into()),
                Ok(Err(trap)) => Err(format!("the component stopped: {trap:#}")),
                Err(e) => Err(format!("the component stopped: {e}")),
            },
        }
    }
}

/// A component's outgoing requests (`wasi:http`): to the hosts granted only.
pub(crate) struct Outgoing {
    pub(super) allowed: Arc<Allowed>,
}

impl WasiHttpHooks for Outgoing {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = wasmtime_wasi_http::Result<(
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                )>,
            > + Send,
    > {
        drop(fut);
        let allowed = self.allowed.clone();
        Box::new(async move {
            let uri = request.uri().clone();
            let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
                Some("https") => 443,
                _ => 80,
            });
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']');
            if !allowed.admits_host(host, port) {
                sandbox::refused(format!("a request to {uri}"));
                return Err(wasmtime_wasi_http::Error::HttpRequestDenied);
            }
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            let io: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send> =
                Box::new(io);
            Ok((response.map(BodyExt::boxed_unsync), io))
        })
    }
}
