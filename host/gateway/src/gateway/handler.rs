//! The MCP server side of a session: each request rmcp hands over, sent on
//! to the concern that answers it.

use super::era::{self, Complete};
use super::wire::{apps_left_out, custom_request_error, from_json, internal, takes_apps};
use super::{Session, held, session_events, traced};
use crate::host::HostError;
use crate::log_level::LogLevel;
use rmcp::model::{
    CallToolRequestParams, GetPromptRequestParams, ListPromptsResult, ListToolsResult,
    PaginatedRequestParams, ServerConfig, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use std::sync::Arc;

impl ServerHandler for Session {
    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        std::borrow::Cow::Borrowed(rmcp::model::ProtocolVersion::known_up_to(
            &era::NEWEST_SERVED,
        ))
    }

    fn get_info(&self) -> ServerConfig {
        let instructions = self.shared.exposed().instructions();
        // Skills: every server's, from the manifests held, folders too.
        let mut extensions = json!({rmcp::model::TASKS_EXTENSION_ID: {},
                                    rmcp::model::SKILLS_EXTENSION_ID: {"directoryRead": true}});
        if self.shared.host.servers().has_views() {
            extensions[crate::apps::EXTENSION] = json!({"mimeTypes": [crate::apps::MIME]});
        }
        serde_json::from_value(json!({
            "protocolVersion": rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": {"tools": {"listChanged": self.shared.exposed().lists_change()}, "prompts": {"listChanged": true},
                             "resources": {"subscribe": true, "listChanged": true},
                             "logging": {}, "completions": {},
                             "extensions": extensions},
            "serverInfo": {"name": "mcpw", "version": env!("CARGO_PKG_VERSION")},
            "instructions": instructions,
        }))
        .expect("a valid server info")
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, McpError> {
        let span = traced::span(&context, "discover", None);
        traced::run(span, async move {
            self.shared.host.servers().sessions().release();
            Ok(rmcp::model::DiscoverResult::from_server_info(
                self.supported_protocol_versions().into_owned(),
                self.get_info(),
            ))
        })
        .await
    }

    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, McpError> {
        let span = traced::span(&context, "initialize", None);
        traced::run(span, async move {
            // The session's client is the one whose token opened it: the server
            // requests and log messages it gets are of that client's servers.
            *self.state.client.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(self.client(&context.extensions));
            context.peer.set_peer_info(request.clone());
            self.negotiate_initialize(&request)
        })
        .await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let span = traced::span(&context, "tools/list", None);
        traced::run(span, async move {
            self.note_stateless_client(&context).await;
            self.state
                .link
                .seen(&context.extensions, &context.peer)
                .await;
            // A server that cannot tell of its changes is asked again (in the
            // background; a change reaches the session as list_changed).
            self.shared.host.servers().freshen_unheard();
            let client = self.client(&context.extensions);
            self.list_unlisted_for(&client, &context).await;
            let mut tools = self.tool_list_for(&client).await?;
            if !takes_apps(&context) {
                apps_left_out(&mut tools);
            }
            Ok(ListToolsResult::with_all_items(tools).complete())
        })
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        self.note_stateless_client(&context).await;
        // Before `initialized` is handled, maybe: the call counts for this session.
        self.opened(&context);
        match held::is_stateless(&context) {
            true => self.held_call(request, context).await,
            false => self.call_now(request, context).await,
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let span = traced::span(&context, "prompts/list", None);
        traced::run(span, async move {
            self.shared.host.servers().freshen_unheard();
            let client = self.client(&context.extensions);
            self.shared.ready().await;
            let snapshot = self.shared.host.snapshot().await.map_err(internal)?;
            let prompts: Vec<Value> = snapshot
                .prompts()
                .iter()
                .filter(|p| client.allows(&p.server))
                .map(|p| {
                    let mut v = p.prompt.clone();
                    v["name"] = json!(p.name);
                    v
                })
                .collect();
            from_json(json!({"prompts": prompts})).map(Complete::complete)
        })
        .await
    }

    async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        if !held::is_stateless(&context) {
            return self.prompt_now(request, context).await.map(Into::into);
        }
        let retry = (request.request_state.take(), request.input_responses.take());
        let name = request.name.to_string();
        let start = |gateway: Session, context| async move {
            let got = gateway.prompt_now(request, context).await;
            got.map(rmcp::model::ServerResult::GetPromptResult)
        };
        let kind = held::Kind::Prompt;
        match self.held(&name, kind, retry, context, start).await? {
            rmcp::model::ServerResult::InputRequiredResult(r) => Ok(r.into()),
            rmcp::model::ServerResult::GetPromptResult(r) => Ok(r.into()),
            other => Err(held::unexpected(&other)),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        let span = traced::span(&context, "resources/list", None);
        traced::run(span, async move {
            self.shared.host.servers().freshen_unheard();
            let client = self.client(&context.extensions);
            let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
            self.resource_list(&client, cursor)
                .await
                .map(Complete::complete)
        })
        .await
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, McpError> {
        let span = traced::span(&context, "skills/list", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
            self.skill_list(&client, cursor)
                .await
                .map(Complete::complete)
        })
        .await
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, McpError> {
        let span = traced::span(&context, "skills/get", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            self.skill_get(&client, &request.uri)
                .await
                .map(Complete::complete)
        })
        .await
    }

    async fn read_resource_directory(
        &self,
        request: rmcp::model::ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceDirectoryResult, McpError> {
        let span = traced::span(&context, "resources/directory/read", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            let cursor = request.cursor.as_deref();
            self.skill_directory(&client, &request.uri, cursor)
                .await
                .map(Complete::complete)
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        let span = traced::span(&context, "resources/templates/list", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
            self.resource_template_list(&client, cursor)
                .await
                .map(Complete::complete)
        })
        .await
    }

    async fn read_resource(
        &self,
        mut request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        if !held::is_stateless(&context) {
            return self.read_now(request, context).await.map(Into::into);
        }
        let retry = (request.request_state.take(), request.input_responses.take());
        let uri = request.uri.clone();
        let start = |gateway: Session, context| async move {
            let read = gateway.read_now(request, context).await;
            read.map(rmcp::model::ServerResult::ReadResourceResult)
        };
        let kind = held::Kind::Read;
        match self.held(&uri, kind, retry, context, start).await? {
            rmcp::model::ServerResult::InputRequiredResult(r) => Ok(r.into()),
            rmcp::model::ServerResult::ReadResourceResult(r) => Ok(r.into()),
            other => Err(held::unexpected(&other)),
        }
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "resources/subscribe", Some(&request.uri));
        traced::run(span, async move {
            self.state
                .link
                .seen(&context.extensions, &context.peer)
                .await;
            let client = self.client(&context.extensions);
            self.resource_watch(&client, &request.uri, true).await
        })
        .await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "resources/unsubscribe", Some(&request.uri));
        traced::run(span, async move {
            self.state
                .link
                .seen(&context.extensions, &context.peer)
                .await;
            let client = self.client(&context.extensions);
            self.resource_watch(&client, &request.uri, false).await
        })
        .await
    }

    #[allow(deprecated)] // logging is in every revision before 2026-07-28
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "logging/setLevel", None);
        traced::run(span, async move {
            self.state
                .link
                .seen(&context.extensions, &context.peer)
                .await;
            let level = LogLevel::of(&request.level)
                .ok_or_else(|| McpError::invalid_params("unknown log level", None))?;
            *self
                .state
                .log_level
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(level);
            self.shared.host.servers().set_log_level(level).await;
            if let Ok(Value::String(name)) = serde_json::to_value(request.level) {
                self.state.link.share_log_level(&name).await;
            }
            Ok(())
        })
        .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        // rmcp narrows it to what `get_info` offers (no tool list changes in
        // the proxy exposure).
        Some(requested.clone())
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        self.listen_stream(context).await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        let span = traced::span(&context, "tasks/get", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            Session::get_task(self, &client, request.task_id).await
        })
        .await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "tasks/update", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            let caller = self.caller(&client, crate::host::pipeline::Via::Call, &context);
            Session::update_task(self, &client, &caller, request).await
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = traced::span(&context, "tasks/cancel", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            Session::cancel_task(self, &client, request.task_id).await
        })
        .await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        let span = traced::span(&context, "completion/complete", None);
        traced::run(span, async move {
            let client = self.client(&context.extensions);
            let params = serde_json::to_value(request).map_err(internal)?;
            self.shared.ready().await;
            let completed = match self.completion_hidden(&client, &params).await {
                Some(hidden) => Err(hidden),
                None => self.shared.host.complete(params).await,
            };
            match completed {
                Ok(v) => from_json(v).map(Complete::complete),
                Err(e @ (HostError::PromptNotFound(_) | HostError::ResourceNotFound(_))) => {
                    Err(McpError::invalid_params(e.to_string(), None))
                }
                Err(e) => Err(internal(e)),
            }
        })
        .await
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(custom_request_error(&request))
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let client = self.session_client();
        self.open_session(&context.peer);
        *self.state.counted.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(self.shared.sessions_by_client.open(client.name()));
        session_events::spawn(
            &self.shared,
            context.peer.clone(),
            Arc::downgrade(&self.state.watching),
            self.state.log_level.clone(),
            client,
        );
        self.state
            .link
            .seen(&context.extensions, &context.peer)
            .await;
        // A host joining after servers were connected (eager ones, or for
        // another session) has them connected again, when idle, offering
        // the extension: a server registers its app tools only for a host.
        let declares_apps = context.peer.peer_info().is_some_and(|info| {
            serde_json::to_value(&info.capabilities)
                .ok()
                .is_some_and(|c| c.as_object().is_some_and(crate::apps::declared))
        });
        if declares_apps {
            let servers = self.shared.host.servers();
            tokio::spawn(async move { servers.renew_offers().await });
        }
    }
}
