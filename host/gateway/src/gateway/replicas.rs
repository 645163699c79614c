//! A session shared with the other replicas (with `--shared-state`): what it
//! chooses (tools loaded with ToolSearch, its log level, the resources it
//! watches) is recorded in shared state and announced; a replica that holds
//! the same session applies what the others announce, and one that takes a
//! session up (rmcp replays its `initialize`) loads what was chosen so far.
//! Without shared state, every method here does nothing.

use super::bootstrap::Bootstrap;
use super::scope::ClientScope;
use super::watching;
use crate::host::Host;
use crate::log_level::LogLevel;
use crate::team_state::sessions::{Announcement, Change, SessionRecord, SharedSessions};
use futures::StreamExt;
use rmcp::Peer;
use rmcp::service::RoleServer;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// A replica's sessions that take part, by session id.
pub(super) struct Replicas {
    sessions: Arc<SharedSessions>,
    host: Arc<Host>,
    live: Mutex<HashMap<String, Weak<Link>>>,
    listening: OnceLock<()>,
    /// Ends a session here when the client ended it at another replica.
    on_closed: OnceLock<Box<dyn Fn(String) + Send + Sync>>,
}

impl Replicas {
    /// For `host`, if it has shared state.
    pub(super) fn for_host(host: &Arc<Host>) -> Option<Arc<Replicas>> {
        let state = host.shared_state()?.clone();
        Some(Arc::new(Replicas {
            sessions: SharedSessions::new(state),
            host: host.clone(),
            live: Mutex::new(HashMap::new()),
            listening: OnceLock::new(),
            on_closed: OnceLock::new(),
        }))
    }

    /// The session store rmcp restores sessions from.
    pub(super) fn store(&self) -> Arc<SharedSessions> {
        self.sessions.clone()
    }

    /// What to do when another replica says a client ended a session.
    pub(super) fn on_closed(&self, f: impl Fn(String) + Send + Sync + 'static) {
        let _ = self.on_closed.set(Box::new(f));
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Weak<Link>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn register(self: &Arc<Self>, id: &str, link: &Arc<Link>) {
        let mut live = self.live();
        live.retain(|_, l| l.strong_count() > 0);
        live.insert(id.to_string(), Arc::downgrade(link));
        drop(live);
        self.listen();
    }

    /// Applies what other replicas announce, and writes sessions back when
    /// Redis answers again; once. HTTP serving starts it with the replica: a
    /// session it takes up later must not miss a change made meanwhile.
    pub(super) fn listen(self: &Arc<Self>) {
        self.listening.get_or_init(|| {
            let me = Arc::downgrade(self);
            let announcements = self.sessions.announcements();
            tokio::spawn(async move {
                futures::pin_mut!(announcements);
                while let Some(a) = announcements.next().await {
                    let Some(replicas) = me.upgrade() else { return };
                    replicas.apply(a).await;
                }
            });
            let me = Arc::downgrade(self);
            let mut reach = self.sessions.state().health().watch();
            tokio::spawn(async move {
                let mut was_down = false;
                while reach.changed().await.is_ok() {
                    let up = *reach.borrow_and_update();
                    if up == Some(true) && was_down {
                        let Some(replicas) = me.upgrade() else { return };
                        replicas.catch_up().await;
                    }
                    was_down = up == Some(false);
                }
            });
        });
    }

    /// Redis answers again: every session here writes what it holds, which
    /// Redis may have lost (a restart without its data) or missed (sessions
    /// begun, tools loaded while it was away).
    async fn catch_up(&self) {
        let links: Vec<Arc<Link>> = self.live().values().filter_map(Weak::upgrade).collect();
        tracing::info!("writing {} session(s) back to shared state", links.len());
        for link in links {
            link.reshare().await;
        }
    }

    async fn apply(&self, a: Announcement) {
        if a.change == Change::Closed {
            self.live().remove(&a.session);
            if let Some(close) = self.on_closed.get() {
                close(a.session);
            }
            return;
        }
        let link = self.live().get(&a.session).and_then(Weak::upgrade);
        if let Some(link) = link {
            link.apply(&a.change).await;
        }
    }
}

/// One session's tie to the others.
pub(super) struct Link {
    replicas: Option<Arc<Replicas>>,
    /// Listing the replica's servers: resources are watched once they are.
    bootstrap: Weak<Bootstrap>,
    id: OnceLock<String>,
    peer: OnceLock<Peer<RoleServer>>,
    /// What the session chose before it came here has been loaded.
    loaded: tokio::sync::OnceCell<()>,
    /// The client of the session, as its first request here said: resources
    /// it watched are watched again within what it may see.
    client: OnceLock<ClientScope>,
    activated: Arc<Mutex<BTreeSet<String>>>,
    log_level: Arc<Mutex<Option<LogLevel>>>,
    watching: Arc<watching::Watching>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Link {
    pub(super) fn new(
        replicas: Option<Arc<Replicas>>,
        bootstrap: Weak<Bootstrap>,
        activated: Arc<Mutex<BTreeSet<String>>>,
        log_level: Arc<Mutex<Option<LogLevel>>>,
        watching: Arc<watching::Watching>,
    ) -> Arc<Link> {
        Arc::new(Link {
            replicas,
            bootstrap,
            id: OnceLock::new(),
            peer: OnceLock::new(),
            loaded: tokio::sync::OnceCell::new(),
            client: OnceLock::new(),
            activated,
            log_level,
            watching,
        })
    }

    fn client(&self) -> &ClientScope {
        static EVERYONE: OnceLock<ClientScope> = OnceLock::new();
        self.client
            .get()
            .unwrap_or_else(|| EVERYONE.get_or_init(ClientScope::everyone))
    }

    /// The shared sessions and this session's id, once both are known.
    fn shared(&self) -> Option<(&SharedSessions, &str)> {
        Some((&self.replicas.as_ref()?.sessions, self.id.get()?))
    }

    /// Learns the session's id from a request of it (`Mcp-Session-Id`), and
    /// on the first, loads what the session chose so far: nothing for one
    /// begun here, everything for one begun at another replica. Every
    /// request comes through here, and waits for that load: a session taken
    /// up from another replica gets its first request at once, before its
    /// `initialized` notification is handled.
    pub(super) async fn seen(
        self: &Arc<Self>,
        extensions: &rmcp::model::Extensions,
        peer: &Peer<RoleServer>,
    ) {
        let Some(replicas) = &self.replicas else {
            return;
        };
        if self.id.get().is_none() {
            let Some(id) = extensions
                .get::<axum::http::request::Parts>()
                .and_then(|p| p.headers.get("mcp-session-id"))
                .and_then(|v| v.to_str().ok())
            else {
                return; // stateless, or stdio
            };
            if self.id.set(id.to_string()).is_ok() {
                let _ = self.peer.set(peer.clone());
                let client = extensions
                    .get::<axum::http::request::Parts>()
                    .and_then(|p| p.extensions.get::<ClientScope>().cloned())
                    .unwrap_or_else(ClientScope::everyone);
                let _ = self.client.set(client);
                replicas.register(id, self);
            }
        }
        let Some(id) = self.id.get() else { return };
        self.loaded
            .get_or_init(|| async {
                match replicas.sessions.load(id).await {
                    Ok(record) => {
                        self.adopt(record).await;
                    }
                    Err(e) => tracing::warn!("session {id} goes on without what it chose: {e}"),
                }
            })
            .await;
    }

    /// Applies a change another replica announced.
    async fn apply(&self, change: &Change) {
        let Some((sessions, id)) = self.shared() else {
            return;
        };
        match sessions.load(id).await {
            Ok(record) => {
                let more_tools = self.adopt(record).await;
                if more_tools
                    && *change == Change::Tools
                    && let Some(peer) = self.peer.get()
                {
                    let _ = peer.notify_tool_list_changed().await;
                }
            }
            Err(e) => tracing::debug!("session {id}: {e}"),
        }
    }

    /// Takes `record` over; true when it loaded tools this copy did not have.
    async fn adopt(&self, record: SessionRecord) -> bool {
        let more_tools = {
            let mut activated = locked(&self.activated);
            let before = activated.len();
            activated.extend(record.tools);
            activated.len() > before
        };
        if let Some(level) = record.log_level.as_ref().and_then(LogLevel::of) {
            *locked(&self.log_level) = Some(level);
            if let Some(r) = &self.replicas {
                r.host.servers().set_log_level(level).await;
            }
        }
        if !record.watching.is_empty()
            && let Some(bootstrap) = self.bootstrap.upgrade()
        {
            bootstrap.ready().await;
        }
        for uri in &record.watching {
            if !self.watching.watches(uri)
                && let Err(e) = self.watching.set(self.client(), uri, true).await
            {
                tracing::debug!("watching {uri} for a session taken up: {e:?}");
            }
        }
        for uri in self.watching.uris() {
            if !record.watching.contains(&uri) {
                let _ = self.watching.set(self.client(), &uri, false).await;
            }
        }
        more_tools
    }

    /// Writes all this session holds to shared state.
    async fn reshare(&self) {
        let Some((sessions, id)) = self.shared() else {
            return;
        };
        let init = self.peer.get().and_then(|p| p.peer_info()).map(|info| {
            rmcp::transport::streamable_http_server::session::SessionState::new((*info).clone())
        });
        let record = SessionRecord {
            tools: locked(&self.activated).clone(),
            log_level: locked(&self.log_level)
                .and_then(|l| serde_json::to_value(l).ok())
                .and_then(|v| v.as_str().map(str::to_string)),
            watching: self.watching.uris().into_iter().collect(),
        };
        if let Err(e) = sessions.restore_all(id, init.as_ref(), &record).await {
            tracing::debug!("session {id}: {e}");
        }
    }

    /// Tools loaded in this session, through any replica, before a list is made.
    pub(super) async fn refresh_tools(&self) {
        let Some((sessions, id)) = self.shared() else {
            return;
        };
        if !sessions.state().health().is_up() && sessions.state().health().ever_up() {
            return; // serving from memory until Redis answers
        }
        if let Ok(tools) = sessions.tools(id).await {
            locked(&self.activated).extend(tools);
        }
    }

    /// Records tools just loaded, before the call that loaded them returns.
    pub(super) async fn share_tools(&self, names: &[String]) {
        if let Some((sessions, id)) = self.shared()
            && let Err(e) = sessions.add_tools(id, names).await
        {
            tracing::debug!("session {id}: {e}");
        }
    }

    /// Records the log level asked for.
    pub(super) async fn share_log_level(&self, level: &str) {
        if let Some((sessions, id)) = self.shared()
            && let Err(e) = sessions.set_log_level(id, level).await
        {
            tracing::debug!("session {id}: {e}");
        }
    }

    /// Records a resource watched, or no longer.
    pub(super) async fn share_watching(&self, uri: &str, on: bool) {
        if let Some((sessions, id)) = self.shared()
            && let Err(e) = sessions.set_watching(id, uri, on).await
        {
            tracing::debug!("session {id}: {e}");
        }
    }

    /// Whether this session shares what it keeps with other replicas.
    pub(super) fn is_shared(&self) -> bool {
        self.shared().is_some()
    }

    /// Shares a result this session kept (its record), so that any replica
    /// serves it while it lasts; one bigger than `cap` is not shared.
    pub(super) async fn share_result(&self, id: &str, record: &str, ttl: std::time::Duration) {
        if let Some((sessions, session)) = self.shared()
            && let Err(e) = sessions.keep_result(session, id, record, ttl).await
        {
            tracing::warn!("session {session}: a kept result was not shared: {e}");
        }
    }

    /// The result this session kept as `id` at any replica, while it lasts.
    pub(super) async fn shared_result(&self, id: &str) -> Option<crate::kept::Whole> {
        let (sessions, session) = self.shared()?;
        let record = sessions.kept_result(session, id).await.ok()??;
        serde_json::from_str(&record).ok()
    }
}
