//! `prompts/get` and `resources/read` as they are answered once the
//! request may run (for a client of the stateless revision, inside a held
//! request; see [`super::held`]), with the log messages the request asks for
//! (see [`super::request_logs`]).

use super::era::Complete;
use super::wire::{from_json, internal};
use super::{Session, traced};
use crate::host::HostError;
use rmcp::ErrorData as McpError;
use rmcp::model::{GetPromptRequestParams, GetPromptResult};
use rmcp::service::{RequestContext, RoleServer};

impl Session {
    /// A prompt, got for this session's client.
    pub(super) async fn prompt_now(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResult, McpError> {
        let span = traced::span(&context, "prompts/get", Some(&request.name));
        let logged = context.clone();
        let server = self.prompt_server(&context, &request.name).await;
        let got = traced::run(span, async move {
            let client = self.client(&context.extensions);
            let args = request.arguments.clone();
            self.shared.ready().await;
            let got = match self.prompt_hidden(&client, &request.name).await {
                true => Err(HostError::PromptNotFound(request.name.to_string())),
                false => {
                    // A guard's question about it goes to the client.
                    let reader = self.caller(&client, crate::host::pipeline::Via::Call, &context);
                    let host = &self.shared.host;
                    let (options, _) = self.call_options(&context);
                    host.get_prompt_as(&reader, &request.name, args, options)
                        .await
                }
            };
            match got {
                Ok(v) => from_json::<GetPromptResult>(v).map(|r| r.complete()),
                Err(HostError::PromptNotFound(n)) => Err(McpError::invalid_params(
                    format!("prompt \"{n}\" not found"),
                    None,
                )),
                Err(e) => Err(self.request_error(e, &context, internal).await),
            }
        });
        self.with_request_logs(&logged, server, got).await
    }

    /// A resource, read for this session's client.
    pub(super) async fn read_now(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResult, McpError> {
        let span = traced::span(&context, "resources/read", Some(&request.uri));
        let logged = context.clone();
        let server = self.resource_server(&request.uri, &context).await;
        let read = traced::run(span, async move {
            let client = self.client(&context.extensions);
            self.resource_read(&client, &request.uri, &context)
                .await
                .map(|r| r.complete())
        });
        self.with_request_logs(&logged, server, read).await
    }

    /// The server of the prompt `name`, when the request asks for log
    /// messages (only then is it looked up).
    async fn prompt_server(
        &self,
        context: &RequestContext<RoleServer>,
        name: &str,
    ) -> Option<String> {
        context.meta.log_level()?;
        let snapshot = self.shared.host.snapshot().await.ok()?;
        snapshot.prompt(name).map(|p| p.server.clone())
    }

    /// The server a read of `uri` goes to, for this session's client, when
    /// the request asks for log messages (only then is it routed twice).
    async fn resource_server(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<String> {
        context.meta.log_level()?;
        let client = self.client(&context.extensions);
        let host = &self.shared.host;
        let sees = |s: &str| client.allows(s);
        let route = host.route_resource_within(uri, &sees).await;
        route.ok().map(|r| r.server)
    }
}
