//! Server lifecycle: when to connect, when to give up, when to disconnect.
//!
//! `lazy` servers connect on first use, `eager` and `keep-alive` ones at start
//! (at most 10 at once). Concurrent connects to one server share one attempt. A
//! failed connect blocks further automatic attempts for the backoff period (60 s);
//! an explicit connect bypasses it. Idle servers are closed after their idle
//! timeout unless a call is in flight; keep-alive servers are reconnected by the
//! health check. Every fresh listing updates the metadata cache.

mod connect;
mod connector;
mod health;
mod health_state;
mod listing;
mod people;
mod person_connect;
mod reload;
#[cfg(test)]
mod tests;

pub(crate) use connector::{Connector, Transports};

pub(crate) use listing::catalog_tools;
pub(crate) use people::Who;
use reload::new_slot;

use crate::cache::{self, CacheWriter, MetadataCache};
use crate::catalog::{ConnectionState, ServerStatus, Tool};
use crate::clock::Instant;
use crate::config::{Config, Lifecycle, Server};
use crate::paths::Environment;
use crate::upstream::{
    ConnectContext, ConnectError, Connection, Listing, Need, UpstreamEvent, is_legacy_revision,
};
use futures::StreamExt;
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::broadcast;

/// Timing of the lifecycle, overridable for tests.
#[derive(Clone, Debug)]
pub struct LifecycleOptions {
    /// How long a failed server is left alone.
    pub backoff: Duration,
    /// How often idle servers are closed and keep-alive servers reconnected.
    pub health_interval: Duration,
    /// Most servers connecting at once at start-up.
    pub max_parallel_connects: usize,
    /// How long a keep-alive server may take to answer the health check's ping
    /// before its connection counts as hung and is replaced.
    pub ping_timeout: Duration,
    /// How old the lists of a server that cannot tell of its changes (a
    /// stateless server without a listen stream) may be before a call or a
    /// session has them fetched again.
    pub unheard_lists_fresh: Duration,
    /// Most person connections (`oauth.perPerson`) open at once, across
    /// servers.
    pub max_people: usize,
}

impl Default for LifecycleOptions {
    fn default() -> Self {
        LifecycleOptions {
            backoff: Duration::from_secs(60),
            health_interval: Duration::from_secs(30),
            max_parallel_connects: 10,
            ping_timeout: Duration::from_secs(10),
            unheard_lists_fresh: Duration::from_secs(5),
            max_people: people::DEFAULT_MAX_PEOPLE,
        }
    }
}

/// Why a server could not be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LifecycleError {
    /// No such server in the config.
    #[error("server \"{0}\" is not configured")]
    NotFound(String),
    /// The server's config changed (a reload) while it was connecting.
    #[error("server \"{0}\" was reconfigured while connecting; try again")]
    Reconfigured(String),
    /// `enabled: false`.
    #[error("server \"{0}\" is disabled in the config")]
    Disabled(String),
    /// A recent failure; retried after the backoff.
    #[error(
        "server \"{server}\" failed {ago_s}s ago ({last_error}); retrying in {retry_in_s}s (connect explicitly to retry now)"
    )]
    Backoff {
        /// The server.
        server: String,
        /// Seconds since the failure.
        ago_s: u64,
        /// Seconds until automatic retries resume.
        retry_in_s: u64,
        /// The failure.
        last_error: String,
    },
    /// Connecting or calling failed.
    #[error("server \"{server}\": {error}")]
    Connect {
        /// The server.
        server: String,
        /// What happened.
        error: ConnectError,
    },
    /// A per-person server, and the principal has no usable login of their
    /// own there (none, or one its server no longer takes).
    #[error(
        "server \"{server}\" takes each person's own login, and {owner} has none there: `mcpw auth login {server} --principal {owner}` makes one"
    )]
    PersonNeedsLogin {
        /// The server.
        server: String,
        /// The principal.
        owner: String,
    },
    /// A per-person server, called with nobody to act for (a guest's own
    /// call): never sent with somebody else's login.
    #[error(
        "server \"{0}\" takes each person's own login, and this call is made for nobody in particular"
    )]
    NoPerson(String),
    /// A server that takes each caller's token in exchange, and no token
    /// of its own could be had for this caller.
    #[error("server \"{server}\" acts for each caller with a token exchanged for theirs: {why}")]
    Exchange {
        /// The server.
        server: String,
        /// Why not.
        why: String,
    },
    /// Every person connection this process may hold is busy.
    #[error(
        "server \"{server}\": all {cap} person connections of this process are busy; try again shortly"
    )]
    PeopleFull {
        /// The server.
        server: String,
        /// The cap (`settings.perPerson.maxConnections`).
        cap: usize,
    },
}

/// A change the host should react to. More kinds may come.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum LifecycleEvent {
    /// A server's tools changed (connected, relisted, or list_changed).
    CatalogChanged(String),
    /// A server's connection state changed.
    StatusChanged(String),
    /// A server's log message.
    Log {
        /// The server.
        server: String,
        /// The message.
        message: crate::upstream::LogMessage,
    },
    /// A server said a resource changed (its own URI).
    ResourceUpdated {
        /// The server.
        server: String,
        /// The server's URI of the resource.
        uri: String,
    },
}

/// What a server offers besides tools, as MCP JSON.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Offers {
    /// Prompts.
    pub prompts: Vec<Value>,
    /// Resources.
    pub resources: Vec<Value>,
    /// Resource templates.
    pub templates: Vec<Value>,
    /// Skills (SEP-2640), each with its files' digests.
    pub skills: Vec<Value>,
    /// The server answers `resources/directory/read`.
    pub directory_read: bool,
}

struct SlotState {
    conn: Option<Arc<Connection>>,
    /// Bumped on every new connection: a relist of an older connection that
    /// finishes late must not overwrite a newer one's tools.
    generation: u64,
    tools: Option<Arc<[Arc<Tool>]>>,
    offers: Offers,
    /// The MCP revision last negotiated (from the cache until connected).
    protocol_version: Option<String>,
    from_cache: bool,
    /// Its failures, use and listings, and what they allow.
    health: health_state::Health,
    /// Replaced or removed by a reload: a connect or listing finishing late
    /// is dropped, never stored.
    retired: bool,
}

struct Slot {
    server: Server,
    hash: String,
    connect_lock: tokio::sync::Mutex<()>,
    relist_lock: tokio::sync::Mutex<()>,
    /// A relist is waiting for `relist_lock`: a `list_changed` that comes
    /// meanwhile is folded into it rather than queuing one more.
    relist_pending: AtomicBool,
    state: Mutex<SlotState>,
    in_flight: AtomicUsize,
}

/// One call in flight on a slot, from `enter` until dropped.
struct InFlight<'a>(&'a Slot);

impl<'a> InFlight<'a> {
    fn enter(slot: &'a Slot) -> Self {
        slot.in_flight.fetch_add(1, Ordering::AcqRel);
        slot.state().health.used(Instant::now());
        InFlight(slot)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.state().health.used(Instant::now());
    }
}

impl Slot {
    fn state(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn name(&self) -> &str {
        &self.server.name
    }

    /// A live connection, dropping one that has closed underneath us.
    fn live(&self) -> Option<Arc<Connection>> {
        let mut st = self.state();
        match &st.conn {
            Some(c) if c.is_open() => Some(c.clone()),
            Some(_) => {
                st.conn = None;
                None
            }
            None => None,
        }
    }

    /// Connected at start-up (eager and keep-alive servers).
    fn starts_eagerly(&self) -> bool {
        self.server.config.enabled && self.server.config.lifecycle != Lifecycle::Lazy
    }

    /// Enabled, and its tools not known from a listing or the cache.
    fn unlisted(&self) -> bool {
        self.server.config.enabled && self.state().tools.is_none()
    }

    fn idle_timeout(&self, global_minutes: f64) -> Option<Duration> {
        let c = &self.server.config;
        let minutes = c.idle_timeout.unwrap_or(match c.lifecycle {
            Lifecycle::Lazy => global_minutes,
            Lifecycle::Eager | Lifecycle::KeepAlive => 0.0,
        });
        (minutes > 0.0).then(|| Duration::from_secs_f64(minutes * 60.0))
    }
}

/// The slots of one configuration, in config order, found by name at once.
struct Slots {
    list: Vec<Arc<Slot>>,
    by_name: std::collections::HashMap<String, usize>,
}

impl Slots {
    fn new(list: Vec<Arc<Slot>>) -> Slots {
        let by_name = list
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name().to_string(), i))
            .collect();
        Slots { list, by_name }
    }

    fn get(&self, name: &str) -> Option<&Arc<Slot>> {
        self.by_name.get(name).map(|&i| &self.list[i])
    }
}

impl std::ops::Deref for Slots {
    type Target = [Arc<Slot>];
    fn deref(&self) -> &[Arc<Slot>] {
        &self.list
    }
}

/// Every configured server and its connection.
pub(crate) struct Manager {
    /// Replaced as a whole on reload; a slot whose server did not change is
    /// carried over with its connection.
    slots: arc_swap::ArcSwap<Slots>,
    env: Environment,
    cache: MetadataCache,
    /// Cache writes, off the async threads.
    writer: CacheWriter,
    options: LifecycleOptions,
    global_idle_minutes: f64,
    global_call_timeout_ms: u64,
    upstream_tx: crate::upstream::events::EventSender,
    events: broadcast::Sender<LifecycleEvent>,
    /// Bumped whenever any server's tools change, before the event is sent.
    catalog_version: AtomicU64,
    reload_lock: tokio::sync::Mutex<()>,
    /// The downstream sessions mcpw serves.
    sessions: Arc<crate::upstream::origin::Sessions>,
    /// The most verbose log level any session asked for; servers are told it.
    log_level: Mutex<Option<crate::log_level::LogLevel>>,
    /// Where OAuth credentials are kept.
    vault: crate::auth::store::Vault,
    /// How connections are opened.
    connector: Arc<dyn Connector>,
    /// Where component servers keep their `wasi:keyvalue` state.
    stores: Arc<crate::components::keyvalue::Stores>,
    /// Each person's own connections to the per-person servers.
    people: people::People,
}

/// Asks a server for log messages of `level` and above; a refusal is only logged.
async fn tell_log_level(
    conn: Arc<Connection>,
    name: String,
    level: crate::log_level::LogLevel,
    timeout: Duration,
) {
    if let Err(e) = conn.set_log_level(level, timeout).await {
        tracing::debug!(server = %name, "logging/setLevel: {e}");
    }
}

/// Listed MCP items as JSON.
fn json_items<T: serde::Serialize>(items: &[T]) -> Vec<Value> {
    items
        .iter()
        .filter_map(|i| serde_json::to_value(i).ok())
        .collect()
}

/// Decodes a cache entry into catalog tools and the rest it offers; `None`
/// (with a warning) when a cached tool cannot be read: the entry is not
/// trusted, and the server is listed again on first need.
fn tools_from_entry(server: &Server, entry: cache::Entry) -> Option<(Vec<Tool>, Offers)> {
    let (tools, unreadable) = listing::catalog_tools_counted(
        &server.name,
        &server.config,
        &entry.tools,
        entry.resources.clone(),
    );
    if unreadable > 0 {
        tracing::warn!(
            server = %server.name,
            "{unreadable} cached tool(s) of this server cannot be read; its cache entry is dropped and the server will be listed again"
        );
        return None;
    }
    let offers = Offers {
        prompts: entry.prompts,
        resources: entry.resources,
        templates: entry.resource_templates,
        skills: entry.skills,
        directory_read: entry.directory_read,
    };
    Some((tools, offers))
}

impl Manager {
    /// A manager for the config's servers, with their valid cache entries loaded.
    /// Spawns its event loop; call inside a tokio runtime. Reads the cache
    /// file: blocking.
    pub(crate) fn new(
        config: &Config,
        env: Environment,
        cache: MetadataCache,
        options: LifecycleOptions,
    ) -> Arc<Manager> {
        Self::with_connector(config, env, cache, options, Arc::new(Transports))
    }

    /// As [`Manager::new`], opening connections with `connector`.
    pub(crate) fn with_connector(
        config: &Config,
        env: Environment,
        cache: MetadataCache,
        options: LifecycleOptions,
        connector: Arc<dyn Connector>,
    ) -> Arc<Manager> {
        let (mut entries, failures) = cache.read_all();
        let slots = config
            .servers
            .iter()
            .map(|server| new_slot(server, &mut entries, &failures))
            .collect();
        let (upstream_tx, upstream_rx) = crate::upstream::events::channel();
        let (events, _) = broadcast::channel(256);
        let vault = crate::auth::vault(config, &env);
        let vault = match cache.shared() {
            Some(state) => crate::auth::shared_vault(vault.clone(), state.clone(), config, &env)
                .unwrap_or_else(|why| {
                    tracing::error!("credentials in shared state cannot be used: {why}");
                    vault.unusable(why)
                }),
            None => vault,
        };
        let stores = crate::components::keyvalue::Stores::new(cache.shared().cloned());
        let max_people = options.max_people;
        let manager = Arc::new(Manager {
            slots: arc_swap::ArcSwap::from_pointee(Slots::new(slots)),
            env,
            writer: CacheWriter::new(cache.clone()),
            cache,
            options,
            global_idle_minutes: config.settings.idle_timeout,
            global_call_timeout_ms: config.settings.call_timeout_ms,
            upstream_tx,
            events,
            catalog_version: AtomicU64::new(1),
            reload_lock: Default::default(),
            log_level: Mutex::new(None),
            sessions: Default::default(),
            vault,
            connector,
            stores,
            people: people::People::new(max_people),
        });
        tokio::spawn(Self::upstream_loop(Arc::downgrade(&manager), upstream_rx));
        // A signal must not lose the listings queued for the cache.
        let queued = Arc::downgrade(&manager);
        crate::processes::at_signal_exit(move || {
            if let Some(m) = queued.upgrade() {
                m.writer.flush_blocking(Duration::from_secs(2));
            }
        });
        manager
    }

    /// A session asked for log messages of `level` and above: every server is
    /// asked for the most verbose level any session wants (each session gets
    /// only what it asked for), now and when it connects.
    pub(crate) async fn set_log_level(&self, level: crate::log_level::LogLevel) {
        let level = {
            let mut held = self.log_level.lock().unwrap_or_else(|p| p.into_inner());
            match *held {
                Some(l) if l <= level => return,
                _ => *held = Some(level),
            }
            level
        };
        self.upstream_tx.want(level);
        let live: Vec<(String, Arc<Connection>)> = self
            .slots()
            .iter()
            .filter_map(|s| Some((s.name().to_string(), s.live()?)))
            .collect();
        let asks = live.into_iter().map(|(name, conn)| {
            let timeout = self.call_timeout(&name);
            tell_log_level(conn, name, level, timeout)
        });
        futures::future::join_all(asks).await;
    }

    /// Once every log message the servers sent so far has reached this
    /// manager's subscribers ([`crate::upstream::events::EventSender::logs_passed_on`]).
    pub(crate) async fn logs_passed_on(&self) {
        self.upstream_tx.logs_passed_on().await;
    }

    /// Where OAuth credentials are kept.
    pub(crate) fn vault(&self) -> &crate::auth::store::Vault {
        &self.vault
    }

    /// The downstream sessions mcpw serves.
    pub(crate) fn sessions(&self) -> &Arc<crate::upstream::origin::Sessions> {
        &self.sessions
    }

    /// Tells a new connection the log level sessions asked for, if any.
    fn log_level_to(&self, conn: &Arc<Connection>, name: &str) {
        let level = *self.log_level.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(level) = level {
            let timeout = self.call_timeout(name);
            tokio::spawn(tell_log_level(
                conn.clone(),
                name.to_string(),
                level,
                timeout,
            ));
        }
    }

    /// Changes whenever any server's tools change; compare to rebuild derived views.
    pub(crate) fn catalog_version(&self) -> u64 {
        self.catalog_version.load(Ordering::Acquire)
    }

    /// Something the catalog is built from besides the tool lists changed
    /// (pinned tools approved): the next snapshot is built again, and the
    /// sessions hear of it.
    pub(crate) fn catalog_changed(&self) {
        self.catalog_version.fetch_add(1, Ordering::AcqRel);
        let _ = self
            .events
            .send(LifecycleEvent::CatalogChanged(String::new()));
    }

    /// Changes of catalog and status, as they happen.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<LifecycleEvent> {
        self.events.subscribe()
    }

    /// The current slots (a snapshot: a reload swaps in a new list).
    fn slots(&self) -> Arc<Slots> {
        self.slots.load_full()
    }

    fn slot(&self, name: &str) -> Result<Arc<Slot>, LifecycleError> {
        self.slots
            .load()
            .get(name)
            .cloned()
            .ok_or_else(|| LifecycleError::NotFound(name.to_string()))
    }

    /// Names of every configured server, in config order.
    pub(crate) fn server_names(&self) -> Vec<String> {
        self.slots().iter().map(|s| s.name().to_string()).collect()
    }

    /// The server's config.
    pub(crate) fn server(&self, name: &str) -> Option<Server> {
        self.slot(name).ok().map(|s| s.server.clone())
    }

    /// Has a valid cache entry or live listing?
    pub(crate) fn has_tools(&self, name: &str) -> bool {
        self.slot(name).is_ok_and(|s| s.state().tools.is_some())
    }

    /// The status of every server.
    pub(crate) fn status(&self) -> Vec<ServerStatus> {
        self.slots().iter().map(|s| self.slot_status(s)).collect()
    }

    /// The status of one server.
    pub(crate) fn server_status(&self, name: &str) -> Result<ServerStatus, LifecycleError> {
        Ok(self.slot_status(self.slot(name)?.as_ref()))
    }

    /// Seconds since the last failure and seconds of backoff left, if failed.
    pub(crate) fn failure(&self, name: &str) -> Option<(u64, u64)> {
        let slot = self.slot(name).ok()?;
        let st = slot.state();
        let ago = st.health.failure()?.at.elapsed();
        Some((
            ago.as_secs(),
            self.options.backoff.saturating_sub(ago).as_secs(),
        ))
    }

    fn slot_status(&self, slot: &Slot) -> ServerStatus {
        let live = slot.live();
        let listen = live
            .as_ref()
            .and_then(|c| c.listen_state())
            .map(|s| s.report());
        let live = live.is_some();
        let st = slot.state();
        let state = if !slot.server.config.enabled {
            ConnectionState::Disabled
        } else if live {
            ConnectionState::Connected
        } else if st.health.failure().is_some_and(|f| f.needs_auth) {
            ConnectionState::NeedsAuth
        } else if st.health.failure().is_some() {
            ConnectionState::Failed
        } else if st.tools.is_some() {
            ConnectionState::Cached
        } else {
            ConnectionState::NotConnected
        };
        ServerStatus {
            name: slot.name().to_string(),
            state,
            tool_count: st.tools.as_ref().map_or(0, |t| t.len() as u32),
            lifecycle: slot.server.config.lifecycle,
            last_error: st.health.failure().map(|f| f.error.clone()),
            protocol_version: st.protocol_version.clone(),
            listen,
        }
    }

    /// Every known tool, in config order (live listing, else cache).
    pub(crate) fn tools(&self) -> Vec<Tool> {
        self.slots()
            .iter()
            .filter(|s| s.server.config.enabled)
            .flat_map(|s| {
                let tools = s.state().tools.clone().unwrap_or_default();
                tools.iter().map(|t| Tool::clone(t)).collect::<Vec<_>>()
            })
            .collect()
    }

    /// Whether a tool of an enabled server (listed, or cached for one not
    /// started) comes with an MCP App's view.
    pub(crate) fn has_views(&self) -> bool {
        self.slots()
            .iter()
            .filter(|s| s.server.config.enabled)
            .any(|s| {
                let tools = s.state().tools.clone().unwrap_or_default();
                tools.iter().any(|t| {
                    t.meta
                        .as_ref()
                        .is_some_and(|m| crate::apps::view_of(m).is_some())
                })
            })
    }

    /// What each enabled server offers besides tools, in config order.
    pub(crate) fn offers(&self) -> Vec<(String, Offers)> {
        self.slots()
            .iter()
            .filter(|s| s.server.config.enabled)
            .map(|s| (s.name().to_string(), s.state().offers.clone()))
            .collect()
    }

    /// Tools of one server, if known.
    pub(crate) fn server_tools(&self, name: &str) -> Result<Option<Vec<Tool>>, LifecycleError> {
        let tools = self.slot(name)?.state().tools.clone();
        Ok(tools.map(|t| t.iter().map(|t| Tool::clone(t)).collect()))
    }

    /// Every known tool, per enabled server in config order, without copying.
    pub(crate) fn tool_lists(&self) -> Vec<Arc<[Arc<Tool>]>> {
        self.slots()
            .iter()
            .filter(|s| s.server.config.enabled)
            .filter_map(|s| s.state().tools.clone())
            .collect()
    }

    /// Stores a fresh listing (and caches it) unless it belongs to a connection
    /// older than the current one; returns whether it was stored.
    fn store_listing(&self, slot: &Slot, listing: &Listing, generation: u64) -> bool {
        let tools: Vec<Box<RawValue>> = listing
            .tools
            .iter()
            .filter_map(|t| serde_json::value::to_raw_value(t).ok())
            .collect();
        let resources = json_items(&listing.resources);
        let catalog = catalog_tools(slot.name(), &slot.server.config, &tools, resources.clone());
        let offers = Offers {
            prompts: json_items(&listing.prompts),
            resources: resources.clone(),
            templates: json_items(&listing.resource_templates),
            skills: json_items(&listing.skills),
            directory_read: listing.directory_read,
        };
        let changed = {
            let mut st = slot.state();
            if st.generation != generation || st.retired {
                tracing::debug!(
                    server = slot.name(),
                    "dropping a listing from a replaced connection"
                );
                return false;
            }
            // A reconnect that lists the same tools is no catalog change.
            let same_tools = st.tools.as_ref().is_some_and(|old| {
                old.len() == catalog.len() && old.iter().zip(&catalog).all(|(a, b)| **a == *b)
            });
            let changed = !same_tools || st.offers != offers;
            st.tools = Some(catalog.into_iter().map(Arc::new).collect());
            st.offers = offers.clone();
            st.protocol_version = listing.protocol_version.clone();
            st.from_cache = false;
            st.health.listed(Instant::now());
            changed
        };
        if changed {
            self.catalog_version.fetch_add(1, Ordering::AcqRel);
        }
        let entry = cache::Entry {
            config_hash: slot.hash.clone(),
            tools,
            resources,
            resource_templates: offers.templates,
            prompts: offers.prompts,
            skills: offers.skills,
            directory_read: offers.directory_read,
            cached_at: crate::clock::now_ms(),
            protocol_version: listing.protocol_version.clone(),
        };
        self.writer
            .update([(slot.name().to_string(), Some(entry))].into());
        true
    }

    /// Runs `f` with a live connection, counting it as in flight (so the server is
    /// not idled out under it). A connection found closed is dropped, so the next
    /// use reconnects.
    pub(crate) async fn with_connection<T, F>(
        &self,
        name: &str,
        f: impl FnOnce(Arc<Connection>) -> F,
    ) -> Result<T, LifecycleError>
    where
        F: Future<Output = Result<T, ConnectError>>,
    {
        self.with_connection_for(name, Need::Any, f).await
    }

    /// Runs `f` as [`Manager::with_connection_for`] does, with `who`'s login:
    /// on a per-person server a principal's own connection, and no
    /// connection at all for nobody; elsewhere the shared one.
    pub(crate) async fn with_connection_as<T, F>(
        &self,
        name: &str,
        who: Who<'_>,
        need: Need<'_>,
        f: impl FnOnce(Arc<Connection>) -> F,
    ) -> Result<T, LifecycleError>
    where
        F: Future<Output = Result<T, ConnectError>>,
    {
        let slot = self.slot(name)?;
        if !slot.server.config.per_person() {
            return self.with_connection_for(name, need, f).await;
        }
        if !slot.server.config.enabled {
            return Err(LifecycleError::Disabled(name.to_string()));
        }
        match who {
            Who::Shared => self.with_connection_for(name, need, f).await,
            Who::Person(owner, token) => self.with_person(&slot, (owner, token), f).await,
            Who::Nobody => Err(LifecycleError::NoPerson(name.to_string())),
        }
    }

    /// Runs `f` as [`Manager::with_connection`] does, on a connection that
    /// serves `need`: the handshake-era one beside a stateless connection
    /// when only that era carries it and the server speaks it (see
    /// [`crate::upstream::Need`]).
    pub(crate) async fn with_connection_for<T, F>(
        &self,
        name: &str,
        need: Need<'_>,
        f: impl FnOnce(Arc<Connection>) -> F,
    ) -> Result<T, LifecycleError>
    where
        F: Future<Output = Result<T, ConnectError>>,
    {
        let conn = self.connection(name, false).await?;
        let slot = self.slot(name)?;
        self.freshen(&slot, &conn);
        let result = {
            // Counted down on drop too: a call abandoned by its caller (a
            // cancelled request) must not pin the server as busy forever.
            let _busy = InFlight::enter(&slot);
            match self.beside(&slot, &conn, need).await {
                Some(beside) => f(beside).await,
                None => f(conn.clone()).await,
            }
        };
        if died(&result, &conn) {
            // Not a failed connect (no backoff): the next call simply reconnects.
            let mut st = slot.state();
            if st.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                st.conn = None;
            }
            drop(st);
            let _ = self
                .events
                .send(LifecycleEvent::StatusChanged(name.to_string()));
        }
        result.map_err(|error| LifecycleError::Connect {
            server: name.to_string(),
            error,
        })
    }

    /// Connects every eager and keep-alive server, at most
    /// `max_parallel_connects` at once. Failures are recorded, not returned.
    pub(crate) async fn connect_at_start(&self) {
        self.connect_where(Slot::starts_eagerly, |_, _| {}).await;
    }

    /// Connects the servers whose slot satisfies `wanted`, as [`Manager::connect_many`].
    async fn connect_where(
        &self,
        wanted: impl Fn(&Slot) -> bool,
        progress: impl Fn(&str, &Result<(), LifecycleError>),
    ) {
        let names: Vec<String> = self
            .slots()
            .iter()
            .filter(|s| wanted(s))
            .map(|s| s.name().to_string())
            .collect();
        self.connect_many(names, progress).await;
    }

    /// Connects the named servers concurrently (bounded); `progress` hears each outcome.
    pub(crate) async fn connect_many(
        &self,
        names: Vec<String>,
        progress: impl Fn(&str, &Result<(), LifecycleError>),
    ) {
        let mut attempts = futures::stream::iter(names.into_iter().map(|n| async move {
            let r = self.connect(&n, false).await.map(|_| ());
            (n, r)
        }))
        .buffer_unordered(self.options.max_parallel_connects.max(1));
        while let Some((name, result)) = attempts.next().await {
            progress(&name, &result);
        }
    }

    /// Ends every connection now, failing the calls in flight on them, then
    /// shuts down.
    pub(crate) async fn abort(&self) {
        for slot in self.slots().iter() {
            if let Some(conn) = slot.live() {
                conn.abort();
            }
        }
        self.shutdown().await;
    }

    /// Closes every connection (each stdio server's process group is killed)
    /// and writes what is queued for the cache.
    pub(crate) async fn shutdown(&self) {
        let conns: Vec<Arc<Connection>> = self
            .slots()
            .iter()
            .filter_map(|s| s.state().conn.take())
            .collect();
        futures::future::join_all(conns.into_iter().map(close)).await;
        self.writer.flush().await;
    }

    /// Waits until every change queued for the metadata cache is written.
    pub(crate) async fn flush_cache(&self) {
        self.writer.flush().await;
    }

    /// Connects every enabled server whose tools are not known yet (no valid
    /// cache entry, never listed), so that the catalog knows every tool.
    pub(crate) async fn connect_unlisted(
        &self,
        progress: impl Fn(&str, &Result<(), LifecycleError>),
    ) {
        self.connect_where(Slot::unlisted, progress).await;
    }

    /// After a reload, connects what start-up would have: of the servers
    /// added or changed, the eager and keep-alive ones, and those whose tools
    /// are not known.
    pub(crate) async fn connect_changed(&self, changed: &[String]) {
        let wanted = |s: &Slot| {
            changed.iter().any(|c| c == s.name()) && (s.starts_eagerly() || s.unlisted())
        };
        self.connect_where(wanted, |_, _| {}).await;
    }

    /// The process id of a live stdio server.
    pub(crate) fn pid(&self, name: &str) -> Option<u32> {
        self.slot(name).ok()?.live()?.pid()
    }

    /// The transport of a live connection.
    pub(crate) fn transport(&self, name: &str) -> Option<crate::upstream::TransportKind> {
        Some(self.slot(name).ok()?.live()?.kind())
    }

    /// How long one call to `name` may take.
    pub(crate) fn call_timeout(&self, name: &str) -> Duration {
        let ms = self
            .slot(name)
            .ok()
            .and_then(|s| s.server.config.call_timeout_ms)
            .unwrap_or(self.global_call_timeout_ms);
        Duration::from_millis(ms)
    }

    /// Calls in flight to a server.
    #[cfg(test)]
    pub(crate) fn in_flight(&self, name: &str) -> usize {
        self.slot(name)
            .map_or(0, |s| s.in_flight.load(Ordering::Acquire))
    }
}

/// Closes a connection once its last user lets go of it.
/// Whether `conn` is of no more use after a call ended in `result`: the
/// next call connects again (no failed connect, so no backoff).
fn died<T>(result: &Result<T, ConnectError>, conn: &Connection) -> bool {
    match result {
        Err(e) => e.is_fatal() || !conn.is_open(),
        Ok(_) => false,
    }
}

async fn close(conn: Arc<Connection>) {
    match Arc::try_unwrap(conn) {
        Ok(conn) => conn.close().await,
        // Still used by a call: the call finishes on it; dropping the last
        // reference drops the process group guard, which kills the server.
        Err(shared) => drop(shared),
    }
}
