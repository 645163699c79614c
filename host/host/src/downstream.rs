//! The clients a host serves, as its servers' own requests reach them
//! (`sampling/createMessage`, `elicitation/create`, `roots/list`): whoever
//! serves a client (the gateway's sessions, its held calls of stateless
//! clients) implements [`Downstream`], and registers a session with
//! [`Sessions::open`]; a call made for it carries its [`Origin`] in
//! [`CallOptions`](crate::host::CallOptions), and what its server asks while
//! serving that call goes back to that client.

use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{ClientCapabilities, ClientResult, RequestId, ServerRequest};
use serde_json::{Map, Value};
use std::sync::Arc;

use crate::upstream::origin::{self, Ask};

pub use origin::{Client, LocalElicitor, Origin, Reach, Session, SessionGuard, need_of};

/// A client a server's requests can be put to.
pub trait Downstream: Send + Sync + 'static {
    /// What the client declared (`sampling`, `elicitation`, `roots`,
    /// extensions), as its capabilities object; None before it declared.
    fn capabilities(&self) -> Option<Map<String, Value>>;

    /// Puts a server's `request` to the client, as part of the client's own
    /// request `belongs_to` when it has one, and waits for the answer.
    /// `cancelled` completes when the server withdraws its request: the
    /// client is told so, and the answer is an error.
    fn ask(
        &self,
        request: ServerRequest,
        belongs_to: Option<RequestId>,
        cancelled: BoxFuture<'static, ()>,
    ) -> BoxFuture<'static, Result<ClientResult, McpError>>;
}

/// A [`Downstream`] as the connections know clients.
struct Bridge(Arc<dyn Downstream>);

impl Ask for Bridge {
    fn capabilities(&self) -> Option<Map<String, Value>> {
        self.0.capabilities()
    }

    fn ask(
        &self,
        request: ServerRequest,
        belongs_to: Option<RequestId>,
        cancelled: BoxFuture<'static, ()>,
    ) -> BoxFuture<'static, Result<ClientResult, McpError>> {
        self.0.ask(request, belongs_to, cancelled)
    }
}

/// The client that `downstream` serves.
pub fn client(downstream: Arc<dyn Downstream>) -> Client {
    Client::new(Arc::new(Bridge(downstream)))
}

/// The sessions of a host's clients.
#[derive(Clone)]
pub struct Sessions {
    inner: Arc<origin::Sessions>,
}

impl Sessions {
    pub(crate) fn new(inner: Arc<origin::Sessions>) -> Self {
        Sessions { inner }
    }

    /// Registers an initialized session of `client`, which may see the
    /// servers `reach` names (None: every server), until the guard drops.
    pub fn open(&self, client: Client, reach: Reach) -> SessionGuard {
        self.inner.open(client, reach)
    }

    /// A new id for a caller that is no session (a call of a client of the
    /// stateless revision), unique among the sessions'.
    pub fn new_id(&self) -> u64 {
        self.inner.new_id()
    }

    /// Makes new connections wait for the first session, to offer their
    /// servers what its client declares (`serve` on stdio).
    pub fn connect_after_first(&self) {
        self.inner.connect_after_first()
    }

    /// A client of the stateless revision came: connecting need not wait.
    pub fn release(&self) {
        self.inner.release()
    }

    /// Notes what a client of the stateless revision declared with a
    /// request; true when that adds to what servers are offered.
    pub fn note_stateless(&self, capabilities: &ClientCapabilities) -> bool {
        self.inner.note_stateless(capabilities)
    }

    /// Sets who answers the elicitations no session can take.
    pub fn set_local_elicitor(&self, elicitor: Arc<dyn LocalElicitor>) {
        self.inner.set_local_elicitor(elicitor)
    }
}
