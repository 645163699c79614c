//! Who a call is made for: the client (whose rate-limit buckets it draws
//! from, and whose name the guards and the audit line see), the servers it
//! reaches, its session when it has one, how the call came, and who
//! approves it (an [`Approver`]: a session's client through elicitation, the
//! person at the terminal, or nobody).

use crate::catalog::Entry;
use crate::upstream::origin::Reach;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// How a call reached mcpw, as the audit line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A tool a session's client sees (direct, loaded by ToolSearch, a task).
    Call,
    /// The proxy's `mcp` tool.
    Proxy,
    /// A script's `tools.<name>()` (code mode, or [`crate::host::Host::run_script`]).
    Script,
    /// A guest's `calls` import.
    Guest,
    /// The Rust API or the command line.
    Local,
    /// An app (an MCP App's view) calling its server's tool: through mcpw's
    /// own app host, or by the server's own name through a host that renders
    /// apps.
    App,
}

impl Via {
    /// The name in the audit line.
    pub fn name(self) -> &'static str {
        match self {
            Via::Call => "call",
            Via::Proxy => "proxy",
            Via::Script => "script",
            Via::Guest => "guest",
            Via::Local => "local",
            Via::App => "app",
        }
    }
}

/// The session a call is made in, for the calls it has one.
#[derive(Clone)]
pub struct CallerSession {
    /// Its id among the host's sessions.
    pub id: u64,
    /// What the user allowed for the rest of it.
    pub allowed: Arc<Allowances>,
}

/// Who a call is made for.
#[derive(Clone)]
pub struct Caller {
    /// The client: a token's name (empty on stdio and without tokens),
    /// `local`, or `guest:<role>`.
    pub client: Arc<str>,
    /// The servers it reaches (`None`: every one).
    pub reach: Reach,
    /// Its session; none for the Rust API, the command line and guests.
    pub session: Option<CallerSession>,
    /// How the call came.
    pub via: Via,
    /// Who is asked where a call needs approval.
    pub approver: Arc<dyn Approver>,
    /// What its token or groups say of its calls (`None`: nothing).
    pub policy: Option<Arc<super::ClientPolicy>>,
}

impl Caller {
    /// The Rust API and the command line: every server, no session, and
    /// `approver` (an [`Unattended`] one follows `approveWithoutClient`).
    pub fn local(approver: Arc<dyn Approver>) -> Caller {
        Caller {
            client: "local".into(),
            reach: None,
            session: None,
            via: Via::Local,
            approver,
            policy: None,
        }
    }

    /// A guest of `role` calling through its `calls` import: counted in a
    /// bucket of its own, and approved as `approveWithoutClient` says (a
    /// guest has nobody to ask).
    pub fn guest(role: &str) -> Caller {
        Caller {
            client: format!("guest:{role}").into(),
            reach: None,
            session: None,
            via: Via::Guest,
            approver: Arc::new(Unattended),
            policy: None,
        }
    }

    /// Whose login its requests go out with where a server takes each
    /// person's own: its principal's; nobody's for a guest's own call; the
    /// shared login for a client that signed in as nobody in particular.
    pub(crate) fn who(&self) -> crate::lifecycle::Who<'_> {
        use crate::lifecycle::Who;
        match (&self.policy, self.via) {
            (Some(p), _) => Who::Person(&p.owner, p.presented.as_ref().map(|t| &*t.0)),
            (None, Via::Guest) => Who::Nobody,
            (None, _) => Who::Shared,
        }
    }

    /// Whether it reaches `server`.
    pub fn reaches(&self, server: &str) -> bool {
        self.reach.as_ref().is_none_or(|s| s.contains(server))
    }

    /// The name its rate-limit buckets are kept under: its owner's, when
    /// its token or principal says (two principals of one name stay apart).
    pub(crate) fn bucket(&self) -> &str {
        self.policy.as_ref().map_or(&self.client, |p| &p.owner)
    }

    /// Its own rate limit for `server`'s `tool` (`""`: a read), and the
    /// setting that sets it.
    pub(crate) fn own_rate(
        &self,
        server: &str,
        tool: &str,
    ) -> Option<(String, crate::config::rate::Rate)> {
        self.policy.as_ref()?.rate_for(server, tool)
    }

    /// Its session's id (0: none).
    pub(crate) fn session_id(&self) -> u64 {
        self.session.as_ref().map_or(0, |s| s.id)
    }
}

/// Who is asked to approve a call.
pub trait Approver: Send + Sync {
    /// Why nobody can be asked here (a client without elicitation, no
    /// terminal); `None` when someone can.
    fn cannot_ask(&self) -> Option<String>;

    /// Asks about one call. An error is a failure to ask (the call does
    /// not run, the error told).
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Result<Answer, String>>;
}

/// What the user is asked about.
#[derive(Clone, Debug)]
pub struct Question {
    /// The tool's agent-facing name.
    pub name: String,
    /// Its server.
    pub server: String,
    /// The server's own name of the tool.
    pub tool: String,
    /// The arguments it would run with (a guard's rewrite, where one made it).
    pub arguments: Option<Map<String, Value>>,
    /// Why approval is asked, as the user reads it.
    pub why: String,
}

/// What the user said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Once,
    /// Run this tool's calls for the rest of the session.
    Tool,
    /// Run every tool of this server for the rest of the session.
    Server,
    /// Do not run it.
    Deny,
}

/// An approver where nobody can be asked: the call runs unasked only where
/// `settings.approveWithoutClient` allows it.
pub struct Unattended;

impl Approver for Unattended {
    fn cannot_ask(&self) -> Option<String> {
        Some("nobody can be asked here".into())
    }

    fn ask<'a>(&'a self, _: &'a Question) -> BoxFuture<'a, Result<Answer, String>> {
        Box::pin(async { Err("nobody can be asked here".to_string()) })
    }
}

/// What the user allowed for the rest of one session.
#[derive(Default)]
pub struct Allowances {
    tools: Mutex<HashSet<String>>,
    servers: Mutex<HashSet<String>>,
}

impl Allowances {
    pub(super) fn has(&self, entry: &Entry) -> bool {
        lock(&self.servers).contains(&entry.tool.server) || lock(&self.tools).contains(&entry.name)
    }

    pub(super) fn allow_tool(&self, name: &str) {
        lock(&self.tools).insert(name.to_string());
    }

    pub(super) fn allow_server(&self, server: &str) {
        lock(&self.servers).insert(server.to_string());
    }
}

fn lock(set: &Mutex<HashSet<String>>) -> std::sync::MutexGuard<'_, HashSet<String>> {
    set.lock().unwrap_or_else(|p| p.into_inner())
}
