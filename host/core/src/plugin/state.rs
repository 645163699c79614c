//! The data of a guest store, and the host side of the guest imports: each call
//! checks the guest's grants first, and a denied call is an error value.

mod older;
pub(crate) mod toolbox;

use super::limits::{Limits, StoreLimiter};
use super::services::{HostServices, ServiceError};
use super::wit::latest::mcpw::plugin::{calls, catalog, embed, lifecycle, log, types};
use crate::catalog::{ConnectionState, ServerStatus, Tool, ToolKind};
use crate::config::Lifecycle;
use crate::config::{Capability, Grants};
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Log records a guest may write per call; more are dropped, so that a guest
/// cannot flood the host's log.
const LOG_BUDGET: u32 = 100;
/// Longest log message kept.
const LOG_MAX_LEN: usize = 4096;

/// The clocks a guest reads through WASI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clocks {
    /// The host's own.
    Host,
    /// Clocks that never move and read zero (the Unix epoch).
    Stopped,
}

/// A clock that reads zero.
struct Stopped;

impl wasmtime_wasi::HostWallClock for Stopped {
    fn resolution(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1)
    }
    fn now(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

impl wasmtime_wasi::HostMonotonicClock for Stopped {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

/// Everything a guest store carries.
pub(crate) struct GuestState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limiter: StoreLimiter,
    guest: Arc<str>,
    grants: Grants,
    services: Arc<dyn HostServices>,
    log_budget: u32,
    /// The last error-level record the guest logged (the default guest logs its
    /// panic message there), used to explain a trap.
    pub(crate) last_error: Option<String>,
    /// When the current call into the guest began.
    call_started: std::time::Instant,
    /// Time the current call has spent waiting in host calls (a server's
    /// answer, a connect): not the guest's own, so not under its deadline.
    host_time: std::time::Duration,
    /// The script run this store is doing (script role only).
    pub(crate) script: Option<toolbox::Run>,
    /// Why the host stopped the current run, when it did.
    pub(crate) stopped: Option<toolbox::Stop>,
}

impl GuestState {
    pub(crate) fn new(
        guest: Arc<str>,
        limits: &Limits,
        grants: Grants,
        services: Arc<dyn HostServices>,
        clocks: Clocks,
    ) -> Self {
        // No preopens, env, args or stdin; stdout/stderr go nowhere. Sockets are
        // denied by default too; said explicitly, as this is the sandbox's promise.
        let mut builder = WasiCtx::builder();
        builder
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if clocks == Clocks::Stopped {
            builder.wall_clock(Stopped).monotonic_clock(Stopped);
        }
        let wasi = builder.build();
        GuestState {
            wasi,
            table: ResourceTable::new(),
            limiter: StoreLimiter::new(limits),
            guest,
            grants,
            services,
            log_budget: LOG_BUDGET,
            last_error: None,
            call_started: std::time::Instant::now(),
            host_time: std::time::Duration::ZERO,
            script: None,
            stopped: None,
        }
    }

    /// How long the current call has run in the guest itself.
    pub(crate) fn guest_time(&self) -> std::time::Duration {
        self.call_started.elapsed().saturating_sub(self.host_time)
    }

    /// Runs a host call the guest waits on, its time kept off the guest's clock.
    pub(crate) fn waited<R>(&mut self, f: impl FnOnce(&Self) -> R) -> R {
        let started = std::time::Instant::now();
        let r = f(self);
        self.host_time += started.elapsed();
        r
    }

    /// Keeps `waited` time off the guest's clock.
    pub(crate) fn add_host_time(&mut self, waited: std::time::Duration) {
        self.host_time += waited;
    }

    /// Resets per-call state before each call into the guest.
    pub(crate) fn begin_call(&mut self) {
        self.log_budget = LOG_BUDGET;
        self.last_error = None;
        self.call_started = std::time::Instant::now();
        self.host_time = std::time::Duration::ZERO;
    }

    fn check(&self, capability: Capability) -> Result<(), types::PluginError> {
        if self.grants.allows(capability) {
            Ok(())
        } else {
            tracing::warn!(guest = %self.guest, "guest called `{capability}`, which its role is not granted");
            Err(types::PluginError::Denied(format!(
                "`{capability}` is not granted to this guest; grant it in settings.plugins.grants"
            )))
        }
    }
}

impl WasiView for GuestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

pub(crate) fn service_error(e: ServiceError) -> types::PluginError {
    match e {
        ServiceError::NotFound(m) => types::PluginError::NotFound(m),
        ServiceError::Unavailable(m) => types::PluginError::Unavailable(m),
        ServiceError::InvalidInput(m) => types::PluginError::InvalidInput(m),
        ServiceError::Failed(m) => types::PluginError::Failed(m),
    }
}

pub(crate) fn wit_tool(t: &Tool) -> types::Tool {
    types::Tool {
        server: t.server.clone(),
        name: t.name.clone(),
        title: t.title.clone(),
        description: t.description.clone(),
        input_schema: t.input_schema.text().to_string(),
        annotations: t
            .annotations
            .as_ref()
            .and_then(|a| serde_json::to_string(a).ok()),
        kind: match t.kind {
            ToolKind::Tool => types::ToolKind::Tool,
            ToolKind::Resource => types::ToolKind::Resource,
            ToolKind::Skill => types::ToolKind::Skill,
        },
        resource_uri: t.resource_uri.clone(),
    }
}

fn wit_status(s: ServerStatus) -> types::ServerStatus {
    types::ServerStatus {
        name: s.name,
        state: match s.state {
            ConnectionState::Connected => types::ConnectionState::Connected,
            ConnectionState::Cached => types::ConnectionState::Cached,
            ConnectionState::NotConnected => types::ConnectionState::NotConnected,
            ConnectionState::Failed => types::ConnectionState::Failed,
            ConnectionState::NeedsAuth => types::ConnectionState::NeedsAuth,
            ConnectionState::Disabled => types::ConnectionState::Disabled,
        },
        tool_count: s.tool_count,
        lifecycle: match s.lifecycle {
            Lifecycle::Lazy => types::LifecycleMode::Lazy,
            Lifecycle::Eager => types::LifecycleMode::Eager,
            Lifecycle::KeepAlive => types::LifecycleMode::KeepAlive,
        },
        last_error: s.last_error,
    }
}

impl types::Host for GuestState {}

impl log::Host for GuestState {
    fn log(&mut self, level: log::Level, mut message: String) {
        if level == log::Level::Error {
            self.last_error = Some(message.clone());
        }
        if self.log_budget == 0 {
            return;
        }
        self.log_budget -= 1;
        if message.len() > LOG_MAX_LEN {
            let mut cut = LOG_MAX_LEN;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        if self.log_budget == 0 {
            message.push_str(" (further log records of this call are dropped)");
        }
        let guest = &*self.guest;
        match level {
            log::Level::Trace => tracing::trace!(target: "mcpw::guest", guest, "{message}"),
            log::Level::Debug => tracing::debug!(target: "mcpw::guest", guest, "{message}"),
            log::Level::Info => tracing::info!(target: "mcpw::guest", guest, "{message}"),
            log::Level::Warn => tracing::warn!(target: "mcpw::guest", guest, "{message}"),
            log::Level::Error => tracing::error!(target: "mcpw::guest", guest, "{message}"),
        }
    }
}

impl catalog::Host for GuestState {
    fn servers(&mut self) -> Result<Vec<types::ServerStatus>, types::PluginError> {
        self.check(Capability::Catalog)?;
        Ok(self
            .services
            .servers()
            .into_iter()
            .map(wit_status)
            .collect())
    }

    fn tools(&mut self, server: Option<String>) -> Result<Vec<types::Tool>, types::PluginError> {
        self.check(Capability::Catalog)?;
        let tools = self
            .services
            .tools(server.as_deref())
            .map_err(service_error)?;
        Ok(tools.iter().map(wit_tool).collect())
    }
}

impl lifecycle::Host for GuestState {
    fn connect(&mut self, server: String) -> Result<types::ServerStatus, types::PluginError> {
        self.check(Capability::Lifecycle)?;
        self.waited(|s| s.services.connect(&server, false))
            .map(wit_status)
            .map_err(service_error)
    }

    fn refresh(&mut self, server: String) -> Result<types::ServerStatus, types::PluginError> {
        self.check(Capability::Lifecycle)?;
        self.waited(|s| s.services.connect(&server, true))
            .map(wit_status)
            .map_err(service_error)
    }
}

impl calls::Host for GuestState {
    fn call_tool(
        &mut self,
        server: String,
        tool: String,
        arguments: String,
    ) -> Result<calls::CallResult, types::PluginError> {
        self.check(Capability::Calls)?;
        let out = self
            .waited(|s| s.services.call_tool(&s.guest, &server, &tool, &arguments))
            .map_err(service_error)?;
        Ok(calls::CallResult {
            content: out.content,
            structured_content: out.structured_content,
            is_error: out.is_error,
        })
    }

    fn read_resource(&mut self, server: String, uri: String) -> Result<String, types::PluginError> {
        self.check(Capability::Calls)?;
        self.waited(|s| s.services.read_resource(&s.guest, &server, &uri))
            .map_err(service_error)
    }
}

impl embed::Host for GuestState {
    fn model(&mut self) -> Option<embed::ModelInfo> {
        if !self.grants.allows(Capability::Embed) {
            return None;
        }
        self.waited(|s| s.services.embed_model())
            .map(|m| embed::ModelInfo {
                id: m.id,
                dimension: m.dimension,
                max_tokens: m.max_tokens,
            })
    }

    fn embed(
        &mut self,
        texts: Vec<String>,
        urgency: embed::Urgency,
    ) -> Result<Vec<Vec<f32>>, embed::EmbedError> {
        use super::services::{EmbedError, Urgency};
        if let Err(types::PluginError::Denied(why)) = self.check(Capability::Embed) {
            return Err(embed::EmbedError::Denied(why));
        }
        let urgency = match urgency {
            embed::Urgency::Now => Urgency::Now,
            embed::Urgency::Background => Urgency::Background,
        };
        // Inference is the host's time, not the guest's.
        self.waited(|s| s.services.embed(&texts, urgency))
            .map_err(|e| match e {
                EmbedError::NoModel => embed::EmbedError::NoModel,
                EmbedError::Pending { done, total } => {
                    embed::EmbedError::Pending(embed::Progress { done, total })
                }
                EmbedError::InvalidInput(m) => embed::EmbedError::InvalidInput(m),
                EmbedError::Model(m) => embed::EmbedError::Failed(m),
            })
    }
}
