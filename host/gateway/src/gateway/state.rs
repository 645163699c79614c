//! What the gateway holds for all its sessions ([`Gateway`]) and what one
//! session holds ([`Session`]): the state alone. What they do is written in
//! the module of each concern (listing, calls, resources, …) as `impl`
//! blocks; the types of their fields come from modules beneath this one, so
//! that no concern and this state import each other.

use super::bootstrap::Bootstrap;
use super::counts::{Counted, SessionCounts};
use super::held::HeldCalls;
use super::lists::Listing;
use super::replicas::{Link, Replicas};
use super::scope::ClientScope;
use super::task_book::TaskBook;
use super::views::Views;
use super::watching::Watching;
use crate::config::Exposure;
use crate::downstream::SessionGuard;
use crate::host::{EntryRef, Host, HostError};
use crate::log_level::LogLevel;
use arc_swap::ArcSwapOption;
use rmcp::model::Tool;
use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};

/// What every session of one `mcpw serve` shares.
pub struct Gateway {
    pub(super) host: Arc<Host>,
    /// Connects servers whose tools are unknown (nothing cached), once, before
    /// the first answer that needs the catalog.
    pub(super) bootstrap: Arc<Bootstrap>,
    /// The exposure served: what sessions list, and where their calls go
    /// (dispatched in `exposures`).
    pub(super) exposure: Exposure,
    pub(super) budget: usize,
    /// Tokens the tool definitions may take for `auto` exposure to list them.
    pub(super) auto_budget: usize,
    /// The tool lists of the current snapshot, made once per snapshot.
    pub(super) listing: ArcSwapOption<Listing>,
    /// How to write a script, from the script guest (for the code tool).
    pub(super) code_usage: tokio::sync::OnceCell<String>,
    /// Sessions shared with other replicas, with shared state.
    pub(super) replicas: Option<Arc<Replicas>>,
    /// Open sessions per client, for the live page.
    pub(super) sessions_by_client: SessionCounts,
    /// Calls of clients of the stateless revision waiting for their answers.
    pub(super) held: Arc<HeldCalls>,
    /// Views of MCP Apps shown on the page, once a page is served.
    pub(super) views: OnceLock<Arc<Views>>,
    /// The sign-in callback's public address, once HTTP is served with one.
    pub(super) sign_in: OnceLock<String>,
    /// The tasks given to clients, and whose each is.
    pub(super) tasks: TaskBook,
}

/// The calls of clients of the stateless revision that wait for answers:
/// sealed with a key derived from the team's key where replicas share state
/// (the one the credentials' vault took), so that a retry may come to any.
fn held_calls(host: &Arc<Host>) -> Arc<HeldCalls> {
    let team = host.shared_state().cloned();
    let key = host.servers().held_requests_key();
    if let (Some(state), None) = (&team, key) {
        tracing::warn!(
            "shared state {} has no team key: a request of a 2026-07-28 client that waits for its answers resumes only at the replica that took it",
            state.location()
        );
    }
    HeldCalls::new(team, key)
}

impl Gateway {
    /// State for serving `host` with `exposure`.
    pub fn new(host: Arc<Host>, exposure: Exposure) -> Arc<Gateway> {
        let budget = host.config().settings.tool_search_budget;
        let auto_budget = host.config().settings.auto_exposure_budget;
        Arc::new(Gateway {
            held: held_calls(&host),
            tasks: TaskBook::new(host.shared_state().cloned()),
            replicas: Replicas::for_host(&host),
            bootstrap: Bootstrap::new(host.clone()),
            host,
            exposure,
            budget,
            auto_budget,
            listing: ArcSwapOption::empty(),
            code_usage: tokio::sync::OnceCell::new(),
            sessions_by_client: Default::default(),
            views: OnceLock::new(),
            sign_in: OnceLock::new(),
        })
    }

    /// As [`Gateway::new`], for answers from the cache alone: servers with
    /// nothing cached are left out instead of being connected.
    pub fn from_cache(host: Arc<Host>, exposure: Exposure) -> Arc<Gateway> {
        let shared = Gateway::new(host, exposure);
        shared.bootstrap.skip();
        shared
    }

    /// Waits until every server has been listed at least once (from the cache
    /// or by connecting); failures are recorded in the status, not returned.
    pub async fn ready(&self) {
        self.bootstrap.ready().await
    }

    /// Resolves a tool name for a call. A known name (or one whose server
    /// the naming guest can tell) resolves at once; only an unknown one waits
    /// until every server has been listed, then is looked up again.
    pub async fn resolve(&self, name: &str) -> Result<EntryRef, HostError> {
        let resolved = self.host.resolve(name).await;
        if matches!(resolved, Err(HostError::ToolNotFound { .. })) && !self.bootstrap.is_ready() {
            self.ready().await;
            return self.host.resolve(name).await;
        }
        resolved
    }

    /// Prepares what the first requests of this exposure need, so that they
    /// do not wait for it: the catalog snapshot and the tool list (direct
    /// exposure: with every schema parsed), then for tool-search the search
    /// index. Proxy exposure prepares nothing (it lists one fixed tool), which
    /// keeps an idle proxy small; its first search builds the index.
    pub async fn warm_up(&self, session: &Session) {
        self.exposed().warm_up(self, session).await
    }

    /// The host behind the gateway.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }
}

/// (snapshot version, tools loaded, the list).
pub(super) type SessionList = (u64, usize, Arc<[Tool]>);

/// One MCP session of the gateway: the gateway, and this session's own
/// state. A copy is the same session (rmcp and the tasks a session starts
/// each hold one).
#[derive(Clone)]
pub struct Session {
    pub(super) shared: Arc<Gateway>,
    pub(super) state: Arc<SessionState>,
}

/// What one session holds.
pub(super) struct SessionState {
    /// Tools this session loaded with ToolSearch: each agent its own list
    /// (shared with its replica link, which adds what other replicas load).
    pub(super) activated: Arc<Mutex<BTreeSet<String>>>,
    /// This session's tool-search list, for the snapshot and tools loaded it was made for.
    pub(super) listed: Mutex<Option<SessionList>>,
    /// What `auto` exposure decided for this session, once it has.
    pub(super) decided: OnceLock<Exposure>,
    /// Resources this session subscribed to.
    pub(super) watching: Arc<Watching>,
    /// The log level this session asked for; none: no server log messages.
    pub(super) log_level: Arc<Mutex<Option<LogLevel>>>,
    /// This session among the ones servers' requests may go to, once initialized.
    pub(super) registered: Mutex<Option<SessionGuard>>,
    /// The client of this session, from its `initialize` request (none: stdio,
    /// or not initialized yet).
    pub(super) client: Mutex<Option<ClientScope>>,
    /// What this session shares with other replicas.
    pub(super) link: Arc<Link>,
    /// Binary content this session's scripts got, read back by reference.
    pub(super) shelf: crate::kept::Shelf,
    /// Tools and servers the user allowed for this session.
    pub(super) allowed: Arc<crate::host::pipeline::Allowances>,
    /// This session, counted for the live page once initialized.
    pub(super) counted: Mutex<Option<Counted>>,
    /// Where a local session's kept results are written as files too.
    pub(super) files: Option<crate::results::ResultFiles>,
    /// This session was shown a preview of a result: `read_result` joins its
    /// tool list (until then, it costs no tokens).
    pub(super) results_kept: AtomicBool,
}

impl Session {
    /// A session over shared state.
    pub fn new(shared: Arc<Gateway>) -> Self {
        Session::with_files(shared, None)
    }

    /// A session that writes the results it keeps to files in `dir` too (a
    /// local session: its agent reads files).
    pub fn with_result_files(shared: Arc<Gateway>, dir: std::path::PathBuf) -> Self {
        Session::with_files(shared, Some(dir))
    }

    fn with_files(shared: Arc<Gateway>, dir: Option<std::path::PathBuf>) -> Self {
        let watching = Watching::new(shared.host.clone());
        let (activated, log_level) = (Arc::default(), Arc::default());
        let link = Link::new(
            shared.replicas.clone(),
            Arc::downgrade(&shared.bootstrap),
            Arc::clone(&activated),
            Arc::clone(&log_level),
            watching.clone(),
        );
        let shelf = shared.host.new_shelf();
        let files = dir.map(|dir| {
            let ttl = shelf.limits().ttl;
            crate::results::ResultFiles::new(dir, ttl, crate::results::FILES_CAP)
        });
        let state = SessionState {
            activated,
            listed: Mutex::default(),
            decided: OnceLock::new(),
            watching,
            log_level,
            registered: Mutex::default(),
            client: Mutex::default(),
            link,
            shelf,
            allowed: Arc::default(),
            counted: Mutex::default(),
            files,
            results_kept: AtomicBool::new(false),
        };
        Session {
            shared,
            state: Arc::new(state),
        }
    }
}
