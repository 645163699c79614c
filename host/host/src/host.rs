//! [`Host`]: config, server lifecycle, metadata cache and policy guests together.
//! The CLI and the MCP gateway are built on it; Rust agents can embed it:
//!
//! ```no_run
//! # async fn embed() -> Result<(), mcpw_host::host::HostError> {
//! use mcpw_host::host::Host;
//! let host = Host::from_config_value(serde_json::json!({
//!     "mcpServers": { "time": { "command": "mcp-server-time" } } })).await?;
//! let hits = host.search("current time", Default::default()).await?;
//! let args = serde_json::json!({"timezone": "UTC"}).as_object().cloned();
//! let out = host.call(&hits[0].0.name, args).await?;
//! println!("{:?}", out.content);
//! // Its servers' state, and their events as they happen.
//! for status in host.status() {
//!     println!("{} {:?} {}", status.name, status.state, status.tool_count);
//! }
//! let mut events = host.servers().subscribe();
//! tokio::spawn(async move { while let Ok(event) = events.recv().await { println!("{event:?}"); } });
//! host.shutdown().await;
//! # Ok(()) }
//! ```

mod auth;
pub(crate) mod call_path;
mod calls;
mod explain;
mod guards;
pub mod pipeline;
mod prompts;
mod rate_limits;
pub mod resources;
pub mod scripts;
mod services;
pub mod skills;
pub mod snapshot;
mod tasks;

pub use crate::auth::redirect_page;
pub use auth::people::PersonStatus;
pub use auth::{LoginOptions, Unlisted};
use calls::upstream_span;
pub use calls::{CallOptions, CallOutcome, RawResult, present_result};
pub use rate_limits::RateLimited;
pub use snapshot::{PromptEntry, Snapshot};

use crate::cache::MetadataCache;
use crate::catalog::{Entry, ServerStatus};
use crate::config::Config;
use crate::lifecycle::{LifecycleError, LifecycleOptions, Manager};
use crate::paths::Environment;
use crate::plugin::{CompileCache, NamingOptions, PluginError, Policy, SearchOptions};
use arc_swap::ArcSwap;
use serde_json::Value;
use snapshot::{BuildInput, Publisher};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Names the gateway keeps for its own tools.
const RESERVED_NAMES: &[&str] = &["mcp", "ToolSearch", "mcp_servers"];

/// The code tool's name (code mode), reserved too when it is listed beside
/// the servers' tools (`settings.codeMode`).
pub const CODE_TOOL_NAME: &str = "code";

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
    /// Where rate limits are counted when no shared state holds them: a
    /// file, for a command that makes one call and exits (`mcpw call`), so
    /// that each run counts against the last; `None`: in this process.
    pub rate_limit_file: Option<PathBuf>,
}

impl HostOptions {
    /// Defaults for this environment: caches under `$XDG_CACHE_HOME/mcpw`.
    pub fn for_env(env: &Environment) -> Self {
        HostOptions {
            lifecycle: LifecycleOptions::default(),
            compile_cache: CompileCache::new(Some(env.cache_dir().join("guests"))),
            metadata_cache: None,
            maintenance: true,
            rate_limit_file: None,
        }
    }
}

impl HostOptions {
    /// The lifecycle's timing and bounds, with what the config sets of them.
    fn lifecycle_for(&self, config: &Config) -> LifecycleOptions {
        let mut lifecycle = self.lifecycle.clone();
        if let Some(max) = config.settings.per_person_max_connections {
            lifecycle.max_people = max;
        }
        lifecycle
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
    /// Building the catalog snapshot failed (the naming or direct-tools role).
    #[error(transparent)]
    Catalog(Arc<PluginError>),
    /// The host is shutting down: the work was abandoned.
    #[error("mcpw is shutting down")]
    ShuttingDown,
    /// A server could not be used.
    #[error(transparent)]
    Lifecycle(#[from] LifecycleError),
    /// The script guest could not be loaded.
    #[error(transparent)]
    Script(Arc<PluginError>),
    /// No tool has that name.
    #[error("tool \"{name}\" not found{}", suggest(.suggestions))]
    ToolNotFound {
        /// The name asked for.
        name: String,
        /// Close names that exist.
        suggestions: Vec<String>,
    },
    /// The call did not run: a rate limit, a guard or the user refused it
    /// (why, as the agent reads it).
    #[error("{0}")]
    Refused(String),
    /// The call (or read) ran, and a guard withheld its result (why).
    #[error("the result was withheld: {0}")]
    Withheld(String),
    /// No prompt has that name.
    #[error("prompt \"{0}\" not found")]
    PromptNotFound(String),
    /// No server offers a resource at that URI.
    #[error("resource \"{0}\" not found")]
    ResourceNotFound(String),
    /// A skill's file named in the `mcpw:<server>/` form of other resources:
    /// not found there, it is read as `read_as`.
    #[error("resource \"{uri}\" not found: a skill's file is read as {read_as}")]
    SkillFileNotFound {
        /// The URI asked for.
        uri: String,
        /// The URI that reads it (the skills' namespace).
        read_as: String,
    },
    /// A skill's file whose bytes are not those its server listed.
    #[error("{0}")]
    Skill(String),
    /// Arguments that are not a JSON object.
    #[error("arguments must be a JSON object: {0}")]
    BadArguments(String),
    /// mcpw does not log in to this server.
    #[error(
        "mcpw does not log in to server \"{0}\": it is not an HTTP server, it has static credentials (`bearerToken`, `bearerTokenEnv`, an `Authorization` header), or its config says \"oauth\": false"
    )]
    NoLogin(String),
    /// The server let mcpw in without a login.
    #[error("server \"{0}\" does not ask for a login")]
    LoginNotNeeded(String),
    /// The shared state is misconfigured.
    #[error(transparent)]
    SharedState(#[from] crate::team_state::SharedStateError),
    /// Logging in failed, or the stored credentials cannot be read.
    #[error("server \"{server}\": {source}")]
    Auth {
        /// The server.
        server: String,
        /// What failed.
        source: Box<crate::auth::AuthFailure>,
    },
    /// A person's sign-in could not be finished.
    #[error("the sign-in could not be finished: {0}")]
    SignIn(Box<crate::auth::AuthFailure>),
    /// A principal named in a form no principal's key takes.
    #[error(transparent)]
    Principal(#[from] crate::auth::BadOwner),
    /// The credential store cannot be read or written.
    #[error(transparent)]
    Store(#[from] crate::auth::store::StoreError),
}

fn suggest(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", names.join(", "))
    }
}

/// An MCP gateway host.
pub struct Host {
    /// Replaced by [`Host::reload`]; read without locks.
    config: Arc<ArcSwap<Config>>,
    env: Environment,
    manager: Arc<Manager>,
    policy: Arc<Policy>,
    /// The embedding model of search by meaning, when one is configured.
    embeddings: Option<Arc<crate::embed::Embeddings>>,
    /// User guests that could not be loaded (the default guest fills their roles).
    broken_guests: Vec<crate::plugin::BrokenGuest>,
    naming: NamingOptions,
    catalog: Arc<Publisher>,
    /// State shared with other mcpw processes (`--shared-state`), if any.
    shared: Option<Arc<crate::team_state::SharedState>>,
    /// The one-signal search indexes of the current snapshot (see [`explain`]).
    signals: tokio::sync::Mutex<explain::Signals>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// How many sessions watch each (server, URI).
    watched: std::sync::Mutex<std::collections::HashMap<(String, String), usize>>,
    /// How guests are loaded (the script guest is, on first use).
    guests: (
        crate::plugin::PolicyConfig,
        Arc<dyn crate::plugin::HostServices>,
    ),
    /// The script guest, once loaded.
    scripter: scripts::Loaded,
    /// Binary content kept for the sessions that got it.
    kept: Arc<crate::kept::Store>,
    /// What scripts run from Rust keep.
    shelf: crate::kept::Shelf,
    /// What every call passes through: guards, rate limits, observers.
    calls: Arc<call_path::CallPath>,
    /// What people did lately: sign-in links given, listings tried.
    lately: std::sync::Mutex<Lately>,
}

/// What people did lately, by (server, owner), with when.
#[derive(Default)]
struct Lately {
    /// Sign-in links given out (see [`Host::sign_in_link`]).
    links: std::collections::HashMap<(String, String), (std::time::Instant, String)>,
    /// Listings tried as a person (see [`Host::list_unlisted_as`]), and
    /// whether the try found no login of theirs.
    listings: std::collections::HashMap<(String, String), (std::time::Instant, bool)>,
}

/// How the host's catalog is named: the configured prefix, and the names
/// the host keeps for its own tools.
fn naming_options(config: &Config) -> NamingOptions {
    NamingOptions {
        prefix: config.settings.tool_prefix,
        reserved: RESERVED_NAMES
            .iter()
            .copied()
            // The code tool's name, when it is listed beside the others.
            .chain(config.settings.code_mode.then_some(CODE_TOOL_NAME))
            .map(str::to_string)
            .collect(),
    }
}

/// Builds the search index again whenever a background run of embeddings
/// ends, so that the search after it ranks by meaning without waiting.
fn rebuild_when_embedded(
    embeddings: &Arc<crate::embed::Embeddings>,
    catalog: &Arc<Publisher>,
    policy: &Arc<Policy>,
) -> tokio::task::JoinHandle<()> {
    let mut status = embeddings.status();
    let (embeddings, catalog, policy) = (embeddings.clone(), catalog.clone(), policy.clone());
    tokio::spawn(async move {
        let mut seen = status.borrow().generation;
        while status.changed().await.is_ok() {
            let generation = status.borrow().generation;
            if generation == seen {
                continue;
            }
            seen = generation;
            let snapshot = catalog.latest();
            // Only an index that was built, and ranks by words meanwhile.
            if snapshot.ranks_by_words_while_embedding() == Some(true)
                && let Err(e) = snapshot
                    .index(&policy, &catalog.index_builds, Some(&embeddings))
                    .await
            {
                tracing::warn!("cannot build the search index again: {e}");
            }
        }
    })
}

/// One search hit: the entry (a tool, or past the tools a skill), its
/// score, and the need of the query it answers when the query states
/// several (from a ranking guest of contract 0.2.0).
#[derive(Clone)]
pub struct SearchHit {
    /// The tool or skill found.
    pub entry: EntryRef,
    /// The ranking guest's score.
    pub score: f32,
    /// The part of the query it answers.
    pub need: Option<String>,
}

impl SearchHit {
    /// Whether it is a skill rather than a tool.
    pub fn is_skill(&self) -> bool {
        self.entry.tool.kind == crate::catalog::ToolKind::Skill
    }

    /// `hits` grouped by the need they answer, in the order of each group's
    /// first hit (the ranking's order), the hits that answer no one need
    /// under "the task as a whole"; one group without a name when no hit
    /// has a need.
    pub fn by_need(hits: &[SearchHit]) -> Vec<(Option<&str>, Vec<&SearchHit>)> {
        let mut groups: Vec<(Option<&str>, Vec<&SearchHit>)> = Vec::new();
        for h in hits {
            let need = h.need.as_deref();
            match groups.iter_mut().find(|(n, _)| *n == need) {
                Some((_, group)) => group.push(h),
                None => groups.push((need, vec![h])),
            }
        }
        if groups.iter().any(|(n, _)| n.is_some()) {
            for (need, _) in groups.iter_mut().filter(|(n, _)| n.is_none()) {
                *need = Some("the task as a whole");
            }
        }
        groups
    }
}

/// A resolved catalog entry: a handle into the snapshot it was found in, so
/// that resolving a name copies nothing.
#[derive(Clone)]
pub struct EntryRef {
    snapshot: Arc<Snapshot>,
    index: usize,
    /// Among the tools only an app may call.
    app_only: bool,
}

impl std::ops::Deref for EntryRef {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        // A search hit past the tools is a skill (see `Snapshot::searchable`).
        match self.app_only {
            false => &self.snapshot.searchable()[self.index],
            true => &self.snapshot.app_only()[self.index],
        }
    }
}

impl EntryRef {
    /// The snapshot the entry was found in.
    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snapshot
    }

    /// The tool of `server` named `name` by the server itself, among those
    /// only an app may call, in `snapshot`.
    pub fn app_only(snapshot: Arc<Snapshot>, server: &str, name: &str) -> Option<EntryRef> {
        let index = snapshot
            .app_only()
            .iter()
            .position(|e| e.tool.server == server && e.tool.name == name)?;
        Some(EntryRef {
            snapshot,
            index,
            app_only: true,
        })
    }
}

impl std::fmt::Debug for EntryRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl Host {
    /// Starts a host: loads the metadata cache and the policy guests. Connects
    /// nothing (see [`Host::connect_at_start`]). Must run inside a tokio runtime.
    pub async fn start(
        config: Config,
        env: Environment,
        options: HostOptions,
    ) -> Result<Host, HostError> {
        let shared = crate::team_state::SharedState::for_config(&config, &env)?;
        let cache = MetadataCache::new(
            options
                .metadata_cache
                .clone()
                .unwrap_or_else(|| env.cache_dir().join("metadata.json")),
        )
        .with_shared(shared.clone());
        let catalog = Publisher::new();
        let embeddings =
            crate::embed::ModelSource::of(&config.settings.search.model, &env).map(|source| {
                let vectors = env.cache_dir().join("vectors");
                crate::embed::Embeddings::new(source, vectors, shared.clone())
            });
        let services = Arc::new(services::LiveServices::new(
            catalog.clone(),
            embeddings.clone(),
        ));
        // Reading the cache and loading the guests are both blocking, and
        // independent: they run side by side.
        let policy_config = crate::plugin::PolicyConfig::of(&config, options.compile_cache.clone());
        let guest_services = services.clone();
        let guests: (_, Arc<dyn crate::plugin::HostServices>) =
            (policy_config.clone(), services.clone());
        let guards = {
            let (config, policy, services) =
                (config.clone(), policy_config.clone(), guests.1.clone());
            tokio::task::spawn_blocking(move || guards::load(&config, &policy, services))
        };
        let policy = tokio::task::spawn_blocking(move || {
            Policy::load_lenient(&policy_config, guest_services)
        });
        let manager = {
            let lifecycle = options.lifecycle_for(&config);
            let (config, env) = (config.clone(), env.clone());
            joined(
                tokio::task::spawn_blocking(move || Manager::new(&config, env, cache, lifecycle))
                    .await,
            )?
        };
        services.attach(&manager);
        let (policy, broken_guests) = joined(policy.await)??;
        let guards = Arc::new(joined(guards.await)?);
        release_free_memory();
        let policy = Arc::new(policy);
        let tasks = background(&options, &manager, &shared, &embeddings, &catalog, &policy);
        let kept = crate::kept::Store::new(config.settings.results.store.into());
        let config = Arc::new(ArcSwap::from_pointee(config));
        let buckets = crate::rate_limit::Buckets::new(shared.clone())
            .counting_in(options.rate_limit_file.clone());
        let calls = Arc::new(call_path::CallPath::new(
            &config, &manager, guards, &env, &shared, buckets,
        ));
        services.attach_calls(&calls);
        Ok(Host {
            shared,
            signals: Default::default(),
            naming: naming_options(&config.load()),
            config,
            env,
            manager,
            policy,
            embeddings,
            broken_guests,
            catalog,
            tasks,
            watched: Default::default(),
            lately: Default::default(),
            guests,
            scripter: Default::default(),
            shelf: kept.shelf(),
            kept,
            calls,
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

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.config.load_full()
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
        // The config first: snapshots built after the servers change must see it.
        self.config.store(config.clone());
        self.manager.reload(&config).await
    }

    /// The pinned tools' file changed (an approval may let tools through):
    /// the catalog is built again, and the sessions hear of it.
    pub fn pins_changed(&self) {
        self.manager.catalog_changed();
    }

    /// The environment (for `MCP_DIRECT_TOOLS` and interpolation).
    pub fn env(&self) -> &Environment {
        &self.env
    }

    /// The servers it runs.
    pub fn servers(&self) -> crate::servers::Servers {
        crate::servers::Servers::new(self.manager.clone())
    }

    /// The audit trail, when `settings.audit` keeps one.
    pub fn audit(&self) -> Option<&crate::audit::AuditLog> {
        self.calls.audit.as_ref()
    }

    /// State shared with other mcpw processes (`--shared-state`), if any.
    pub fn shared_state(&self) -> Option<&Arc<crate::team_state::SharedState>> {
        self.shared.as_ref()
    }

    /// The last hour of calls, minute by minute (the live page's charts).
    pub fn recent(&self) -> &crate::recent::Recent {
        &self.calls.recent
    }

    /// Calls, errors and latency per server and tool.
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.calls.metrics
    }

    /// The policy guests.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The user guests that could not be loaded: the default guest fills
    /// their roles.
    pub fn broken_guests(&self) -> &[crate::plugin::BrokenGuest] {
        &self.broken_guests
    }

    /// The status of every server; tool counts are of exposed tools once the
    /// catalog snapshot is current (see [`Host::snapshot`]).
    pub fn status(&self) -> Vec<ServerStatus> {
        let mut all = self.manager.status();
        let version = self.manager.catalog_version();
        self.catalog.latest().count_exposed(version, &mut all);
        all
    }

    /// As [`Host::status`], for a client that sees only the tools `sees`
    /// admits: each count is of those alone.
    pub fn status_seen(&self, sees: impl Fn(&crate::catalog::Tool) -> bool) -> Vec<ServerStatus> {
        let mut all = self.manager.status();
        self.catalog.latest().count_seen(sees, &mut all);
        all
    }

    /// Connects eager and keep-alive servers (at most 10 at once).
    pub async fn connect_at_start(&self) {
        self.manager.connect_at_start().await;
    }

    /// Connects every enabled server whose tools are not known yet (no valid
    /// cache entry), so that a first run sees every tool.
    pub async fn bootstrap(&self, progress: impl Fn(&str, &Result<(), LifecycleError>)) {
        self.manager.connect_unlisted(progress).await;
    }

    /// Connects (or reconnects) a server now, bypassing backoff, and refreshes
    /// its tools and the cache.
    pub async fn connect(&self, server: &str) -> Result<ServerStatus, HostError> {
        self.manager.connect(server, true).await?;
        self.snapshot().await?;
        let mut status = self.manager.server_status(server)?;
        let version = self.manager.catalog_version();
        self.catalog
            .latest()
            .count_exposed(version, std::slice::from_mut(&mut status));
        Ok(status)
    }

    /// The catalog snapshot of the current catalog version: built on first
    /// need after a change (once, however many ask at the same time), then
    /// read without locks.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, HostError> {
        let version = self.manager.catalog_version();
        let latest = self.catalog.latest();
        if latest.version() >= version {
            return Ok(latest);
        }
        let (manager, config) = (self.manager.clone(), self.config.clone());
        let env_override = self.env.get("MCP_DIRECT_TOOLS").map(str::to_string);
        let naming = self.naming.clone();
        let pins = crate::pins::Pins::of(&self.config()).sharing(self.shared.clone());
        let input = move || {
            // Read before the tools: a change after this point bumps it again.
            let version = manager.catalog_version();
            let (tools, config) = (manager.tool_lists(), config.load_full());
            let offers = manager.offers();
            let skills: Vec<(String, Vec<serde_json::Value>)> = offers
                .iter()
                .map(|(s, o)| (s.clone(), o.skills.clone()))
                .collect();
            BuildInput {
                version,
                withheld: pins.check(&config, &tools, &skills),
                tools,
                offers,
                config,
                env_override,
                naming,
            }
        };
        self.catalog
            .at_least(version, input, &self.policy)
            .await
            .map_err(|e| match e {
                snapshot::BuildError::Policy(e) => HostError::Catalog(e),
                snapshot::BuildError::ShuttingDown => HostError::ShuttingDown,
            })
    }

    /// How many catalog snapshots and search indexes this host has built.
    pub fn builds(&self) -> (u64, u64) {
        (
            self.catalog.builds.load(Ordering::Relaxed),
            self.catalog.index_builds.load(Ordering::Relaxed),
        )
    }

    /// Every exposed tool with its agent-facing name, in config order.
    pub async fn entries(&self) -> Result<Arc<[Entry]>, HostError> {
        Ok(self.snapshot().await?.entries().clone())
    }

    /// Every exposed tool (same as [`Host::entries`]).
    pub async fn tools(&self) -> Result<Arc<[Entry]>, HostError> {
        self.entries().await
    }

    /// The tools to load directly (not deferred behind search): chosen by the
    /// direct-tools guest from `MCP_DIRECT_TOOLS` and each server's `directTools`.
    pub async fn direct_entries(&self) -> Result<Vec<Entry>, HostError> {
        Ok(self.snapshot().await?.direct_entries().cloned().collect())
    }

    /// Searches the catalog with the ranking guest; best first. Searches run
    /// in parallel (see [`crate::plugin::Ranker`]).
    pub async fn search(
        &self,
        query: &str,
        options: SearchOptions,
    ) -> Result<Vec<(Entry, f32)>, HostError> {
        Ok(self
            .search_refs(query, options)
            .await?
            .into_iter()
            .map(|h| ((*h.entry).clone(), h.score))
            .collect())
    }

    /// Where search by meaning stands (none without a model): the model,
    /// and the progress of the tool vectors' background run.
    pub fn embedding_status(&self) -> Option<crate::embed::Status> {
        Some(self.embeddings.as_ref()?.status().borrow().clone())
    }

    /// Whether search by meaning is on and its model's files are here:
    /// getting ready for it then takes a load, not a download.
    pub fn embedding_model_at_hand(&self) -> bool {
        self.embeddings.as_ref().is_some_and(|e| e.at_hand())
    }

    /// How search ranks, in one line: by words and meaning, or by words
    /// and why.
    pub fn search_description(&self) -> String {
        match self.embedding_status() {
            Some(status) => status.describe(),
            None => "Search: by words only (settings.search.model is \"none\")".to_string(),
        }
    }

    /// What to tell beside search results that rank by words only because
    /// the tool vectors are still being computed (or the model failed).
    pub fn search_note(&self) -> Option<String> {
        let status = self.embedding_status()?;
        if let Some(e) = status.error {
            // The default model offline: `status` and `doctor` say so, and
            // every search saying it again would cost tokens for nothing.
            if status.default {
                return None;
            }
            return Some(format!(
                "Ranked by words only: the embedding model cannot be used ({e})."
            ));
        }
        let lexical = self.catalog.latest().ranks_by_words_while_embedding() == Some(true);
        (lexical && status.busy).then(|| {
            format!(
                "Ranked by words only while tool vectors are computed ({} of {}); search by meaning follows.",
                status.done, status.total
            )
        })
    }

    /// Builds the search index, waits for the tool vectors it asked for,
    /// and builds it again with them: after this, search ranks by meaning
    /// too (or by words, if the model cannot be used).
    pub async fn search_by_meaning_ready(&self) -> Result<(), HostError> {
        self.prepare_search().await?;
        if let Some(e) = &self.embeddings {
            e.arm();
            e.idle().await;
        }
        self.prepare_search().await
    }

    /// Builds the search index of the current catalog now, so that the first
    /// search does not wait for it.
    pub async fn prepare_search(&self) -> Result<(), HostError> {
        self.current_index().await.map(|_| ())
    }

    /// Parses the input schema of every tool known now, on a blocking thread:
    /// cached schemas are kept as text, and an MCP listing of all tools needs
    /// each as an object. Run beside the first snapshot build, this takes the
    /// parsing off the first `tools/list` of direct exposure.
    pub async fn prepare_schemas(&self) {
        let lists = self.manager.tool_lists();
        // From the back: a listing built meanwhile from the front meets it
        // halfway instead of waiting on the same schemas.
        let _ = tokio::task::spawn_blocking(move || {
            for tool in lists.iter().rev().flat_map(|l| l.iter().rev()) {
                tool.input_schema.object();
            }
        })
        .await;
    }

    /// The current snapshot and its search index.
    async fn current_index(
        &self,
    ) -> Result<(Arc<Snapshot>, Arc<crate::plugin::SearchIndex>), HostError> {
        let snapshot = self.snapshot().await?;
        let index = snapshot
            .index(
                &self.policy,
                &self.catalog.index_builds,
                self.embeddings.as_ref(),
            )
            .await?;
        Ok((snapshot, index))
    }

    /// [`Host::search`], answering handles into the snapshot searched.
    pub async fn search_refs(
        &self,
        query: &str,
        options: SearchOptions,
    ) -> Result<Vec<SearchHit>, HostError> {
        self.search_refs_for(query, options, None).await
    }

    /// [`Host::search_refs`] for a client that sees only `servers` (`None`:
    /// every one): what the ranking guest calls or lists while it ranks is
    /// limited to them.
    pub async fn search_refs_for(
        &self,
        query: &str,
        options: SearchOptions,
        servers: crate::upstream::origin::Reach,
    ) -> Result<Vec<SearchHit>, HostError> {
        let (snapshot, index) = self.current_index().await?;
        // The first search fetches and loads the model, in the background:
        // this one and those before it is ready rank by words.
        if let Some(e) = &self.embeddings {
            e.arm();
        }
        let span = crate::telemetry::Span::child("search", || {
            use crate::telemetry::{Attribute, content};
            let mut a = vec![Attribute::new("mcpw.search.limit", options.limit as i64)];
            a.extend(content("mcpw.search.query", &query));
            if let Some(server) = &options.server {
                a.push(Attribute::new("mcpw.server", server.clone()));
            }
            a
        });
        let query = query.to_string();
        let search =
            span.carry(move || services::acting_for(servers, || index.search(&query, &options)));
        let hits = joined(tokio::task::spawn_blocking(search).await)??;
        span.set(|| {
            vec![crate::telemetry::Attribute::new(
                "mcpw.search.hits",
                hits.len() as i64,
            )]
        });
        Ok(hits
            .into_iter()
            .map(|h| SearchHit {
                entry: EntryRef {
                    snapshot: snapshot.clone(),
                    index: h.index,
                    app_only: false,
                },
                score: h.score,
                need: h.need,
            })
            .collect())
    }

    /// Finds a tool by agent-facing name: exactly, then with hyphens and
    /// underscores treated as equal.
    pub async fn find(&self, name: &str) -> Result<Option<EntryRef>, HostError> {
        let snapshot = self.snapshot().await?;
        Ok(snapshot.position(name).map(|index| EntryRef {
            snapshot,
            index,
            app_only: false,
        }))
    }

    /// Resolves a name to a tool. A name whose server (by the naming guest's
    /// rule) has no tools known yet connects that server first.
    pub async fn resolve(&self, name: &str) -> Result<EntryRef, HostError> {
        let snapshot = self.snapshot().await?;
        if let Some(index) = snapshot.position(name) {
            return Ok(EntryRef {
                snapshot,
                index,
                app_only: false,
            });
        }
        if let Some(server) = snapshot.owner(name)
            && !self.manager.has_tools(server)
        {
            self.manager.connect(server, false).await?;
        }
        // The catalog may have changed since the snapshot above: by that
        // connect, or by another that listed the server meanwhile.
        if let Some(entry) = self.find(name).await? {
            return Ok(entry);
        }
        // A name no server's prefix tells (`toolPrefix: none`) may belong to a
        // server never listed yet: list those, then look again.
        if self
            .manager
            .status()
            .iter()
            .any(|s| s.state == crate::catalog::ConnectionState::NotConnected)
        {
            self.bootstrap(|_, _| {}).await;
            if let Some(entry) = self.find(name).await? {
                return Ok(entry);
            }
        }
        let suggestions = match self
            .search_refs(
                name,
                SearchOptions {
                    limit: 3,
                    ..Default::default()
                },
            )
            .await
        {
            Ok(hits) => hits
                .into_iter()
                .filter(|h| !h.is_skill())
                .map(|h| h.entry.name.clone())
                .collect(),
            Err(_) => Vec::new(),
        };
        Err(HostError::ToolNotFound {
            name: name.to_string(),
            suggestions,
        })
    }

    /// Closes every connection, stops background work and writes the call
    /// statistics and the metadata cache.
    pub async fn shutdown(&self) {
        for t in &self.tasks {
            t.abort();
        }
        if let Some(stats) = &self.calls.stats {
            let stats = stats.clone();
            // Off the async threads: the file's lock may be held a while.
            if let Ok(Err(e)) = tokio::task::spawn_blocking(move || stats.flush()).await {
                tracing::warn!("cannot write call statistics: {e}");
            }
        }
        self.manager.shutdown().await;
    }
}

/// The host's background work: the servers' maintenance and the shared
/// state's monitor (with `options.maintenance`), and the catalog rebuilt as
/// tool vectors come.
fn background(
    options: &HostOptions,
    manager: &Arc<Manager>,
    shared: &Option<Arc<crate::team_state::SharedState>>,
    embeddings: &Option<Arc<crate::embed::Embeddings>>,
    catalog: &Arc<Publisher>,
    policy: &Arc<Policy>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    if options.maintenance {
        tasks.push(manager.spawn_maintenance());
        if let Some(shared) = shared {
            tasks.push(shared.spawn_monitor(crate::team_state::MONITOR_EVERY));
            // Pins another process changed (a replica pinned a server, the
            // user approved a change) apply here too.
            let m = Arc::downgrade(manager);
            let changed = move || m.upgrade().iter().for_each(|m| m.catalog_changed());
            let every = crate::team_state::MONITOR_EVERY;
            tasks.push(crate::pins::team_state::follow(
                shared.clone(),
                every,
                changed,
            ));
        }
    }
    if let Some(e) = embeddings {
        tasks.push(rebuild_when_embedded(e, catalog, policy));
    }
    tasks
}

/// The result of a blocking task: its panic goes on unwinding here; a task
/// cancelled because the runtime is going away is [`HostError::ShuttingDown`].
pub(crate) fn joined<T>(r: Result<T, tokio::task::JoinError>) -> Result<T, HostError> {
    match r {
        Ok(t) => Ok(t),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(HostError::ShuttingDown),
    }
}

/// Gives the memory freed after a burst of allocations (parsing the cache,
/// building a snapshot) back to the system, so that the resident size
/// reflects what is kept.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}
