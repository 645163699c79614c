//! Where a server's own requests go (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`, `ping`): to the downstream session
//! whose call caused them.
//!
//! Over Streamable HTTP the request arrives on the stream of mcpw's call, which
//! names the call. Over stdio and legacy SSE nothing names it: the request goes
//! to the session of the calls in flight on that connection when they all come
//! from one session, and is refused when they come from several (it could
//! belong to any of them). A request outside any call goes to the only session
//! that may see the server when there is one, and is answered by mcpw
//! otherwise (no roots, no sampling, elicitation declined).

use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
#[allow(deprecated)] // roots: in every revision before 2026-07-28
use rmcp::model::ListRootsResult;
use rmcp::model::{
    ClientCapabilities, ClientResult, ElicitResult, ElicitationAction, RequestId, ServerRequest,
};
use rmcp::service::{InboundStreamOrigin, RequestContext, RoleClient};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A downstream session, as the upstream connections see it.
#[derive(Clone)]
pub struct Session {
    /// Unique in this process.
    pub id: u64,
    /// The client.
    pub client: Client,
}

/// A client that a server's requests can be put to: whoever serves the
/// client (a session of the gateway, a held call of a stateless client)
/// implements it. The connections know clients only through it.
pub trait Ask: Send + Sync {
    /// What the client declared (`sampling`, `elicitation`, `roots`, …), as
    /// its capabilities object; None before it declared anything.
    fn capabilities(&self) -> Option<Map<String, Value>>;
    /// Puts `request` to the client, as part of the client's request
    /// `belongs_to` when it has one, and waits for the answer; `cancelled`
    /// completing (the server cancelled its request) withdraws it.
    fn ask(
        &self,
        request: ServerRequest,
        belongs_to: Option<RequestId>,
        cancelled: BoxFuture<'static, ()>,
    ) -> BoxFuture<'static, Result<ClientResult, McpError>>;
}

/// Who a server's request is put to.
#[derive(Clone)]
pub struct Client(Arc<dyn Ask>);

impl Client {
    /// The client that `ask` serves.
    pub fn new(ask: Arc<dyn Ask>) -> Self {
        Client(ask)
    }

    /// Whether the client declared the capability `key` (`sampling`, …).
    pub fn declares(&self, key: &str) -> bool {
        self.0.capabilities().is_some_and(|c| c.contains_key(key))
    }

    /// Puts a server's request to the client and waits for the answer (see
    /// [`Ask::ask`]).
    pub async fn ask(
        &self,
        request: ServerRequest,
        belongs_to: Option<RequestId>,
        cancelled: BoxFuture<'static, ()>,
    ) -> Result<ClientResult, McpError> {
        self.0.ask(request, belongs_to, cancelled).await
    }
}

/// The downstream side of an upstream call.
#[derive(Clone)]
pub struct Origin {
    /// The session that made the call.
    pub session: Session,
    /// The client's request that caused it: a Streamable HTTP client gets the
    /// server's requests on that request's stream.
    pub request: RequestId,
}

impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Origin")
            .field("session", &self.session.id)
            .field("request", &self.request)
            .finish()
    }
}

/// Answers a server's `elicitation/create` when no session can: the person at
/// the terminal of `mcpw call`. Blocking.
pub trait LocalElicitor: Send + Sync {
    /// Takes the request's params (`message`, `requestedSchema`, or `mode:
    /// "url"` and `url`) from `server`; returns an MCP `ElicitResult` as JSON.
    fn elicit(&self, server: &str, params: &Value) -> Value;
}

/// The servers a session's client may see: `None` for every server.
pub type Reach = Option<Arc<BTreeSet<String>>>;

/// An open session: its client, and the servers it may see.
struct Live {
    client: Client,
    reach: Reach,
}

impl Live {
    fn sees(&self, server: &str) -> bool {
        self.reach.as_ref().is_none_or(|r| r.contains(server))
    }
}

/// The sessions mcpw serves.
#[derive(Default)]
pub struct Sessions {
    /// Who answers elicitations no session can take.
    local: Mutex<Option<Arc<dyn LocalElicitor>>>,
    live: Mutex<BTreeMap<u64, Live>>,
    next: AtomicU64,
    opened: Notify,
    /// Connections wait for a session (see [`Sessions::connect_after_first`]).
    wait_for_one: std::sync::atomic::AtomicBool,
    /// A client of the stateless revision came: it opens no session to wait for.
    released: std::sync::atomic::AtomicBool,
    /// What clients of the stateless revision declared with their requests
    /// (sampling, elicitation, roots): they are asked through mcpw as
    /// sessions' clients are, so servers are offered it too.
    stateless: Mutex<Map<String, Value>>,
}

/// What mcpw may offer a server on behalf of its clients.
pub const OFFERED: [&str; 3] = ["sampling", "elicitation", "roots"];

/// Adds to `offered` what of [`OFFERED`] a client's capabilities `caps`
/// declare, and MCP Apps (servers register app tools only for a host);
/// true when that added anything.
fn offer(offered: &mut Map<String, Value>, caps: &Map<String, Value>) -> bool {
    let mut added = false;
    for key in OFFERED {
        if let Some(v) = caps.get(key)
            && !offered.contains_key(key)
        {
            offered.insert(key.to_string(), v.clone());
            added = true;
        }
    }
    let apps = caps
        .get("extensions")
        .and_then(|e| e.get(crate::apps::EXTENSION));
    if let Some(apps) = apps {
        let extensions = offered
            .entry("extensions")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(extensions) = extensions
            && !extensions.contains_key(crate::apps::EXTENSION)
        {
            extensions.insert(crate::apps::EXTENSION.to_string(), apps.clone());
            added = true;
        }
    }
    added
}

/// A registered session; dropping it ends the registration.
pub struct SessionGuard {
    sessions: Arc<Sessions>,
    session: Session,
}

impl SessionGuard {
    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        lock(&self.sessions.live).remove(&self.session.id);
    }
}

impl Sessions {
    /// Registers an initialized session whose client may see the servers
    /// `reach` names (`None`: every server).
    pub fn open(self: &Arc<Self>, client: Client, reach: Reach) -> SessionGuard {
        let id = self.new_id();
        let live = Live {
            client: client.clone(),
            reach,
        };
        lock(&self.live).insert(id, live);
        self.opened.notify_waiters();
        SessionGuard {
            sessions: self.clone(),
            session: Session { id, client },
        }
    }

    /// Makes every new upstream connection wait until a session is open, so
    /// that it can offer its server what that session's client declares
    /// (`serve` on stdio: its one session opens right after start).
    pub fn connect_after_first(&self) {
        self.wait_for_one.store(true, Ordering::Relaxed);
    }

    /// A client of the stateless revision (`server/discover`) is here: it
    /// opens no session and servers cannot ask it anything, so connecting
    /// need not wait.
    pub fn release(&self) {
        self.released.store(true, Ordering::Relaxed);
        self.opened.notify_waiters();
    }

    /// Notes what a client of the stateless revision declared with a
    /// request; true when that adds to what servers are offered.
    pub fn note_stateless(&self, capabilities: &ClientCapabilities) -> bool {
        let Ok(Value::Object(caps)) = serde_json::to_value(capabilities) else {
            return false;
        };
        offer(&mut lock(&self.stateless), &caps)
    }

    /// Returns once connecting may start.
    pub async fn ready_to_connect(&self) {
        if !self.wait_for_one.load(Ordering::Relaxed) {
            return;
        }
        loop {
            let opened = self.opened.notified();
            if !lock(&self.live).is_empty() || self.released.load(Ordering::Relaxed) {
                return;
            }
            opened.await;
        }
    }

    /// A new id for a caller that is no session (a call of a client of the
    /// stateless revision), unique among the sessions'.
    pub fn new_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Sets who answers elicitations that no session can take.
    pub fn set_local_elicitor(&self, elicitor: Arc<dyn LocalElicitor>) {
        *lock(&self.local) = Some(elicitor);
    }

    /// Who answers elicitations that no session can take, if anyone.
    fn local_elicitor(&self) -> Option<Arc<dyn LocalElicitor>> {
        lock(&self.local).clone()
    }

    /// The only session that may see `server`, if there is exactly one.
    fn only(&self, server: &str) -> Option<Session> {
        let live = lock(&self.live);
        let mut seeing = live.iter().filter(|(_, l)| l.sees(server));
        match (seeing.next(), seeing.next()) {
            (Some((&id, l)), None) => Some(Session {
                id,
                client: l.client.clone(),
            }),
            _ => None,
        }
    }

    /// What a new upstream connection to `server` may offer it: sampling,
    /// elicitation and roots as far as the client of some session that may
    /// see the server, or a client of the stateless revision, declares them
    /// (elicitation also when someone answers it locally).
    pub fn capabilities(&self, server: &str) -> ClientCapabilities {
        let mut merged = lock(&self.stateless).clone();
        for live in lock(&self.live).values().filter(|l| l.sees(server)) {
            if let Some(caps) = live.client.0.capabilities() {
                offer(&mut merged, &caps);
            }
        }
        if lock(&self.local).is_some() {
            merged
                .entry("elicitation")
                .or_insert_with(|| serde_json::json!({"form": {}, "url": {}}));
        }
        serde_json::from_value(Value::Object(merged)).unwrap_or_default()
    }
}

/// mcpw's calls in flight on one connection, by the id of mcpw's request.
#[derive(Clone, Default)]
pub struct InFlight {
    calls: Arc<Mutex<HashMap<RequestId, Origin>>>,
    /// Calls being sent, whose request id is not known yet: a stdio server
    /// may ask before [`Sending::sent`] registers the call, and must not be
    /// taken for the only caller's then.
    sending: Arc<Mutex<HashMap<u64, Origin>>>,
    next: Arc<AtomicU64>,
    added: Arc<Notify>,
}

/// A call about to be sent, counted in [`InFlight`] until dropped or
/// [`sent`](Sending::sent).
pub struct Sending {
    in_flight: InFlight,
    key: u64,
}

impl Sending {
    /// Registers the sent call under its request `id`.
    pub fn sent(self, id: RequestId) -> CallGuard {
        let origin = lock(&self.in_flight.sending).get(&self.key).cloned();
        let guard = CallGuard {
            in_flight: self.in_flight.clone(),
            id: id.clone(),
        };
        if let Some(origin) = origin {
            lock(&self.in_flight.calls).insert(id, origin);
        }
        // Dropping `self` now takes the call out of `sending`: it is in
        // `calls` first, so it is never out of both.
        drop(self);
        guard
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        lock(&self.in_flight.sending).remove(&self.key);
        // Sent or given up: a question waiting for it looks again.
        self.in_flight.added.notify_waiters();
    }
}

/// A call registered in [`InFlight`] until dropped.
pub struct CallGuard {
    in_flight: InFlight,
    id: RequestId,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        lock(&self.in_flight.calls).remove(&self.id);
    }
}

/// Whose a server's request is.
enum Owner {
    Call(Origin),
    Outside,
    Ambiguous,
}

impl InFlight {
    /// Counts a call for `origin` as in flight before it is sent.
    pub fn sending(&self, origin: Origin) -> Sending {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.sending).insert(key, origin);
        Sending {
            in_flight: self.clone(),
            key,
        }
    }

    /// Whose a server's request is that came on the stream of mcpw's request
    /// `id`. The server may ask before that call is registered under `id`
    /// (right after rmcp sends it, however long a busy machine takes to get
    /// there): while a call being sent when the question came may be it, the
    /// question waits, until that call is registered or given up.
    async fn sent_as(&self, id: &RequestId) -> Owner {
        let maybe: Vec<u64> = lock(&self.sending).keys().copied().collect();
        loop {
            let added = self.added.notified();
            // `sending` first: a call leaves it only once it is in `calls`.
            let waits = {
                let sending = lock(&self.sending);
                maybe.iter().any(|k| sending.contains_key(k))
            };
            if let Some(o) = lock(&self.calls).get(id) {
                return Owner::Call(o.clone());
            }
            if !waits {
                return Owner::Outside;
            }
            added.await;
        }
    }

    /// Whose a server's request is, by the stream it came on, if any.
    async fn owner(&self, came_on: Option<&InboundStreamOrigin>) -> Owner {
        match came_on {
            Some(InboundStreamOrigin::OutboundRequest(id)) => self.sent_as(id).await,
            Some(InboundStreamOrigin::Unassociated) => Owner::Outside,
            None => {
                let (calls, sending) = (lock(&self.calls), lock(&self.sending));
                let mut origins = calls.values().chain(sending.values());
                match origins.next() {
                    None => Owner::Outside,
                    Some(first) if origins.all(|o| o.session.id == first.session.id) => {
                        Owner::Call(first.clone())
                    }
                    Some(_) => Owner::Ambiguous,
                }
            }
        }
    }
}

/// The client `server`'s request goes to, if any, and the client's request
/// it belongs to.
pub(super) async fn target(
    server: &str,
    in_flight: &InFlight,
    sessions: &Sessions,
    context: &RequestContext<RoleClient>,
) -> Option<(Client, Option<RequestId>)> {
    match in_flight
        .owner(context.extensions.get::<InboundStreamOrigin>())
        .await
    {
        // A call's session may see the server: the call was made.
        Owner::Call(o) => Some((o.session.client, Some(o.request))),
        Owner::Outside => sessions.only(server).map(|s| (s.client, None)),
        Owner::Ambiguous => None,
    }
}

/// What a call of `tool` (none: any) for `client` needs of a connection:
/// one on which the server can ask, when the client takes sampling,
/// elicitation or roots (no client: a caller without a session).
pub fn need_of<'a>(client: Option<&Client>, tool: Option<&'a str>) -> super::Need<'a> {
    let takes = |c: &Client| OFFERED.iter().any(|k| c.declares(k));
    match client {
        Some(c) if takes(c) => super::Need::ServerRequests(tool),
        _ => super::Need::Any,
    }
}

/// Answers `server`'s request: the `target` client answers when there is one
/// and it declared the capability the request needs; otherwise mcpw does: a
/// ping is answered, roots are none, an elicitation goes to the local
/// elicitor or is declined, and sampling is refused.
#[allow(deprecated)] // roots and sampling: in every revision before 2026-07-28
pub(super) async fn answer(
    server: &str,
    sessions: &Sessions,
    target: Option<(Client, Option<RequestId>)>,
    request: ServerRequest,
    cancelled: BoxFuture<'static, ()>,
) -> Result<ClientResult, McpError> {
    let capability = match &request {
        ServerRequest::CreateMessageRequest(_) => Some("sampling"),
        ServerRequest::ElicitRequest(_) => Some("elicitation"),
        ServerRequest::ListRootsRequest(_) => Some("roots"),
        _ => None,
    };
    let target = target.filter(|(client, _)| capability.is_none_or(|c| client.declares(c)));
    if let Some((client, belongs_to)) = target {
        return client.ask(request, belongs_to, cancelled).await;
    }
    match request {
        ServerRequest::ElicitRequest(r) => match sessions.local_elicitor() {
            // No session can answer: whoever runs mcpw here may (`mcpw call`).
            Some(elicitor) => {
                let params = serde_json::to_value(&r.params).unwrap_or_default();
                let server = server.to_string();
                let answer = tokio::task::spawn_blocking(move || elicitor.elicit(&server, &params))
                    .await
                    .unwrap_or_default();
                let answer = serde_json::from_value(answer)
                    .unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Decline));
                Ok(ClientResult::ElicitResult(answer))
            }
            None => Ok(ClientResult::ElicitResult(ElicitResult::new(
                ElicitationAction::Decline,
            ))),
        },
        ServerRequest::ListRootsRequest(_) => {
            Ok(ClientResult::ListRootsResult(ListRootsResult::default()))
        }
        ServerRequest::CreateMessageRequest(_) => Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!(
                "server \"{server}\" asked for sampling, and no client that takes it can be told which session the request belongs to"
            ),
            None,
        )),
        // Answered by mcpw when no client can be asked: it is alive.
        ServerRequest::PingRequest(_) => Ok(ClientResult::empty(())),
        ServerRequest::CustomRequest(r) => Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("mcpw does not forward \"{}\"", r.method),
            None,
        )),
        other => Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("mcpw does not forward {other:?}"),
            None,
        )),
    }
}

/// Answers the requests a server puts in an `input_required` result or task,
/// on behalf of the session `origin` (none: mcpw answers, see [`answer`]).
/// Returns the answers by the server's keys.
pub(super) async fn answer_inputs(
    server: &str,
    sessions: &Sessions,
    origin: Option<&Origin>,
    requests: rmcp::model::InputRequests,
) -> Result<rmcp::model::InputResponses, McpError> {
    use rmcp::model::InputRequest;
    let answers = requests.into_iter().map(|(key, request)| async move {
        let request = match request {
            InputRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
            InputRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
            InputRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
            other => {
                return Err(McpError::internal_error(
                    format!("server \"{server}\" asked for input mcpw does not know: {other:?}"),
                    None,
                ));
            }
        };
        let target = origin.map(|o| (o.session.client.clone(), Some(o.request.clone())));
        let pending = Box::pin(std::future::pending());
        let result = answer(server, sessions, target, request, pending).await?;
        let value = serde_json::to_value(&result)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok((key, value))
    });
    Ok(futures::future::try_join_all(answers)
        .await?
        .into_iter()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that declares sampling, or nothing, and is never asked.
    struct Declared(bool);

    impl Ask for Declared {
        fn capabilities(&self) -> Option<Map<String, Value>> {
            let caps = match self.0 {
                true => serde_json::json!({"sampling": {}}),
                false => serde_json::json!({}),
            };
            caps.as_object().cloned()
        }

        fn ask(
            &self,
            _: ServerRequest,
            _: Option<RequestId>,
            _: BoxFuture<'static, ()>,
        ) -> BoxFuture<'static, Result<ClientResult, McpError>> {
            unreachable!("nothing is asked here")
        }
    }

    fn client(sampling: bool) -> Client {
        Client::new(Arc::new(Declared(sampling)))
    }

    #[tokio::test]
    async fn requests_outside_calls_and_capabilities_follow_what_sessions_see() {
        let sessions = Arc::new(Sessions::default());
        let git = Some(Arc::new(BTreeSet::from(["git".to_string()])));
        let _g1 = sessions.open(client(true), git);
        // Only the limited session's client takes sampling: only git is offered it.
        assert!(sessions.capabilities("git").sampling.is_some());
        assert!(sessions.capabilities("time").sampling.is_none());
        // Outside a call, a server's request goes to the one session that sees it.
        assert!(sessions.only("git").is_some());
        assert!(sessions.only("time").is_none(), "nobody sees time yet");
        let g2 = sessions.open(client(false), None);
        let time = sessions.only("time").unwrap();
        assert_eq!(time.id, g2.session().id);
        assert!(sessions.only("git").is_none(), "two sessions see git");
        drop(g2);
        assert!(sessions.only("time").is_none());
    }

    #[tokio::test]
    async fn a_call_being_sent_makes_an_unassociated_request_ambiguous() {
        let sessions = Arc::new(Sessions::default());
        let (ga, gb) = (
            sessions.open(client(false), None),
            sessions.open(client(false), None),
        );
        let origin = |g: &SessionGuard, n: i64| Origin {
            session: g.session().clone(),
            request: RequestId::Number(n),
        };
        let in_flight = InFlight::default();
        let whose = |o: Owner| match o {
            Owner::Call(o) => Some(o.session.id),
            Owner::Outside => None,
            Owner::Ambiguous => Some(0),
        };
        let _b_call = in_flight.sending(origin(&gb, 1)).sent(RequestId::Number(7));
        assert_eq!(whose(in_flight.owner(None).await), Some(gb.session().id));
        // A's call is on its way; the server may ask about it before it is
        // registered under its id.
        let a_sending = in_flight.sending(origin(&ga, 2));
        assert_eq!(whose(in_flight.owner(None).await), Some(0), "ambiguous");
        drop(_b_call);
        assert_eq!(whose(in_flight.owner(None).await), Some(ga.session().id));
        let _a_call = a_sending.sent(RequestId::Number(8));
        let on_a = InboundStreamOrigin::OutboundRequest(RequestId::Number(8));
        assert_eq!(
            whose(in_flight.owner(Some(&on_a)).await),
            Some(ga.session().id)
        );
    }

    /// A server's question on the stream of a call not registered yet waits
    /// for that call however long a busy machine takes to register it, and
    /// only while a call sent before it came may be it.
    #[tokio::test(start_paused = true)]
    async fn a_question_waits_for_its_call_for_as_long_as_the_call_is_being_sent() {
        let sessions = Arc::new(Sessions::default());
        let (ga, gb) = (
            sessions.open(client(true), None),
            sessions.open(client(true), None),
        );
        let in_flight = InFlight::default();
        let asked = |id: i64| {
            let in_flight = in_flight.clone();
            tokio::spawn(async move {
                let on = InboundStreamOrigin::OutboundRequest(RequestId::Number(id));
                match in_flight.owner(Some(&on)).await {
                    Owner::Call(o) => Some(o.session.id),
                    Owner::Outside | Owner::Ambiguous => None,
                }
            })
        };
        let a_sending = in_flight.sending(Origin {
            session: ga.session().clone(),
            request: RequestId::Number(1),
        });
        let question = asked(8);
        tokio::time::sleep(std::time::Duration::from_secs(600)).await;
        assert!(!question.is_finished(), "still waiting for its call");
        let _a_call = a_sending.sent(RequestId::Number(8));
        assert_eq!(question.await.unwrap(), Some(ga.session().id));
        // A call given up (its sending failed) is no longer waited for; nor
        // is anything when no call is being sent.
        let b_sending = in_flight.sending(Origin {
            session: gb.session().clone(),
            request: RequestId::Number(2),
        });
        let question = asked(9);
        tokio::task::yield_now().await;
        assert!(!question.is_finished());
        drop(b_sending);
        assert_eq!(question.await.unwrap(), None);
        let start = tokio::time::Instant::now();
        assert_eq!(asked(10).await.unwrap(), None);
        assert_eq!(tokio::time::Instant::now(), start, "answered at once");
    }
}
