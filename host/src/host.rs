//! [`Host`]: config, server lifecycle, metadata cache and policy guests together.
//! The CLI and the MCP gateway are built on it; Rust agents can embed it.

mod services;

use crate::cache::MetadataCache;
use crate::catalog::{Entry, ServerStatus, ToolKind};
use crate::config::Config;
use crate::lifecycle::{LifecycleError, LifecycleOptions, Manager};
use crate::paths::Environment;
use crate::plugin::{
    CompileCache, IndexOptions, NamingOptions, PluginError, Policy, SearchIndex, SearchOptions,
};
use crate::present::{self, Content};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// Names the gateway keeps for its own tools.
pub const RESERVED_NAMES: &[&str] = &["mcp", "ToolSearch"];

/// How a [`Host`] runs.
#[derive(Clone, Debug)]
pub struct HostOptions {
    /// Lifecycle timing.
    pub lifecycle: LifecycleOptions,
    /// Compiled-guest cache.
    pub compile_cache: CompileCache,
    /// The metadata cache file (default `$XDG_CACHE_HOME/mcpw/metadata.json`).
    pub metadata_cache: Option<PathBuf>,
    /// Run the health check / idle loop in the background.
    pub maintenance: bool,
}

impl HostOptions {
    /// Defaults for this environment: caches under `$XDG_CACHE_HOME/mcpw`.
    pub fn for_env(env: &Environment) -> Self {
        HostOptions {
            lifecycle: LifecycleOptions::default(),
            compile_cache: CompileCache::new(Some(env.cache_dir().join("guests"))),
            metadata_cache: None,
            maintenance: true,
        }
    }
}

/// What happens to servers and their tools, for [`Host::events`].
pub use crate::lifecycle::LifecycleEvent as HostEvent;

/// Errors of the host API.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The configuration has errors (each names its file, server and field).
    #[error("the configuration has errors:\n{}", .0.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n"))]
    Config(Vec<crate::config::Diagnostic>),
    /// A policy guest failed (after falling back to the default guest).
    #[error(transparent)]
    Policy(#[from] PluginError),
    /// A server could not be used.
    #[error(transparent)]
    Lifecycle(#[from] LifecycleError),
    /// No tool has that name.
    #[error("tool \"{name}\" not found{}", suggest(.suggestions))]
    ToolNotFound {
        /// The name asked for.
        name: String,
        /// Close names that exist.
        suggestions: Vec<String>,
    },
    /// No prompt has that name.
    #[error("prompt \"{0}\" not found")]
    PromptNotFound(String),
    /// Arguments that are not a JSON object.
    #[error("arguments must be a JSON object: {0}")]
    BadArguments(String),
}

fn suggest(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", names.join(", "))
    }
}

/// The result of calling a tool (or reading a resource tool).
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallOutcome {
    /// The server.
    pub server: String,
    /// The tool's original name.
    pub tool: String,
    /// The agent-facing name.
    pub name: String,
    /// Content for the agent.
    pub content: Vec<Content>,
    /// `structuredContent`, when the tool returned one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reported an error.
    pub is_error: bool,
    /// For a resource tool: the URI read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// The raw MCP result.
    pub mcp_result: Value,
}

/// An upstream prompt as the host exposes it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PromptEntry {
    /// The exposed name, `<server prefix>__<prompt>`.
    pub name: String,
    /// The server.
    pub server: String,
    /// The server's own name for it.
    pub original: String,
    /// The MCP prompt (name, description, arguments).
    pub prompt: Value,
}

/// Options of one call.
#[derive(Clone, Debug, Default)]
pub struct CallOptions {
    /// Where the server's progress notifications for this call go.
    pub progress: Option<tokio::sync::mpsc::UnboundedSender<crate::upstream::ProgressUpdate>>,
}

struct View {
    version: u64,
    entries: Arc<[Entry]>,
    index: Option<Arc<SearchIndex>>,
}

/// An MCP gateway host.
pub struct Host {
    /// Replaced by [`Host::reload`].
    config: std::sync::RwLock<Arc<Config>>,
    env: Environment,
    manager: Arc<Manager>,
    policy: Arc<Policy>,
    naming: NamingOptions,
    view: tokio::sync::Mutex<View>,
    stats: Option<Arc<crate::stats::Stats>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Host {
    /// Starts a host: loads the metadata cache and the policy guests. Connects
    /// nothing (see [`Host::connect_at_start`]). Must run inside a tokio runtime.
    pub async fn start(
        config: Config,
        env: Environment,
        options: HostOptions,
    ) -> Result<Host, HostError> {
        let cache = MetadataCache::new(
            options
                .metadata_cache
                .clone()
                .unwrap_or_else(|| env.cache_dir().join("metadata.json")),
        );
        let manager = Manager::new(&config, env.clone(), cache, options.lifecycle.clone());
        let services = Arc::new(services::LiveServices::new(&manager));
        let policy_config = config.policy_config(options.compile_cache.clone());
        let policy = tokio::task::spawn_blocking(move || Policy::load(&policy_config, services))
            .await
            .expect("policy loading does not panic")?;
        let mut tasks = Vec::new();
        if options.maintenance {
            tasks.push(manager.spawn_maintenance());
        }
        let naming = NamingOptions {
            prefix: config.settings.tool_prefix,
            reserved: RESERVED_NAMES.iter().map(|s| s.to_string()).collect(),
        };
        let stats = crate::stats::StatsConfig::from_setting(
            config.settings.raw.get("captureStats"),
            &env.state_dir(),
        )
        .map(|c| Arc::new(crate::stats::Stats::new(c)));
        if let Some(stats) = &stats {
            // A signal must not lose the calls recorded since the last flush.
            let stats = Arc::downgrade(stats);
            crate::upstream::processes::at_signal_exit(move || {
                if let Some(s) = stats.upgrade()
                    && let Err(e) = s.flush()
                {
                    tracing::warn!("cannot write call statistics: {e}");
                }
            });
        }
        Ok(Host {
            stats,
            config: std::sync::RwLock::new(Arc::new(config)),
            env,
            manager,
            policy: Arc::new(policy),
            naming,
            view: tokio::sync::Mutex::new(View {
                version: 0,
                entries: Arc::from(Vec::new()),
                index: None,
            }),
            tasks,
        })
    }

    /// A host over one config file (no user file, imports only as that file
    /// lists them, no project files), with default options for this process.
    pub async fn from_config_file(path: impl Into<PathBuf>) -> Result<Host, HostError> {
        let sources = crate::config::ConfigSources {
            user_file: Some(path.into()),
            user_value: None,
            project_dir: None,
            env: Environment::from_process(),
        };
        Self::from_sources(&sources).await
    }

    /// A host over a config given as JSON (the `mcp.json` shape:
    /// `{"mcpServers": {...}, "settings": {...}}`).
    pub async fn from_config_value(value: Value) -> Result<Host, HostError> {
        let sources = crate::config::ConfigSources {
            user_file: None,
            user_value: Some(value),
            project_dir: None,
            env: Environment::from_process(),
        };
        Self::from_sources(&sources).await
    }

    /// A host over the given sources; any config error fails it.
    pub async fn from_sources(sources: &crate::config::ConfigSources) -> Result<Host, HostError> {
        let config = crate::config::load(sources);
        if config.has_errors() {
            let errors = config
                .diagnostics
                .into_iter()
                .filter(|d| d.severity == crate::config::Severity::Error)
                .collect();
            return Err(HostError::Config(errors));
        }
        Host::start(
            config,
            sources.env.clone(),
            HostOptions::for_env(&sources.env),
        )
        .await
    }

    /// Status and catalog changes as they happen (connections, failures,
    /// tool-list changes).
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<HostEvent> {
        self.manager.subscribe()
    }

    /// Every exposed tool (same as [`Host::entries`]).
    pub async fn tools(&self) -> Result<Arc<[Entry]>, HostError> {
        self.entries().await
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Switches to a new configuration's servers without a restart: unchanged
    /// servers keep their connections, changed and removed ones are closed,
    /// added ones are known from the cache or connect on first use. A connect
    /// still running for a changed server is dropped when it finishes. Settings
    /// other than the servers' (naming, plugins, limits) apply at the next
    /// start. Returns the servers added, changed or removed.
    pub async fn reload(&self, mut config: Config) -> Vec<String> {
        // Settings stay as started: naming, plugins and limits were built from them.
        config.settings = self.config().settings.clone();
        let config = Arc::new(config);
        // The config first: views rebuilt after the servers change must see it.
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = config.clone();
        self.manager.reload(&config).await
    }

    /// The environment (for `MCP_DIRECT_TOOLS` and interpolation).
    pub fn env(&self) -> &Environment {
        &self.env
    }

    /// The tools to load directly (not deferred behind search): chosen by the
    /// direct-tools guest from `MCP_DIRECT_TOOLS` and each server's `directTools`.
    pub async fn direct_entries(&self) -> Result<Vec<Entry>, HostError> {
        use crate::config::DirectTools;
        use crate::plugin::{DirectOptions, ServerDirect};
        let entries = self.entries().await?;
        let options = DirectOptions {
            env_override: self.env.get("MCP_DIRECT_TOOLS").map(str::to_string),
            servers: self
                .config()
                .servers
                .iter()
                .map(|s| {
                    let d = match &s.config.direct_tools {
                        DirectTools::All => ServerDirect::All,
                        DirectTools::None => ServerDirect::None,
                        DirectTools::Only(list) => ServerDirect::Only(list.clone()),
                    };
                    (s.name.clone(), d)
                })
                .collect(),
        };
        let (policy, e) = (self.policy.clone(), entries.clone());
        let picked = tokio::task::spawn_blocking(move || policy.direct(&e, &options))
            .await
            .expect("direct policy does not panic")?;
        Ok(picked.into_iter().map(|i| entries[i].clone()).collect())
    }

    /// The lifecycle manager.
    pub fn manager(&self) -> &Arc<Manager> {
        &self.manager
    }

    /// The policy guests.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The status of every server.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.manager.status()
    }

    /// Connects eager and keep-alive servers (at most 10 at once).
    pub async fn connect_at_start(&self) {
        self.manager.connect_at_start().await;
    }

    /// Connects every enabled server whose tools are not known yet (no valid
    /// cache entry), so that a first run sees every tool.
    pub async fn bootstrap(&self, progress: impl Fn(&str, &Result<(), LifecycleError>)) {
        let missing: Vec<String> = self
            .manager
            .status()
            .into_iter()
            .filter(|s| {
                s.state != crate::catalog::ConnectionState::Disabled
                    && !self.manager.has_tools(&s.name)
            })
            .map(|s| s.name)
            .collect();
        self.manager.connect_many(missing, progress).await;
    }

    /// Connects (or reconnects) a server now, bypassing backoff, and refreshes
    /// its tools and the cache.
    pub async fn connect(&self, server: &str) -> Result<ServerStatus, HostError> {
        self.manager.connect(server, true).await?;
        Ok(self.manager.server_status(server)?)
    }

    /// Every exposed tool with its agent-facing name, in config order.
    pub async fn entries(&self) -> Result<Arc<[Entry]>, HostError> {
        Ok(self.view().await?.0)
    }

    async fn view(&self) -> Result<(Arc<[Entry]>, Option<Arc<SearchIndex>>), HostError> {
        let mut view = self.view.lock().await;
        let current = self.manager.catalog_version();
        if view.version != current {
            let tools = self.manager.tools();
            let (policy, naming) = (self.policy.clone(), self.naming.clone());
            let entries = tokio::task::spawn_blocking(move || policy.entries(&tools, &naming))
                .await
                .expect("naming does not panic")?;
            *view = View {
                version: current,
                entries: entries.into(),
                index: None,
            };
        }
        Ok((view.entries.clone(), view.index.clone()))
    }

    async fn index(&self) -> Result<(Arc<[Entry]>, Arc<SearchIndex>), HostError> {
        let (entries, index) = self.view().await?;
        if let Some(index) = index {
            return Ok((entries, index));
        }
        let keywords: Vec<(String, Vec<String>)> = self
            .config()
            .servers
            .iter()
            .filter(|s| !s.config.search_keywords.is_empty())
            .map(|s| (s.name.clone(), s.config.search_keywords.clone()))
            .collect();
        let (policy, e) = (self.policy.clone(), entries.clone());
        let profile = self.config().settings.search_profile.clone();
        let index = tokio::task::spawn_blocking(move || {
            policy.index(
                e,
                IndexOptions {
                    server_keywords: keywords,
                    profile,
                },
            )
        })
        .await
        .expect("index building does not panic")?;
        let index = Arc::new(index);
        let mut view = self.view.lock().await;
        if Arc::ptr_eq(&view.entries, &entries) {
            view.index = Some(index.clone());
        }
        Ok((entries, index))
    }

    /// Searches the catalog with the ranking guest; best first.
    pub async fn search(
        &self,
        query: &str,
        options: SearchOptions,
    ) -> Result<Vec<(Entry, f32)>, HostError> {
        let (entries, index) = self.index().await?;
        let query = query.to_string();
        let hits = tokio::task::spawn_blocking(move || index.search(&query, &options))
            .await
            .expect("search does not panic")?;
        Ok(hits
            .into_iter()
            .map(|h| (entries[h.index].clone(), h.score))
            .collect())
    }

    /// Finds a tool by agent-facing name: exactly, then with hyphens and
    /// underscores treated as equal.
    pub async fn find(&self, name: &str) -> Result<Option<Entry>, HostError> {
        let entries = self.entries().await?;
        let norm = |s: &str| s.replace('-', "_");
        Ok(entries
            .iter()
            .find(|e| e.name == name)
            .or_else(|| entries.iter().find(|e| norm(&e.name) == norm(name)))
            .cloned())
    }

    /// Resolves a name to a tool, connecting the server whose prefix it carries
    /// when that server's tools are not known yet.
    pub async fn resolve(&self, name: &str) -> Result<Entry, HostError> {
        if let Some(entry) = self.find(name).await? {
            return Ok(entry);
        }
        let unknown_prefix = self.manager.server_names().into_iter().find(|server| {
            let prefix = crate::lifecycle::server_prefix(server, self.naming.prefix);
            !prefix.is_empty()
                && name.starts_with(&format!("{prefix}__"))
                && !self.manager.has_tools(server)
        });
        if let Some(server) = unknown_prefix {
            self.manager.connect(&server, false).await?;
            if let Some(entry) = self.find(name).await? {
                return Ok(entry);
            }
        }
        let suggestions = match self
            .search(
                name,
                SearchOptions {
                    limit: 3,
                    ..Default::default()
                },
            )
            .await
        {
            Ok(hits) => hits.into_iter().map(|(e, _)| e.name).collect(),
            Err(_) => Vec::new(),
        };
        Err(HostError::ToolNotFound {
            name: name.to_string(),
            suggestions,
        })
    }

    /// Calls a tool by agent-facing name (reads the resource of a resource tool),
    /// connecting its server if needed. A tool error is an outcome with
    /// `is_error`, the expected parameters appended; only failing to reach the
    /// server is an `Err`.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<CallOutcome, HostError> {
        self.call_with(name, arguments, CallOptions::default())
            .await
    }

    /// [`Host::call`] with options (progress notifications).
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<CallOutcome, HostError> {
        let entry = self.resolve(name).await?;
        let started = std::time::Instant::now();
        let outcome = self.call_entry(&entry, arguments, options).await;
        if let Some(stats) = &self.stats {
            let (error, bytes) = match &outcome {
                Ok(o) => (
                    o.is_error,
                    serde_json::to_vec(&o.content).map_or(0, |b| b.len() as u64),
                ),
                Err(_) => (true, 0),
            };
            stats.record(
                &entry.name,
                &entry.tool.server,
                &entry.tool.name,
                started.elapsed(),
                error,
                bytes,
            );
            if stats.claim_flush() {
                let s = stats.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(s.flush_delay()).await;
                    if let Err(e) = tokio::task::spawn_blocking(move || s.flush())
                        .await
                        .unwrap_or(Ok(()))
                    {
                        tracing::warn!("cannot write call statistics: {e}");
                    }
                });
            }
        }
        outcome
    }

    async fn call_entry(
        &self,
        entry: &Entry,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<CallOutcome, HostError> {
        let tool = &entry.tool;
        let schema = (tool.kind == ToolKind::Tool).then_some(&tool.input_schema);
        let outcome = |content: Vec<Content>, structured, is_error, raw: Value| CallOutcome {
            server: tool.server.clone(),
            tool: tool.name.clone(),
            name: entry.name.clone(),
            content,
            structured_content: structured,
            is_error,
            resource_uri: tool.resource_uri.clone(),
            mcp_result: raw,
        };
        let timeout = self.manager.call_timeout(&tool.server);
        let result = match (&tool.kind, &tool.resource_uri) {
            (ToolKind::Resource, Some(uri)) => {
                let uri = uri.clone();
                self.manager
                    .with_connection(&tool.server, |c| async move {
                        c.read_resource(&uri, timeout).await
                    })
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            }
            _ => {
                let (original, args) = (tool.name.clone(), arguments.unwrap_or_default());
                self.manager
                    .with_connection(&tool.server, |c| async move {
                        c.call_tool(&original, Some(args), timeout, options.progress)
                            .await
                    })
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            }
        };
        match result {
            Ok(raw) if tool.kind == ToolKind::Resource => {
                let contents = raw
                    .get("contents")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                Ok(outcome(
                    present::map_resource_contents(&contents),
                    None,
                    false,
                    raw,
                ))
            }
            Ok(raw) => {
                let blocks = raw
                    .get("content")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let mut content = present::map_content(&blocks);
                let is_error = raw.get("isError").and_then(Value::as_bool).unwrap_or(false);
                if is_error {
                    let text: Vec<String> = content
                        .iter()
                        .filter_map(|c| {
                            if let Content::Text { text } = c {
                                Some(text.clone())
                            } else {
                                None
                            }
                        })
                        .collect();
                    let message = if text.is_empty() {
                        "Error: the tool reported an error".to_string()
                    } else {
                        text.join("\n")
                    };
                    content.retain(|c| !matches!(c, Content::Text { .. }));
                    content.insert(
                        0,
                        Content::text(present::error_with_parameters(&message, schema)),
                    );
                }
                let structured = raw.get("structuredContent").cloned();
                Ok(outcome(content, structured, is_error, raw))
            }
            Err(LifecycleError::Connect {
                error: crate::upstream::ConnectError::Rpc(message),
                ..
            }) => {
                let text = present::error_with_parameters(&format!("Error: {message}"), schema);
                Ok(outcome(vec![Content::text(text)], None, true, Value::Null))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Every upstream prompt, named `<server prefix>__<prompt>`.
    pub fn prompts(&self) -> Vec<PromptEntry> {
        self.manager
            .prompts()
            .into_iter()
            .filter_map(|(server, prompt)| {
                let original = prompt.get("name")?.as_str()?.to_string();
                let prefix = crate::lifecycle::server_prefix(&server, self.naming.prefix);
                let part = crate::plugin::sanitize_name(&original);
                let name = if prefix.is_empty() {
                    part
                } else {
                    format!("{prefix}__{part}")
                };
                Some(PromptEntry {
                    name,
                    server,
                    original,
                    prompt,
                })
            })
            .collect()
    }

    /// Gets an upstream prompt by its prefixed name; returns the MCP
    /// `GetPromptResult` as JSON.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, HostError> {
        let prompts = self.prompts();
        let entry = prompts
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| HostError::PromptNotFound(name.to_string()))?;
        let timeout = self.manager.call_timeout(&entry.server);
        let original = entry.original.clone();
        let result = self
            .manager
            .with_connection(&entry.server, |c| async move {
                c.get_prompt(&original, arguments, timeout).await
            })
            .await?;
        Ok(serde_json::to_value(result).unwrap_or(Value::Null))
    }

    /// Closes every connection, stops background work and writes the call statistics.
    pub async fn shutdown(&self) {
        for t in &self.tasks {
            t.abort();
        }
        if let Some(stats) = &self.stats
            && let Err(e) = stats.flush()
        {
            tracing::warn!("cannot write call statistics: {e}");
        }
        self.manager.shutdown().await;
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}
