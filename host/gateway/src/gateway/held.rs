//! Questions to a client of the stateless revision (2026-07-28) during its
//! tool call. Such a client takes no requests: what a server asks while
//! serving the call (`sampling/createMessage`, `elicitation/create`,
//! `roots/list`, or an `inputRequired` of its own) and what mcpw asks
//! (approval) reach it as the call's `inputRequired` answer. The call goes on
//! in the background meanwhile; the `requestState` names it, sealed
//! (HMAC-SHA256, bound to the client and the tool, valid while the call may
//! wait), and the client's retry with its answers resumes it. A code-mode
//! script whose inner call is asked waits the same way, with its call.
//!
//! The call waits in this process: a retry that reaches another replica is
//! told to call again.

mod team;

use crate::downstream::{Client, Downstream};
use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    RequestStateCodec, SealOptions, ServerRequest, ServerResult,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;

/// How long a call waits for its client's answers; the sealed state is
/// good for as long.
const ANSWER_WITHIN: Duration = Duration::from_secs(600);

type Answer = Result<ClientResult, McpError>;
type Run = JoinHandle<Result<ServerResult, McpError>>;

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The calls that wait for their clients' answers.
pub(super) struct HeldCalls {
    codec: RequestStateCodec,
    waiting: Mutex<HashMap<u64, Arc<Held>>>,
    next: AtomicU64,
    /// This process among the replicas: a sealed state names the replica
    /// its call waits at.
    replica: u64,
    /// The state replicas share, when they do: a retry that reaches another
    /// replica is passed on to the one whose call waits for it.
    team: Option<Arc<crate::team_state::SharedState>>,
}

impl HeldCalls {
    /// Calls sealed with a key of this process's own, or with the team's
    /// (`key`, derived from the team's secret) where replicas share `team`,
    /// so that each opens what another sealed.
    pub(super) fn new(
        team: Option<Arc<crate::team_state::SharedState>>,
        key: Option<[u8; 32]>,
    ) -> Arc<HeldCalls> {
        use chacha20poly1305::aead::rand_core::RngCore;
        let shared = key.is_some();
        let key = key.unwrap_or_else(|| {
            let mut own = [0u8; 32];
            chacha20poly1305::aead::OsRng.fill_bytes(&mut own);
            own
        });
        let calls = Arc::new(HeldCalls {
            codec: RequestStateCodec::try_new(key.to_vec()).expect("a 32-byte key"),
            waiting: Mutex::default(),
            next: AtomicU64::new(1),
            replica: chacha20poly1305::aead::OsRng.next_u64(),
            team: team.filter(|_| shared),
        });
        calls.listen();
        calls
    }
}

/// What the sealed state is bound to: a state is good only for the same
/// client's retry of the same request.
fn bound_to(client: &str, tool: &str) -> Vec<u8> {
    format!("{client}\n{tool}").into_bytes()
}

/// One call and the questions it asked.
pub(crate) struct Held {
    /// What the client declared with its call.
    capabilities: Value,
    /// Asked, not yet handed to the client.
    asked: Mutex<Vec<(InputRequest, oneshot::Sender<Answer>)>>,
    /// Handed to the client under these keys, waiting for its answers.
    out: Mutex<HashMap<String, (InputRequest, oneshot::Sender<Answer>)>>,
    news: Notify,
    keys: AtomicU64,
    run: Mutex<Option<Run>>,
}

impl Downstream for Held {
    fn capabilities(&self) -> Option<serde_json::Map<String, Value>> {
        self.capabilities.as_object().cloned()
    }

    /// Asked within the call: the question waits to be handed back with
    /// the call's `inputRequired` answer (the call it belongs to is this
    /// one).
    fn ask(
        &self,
        request: ServerRequest,
        _: Option<rmcp::model::RequestId>,
        cancelled: BoxFuture<'static, ()>,
    ) -> BoxFuture<'static, Answer> {
        let answer = self.put(request);
        Box::pin(async move {
            tokio::select! {
                answer = answer => answer,
                _ = cancelled => Err(McpError::internal_error("cancelled by the server", None)),
            }
        })
    }
}

impl Held {
    /// Puts `request` among the questions for the client's next answer.
    fn put(&self, request: ServerRequest) -> BoxFuture<'static, Answer> {
        let input = match request {
            ServerRequest::CreateMessageRequest(r) => InputRequest::CreateMessage(r),
            ServerRequest::ElicitRequest(r) => InputRequest::Elicitation(r),
            ServerRequest::ListRootsRequest(r) => InputRequest::ListRoots(r),
            other => {
                let why = format!("a client of the stateless revision cannot be asked {other:?}");
                return Box::pin(std::future::ready(Err(McpError::internal_error(why, None))));
            }
        };
        let (tx, rx) = oneshot::channel();
        locked(&self.asked).push((input, tx));
        self.news.notify_one();
        Box::pin(async move {
            rx.await.unwrap_or_else(|_| {
                Err(McpError::internal_error(
                    "the client did not answer in time",
                    None,
                ))
            })
        })
    }
}

/// Where a held call stands after it ran on.
enum Step {
    Done(Box<Result<ServerResult, McpError>>),
    Asks(InputRequests),
}

impl Held {
    /// A call whose client declared `capabilities`, not started yet.
    fn new(capabilities: Value) -> Held {
        Held {
            capabilities,
            asked: Mutex::default(),
            out: Mutex::default(),
            news: Notify::new(),
            keys: AtomicU64::new(1),
            run: Mutex::default(),
        }
    }

    /// Runs the call on until it ends or asks something.
    async fn step(&self, run: &mut Run) -> Step {
        loop {
            let news = self.news.notified();
            let asked: Vec<_> = locked(&self.asked).drain(..).collect();
            if !asked.is_empty() {
                return Step::Asks(self.hand_out(asked));
            }
            tokio::select! {
                done = &mut *run => {
                    let done = done.unwrap_or_else(|e| Err(McpError::internal_error(e.to_string(), None)));
                    return Step::Done(Box::new(done));
                }
                () = news => {}
            }
        }
    }

    fn hand_out(&self, asked: Vec<(InputRequest, oneshot::Sender<Answer>)>) -> InputRequests {
        let mut out = locked(&self.out);
        asked
            .into_iter()
            .map(|(request, tx)| {
                let key = format!("mcpw-{}", self.keys.fetch_add(1, Ordering::Relaxed));
                out.insert(key.clone(), (request.clone(), tx));
                (key, request)
            })
            .collect()
    }

    /// Hands the client's answers to the questions waiting for them; a
    /// question left unanswered is refused.
    fn answer(&self, mut answers: InputResponses) {
        for (key, (request, tx)) in locked(&self.out).drain() {
            let answer = match answers.remove(&key) {
                Some(value) => parse(&request, value),
                None => Err(McpError::invalid_params(
                    format!("the client's retry carried no answer to \"{key}\""),
                    None,
                )),
            };
            let _ = tx.send(answer);
        }
    }
}

/// The client's answer to `request`, as the result type it asked for.
#[allow(deprecated)] // sampling and roots: the answers a server of either era takes
fn parse(request: &InputRequest, value: Value) -> Answer {
    let bad = |e: serde_json::Error| McpError::invalid_params(format!("an answer: {e}"), None);
    Ok(match request {
        InputRequest::CreateMessage(_) => {
            ClientResult::CreateMessageResult(serde_json::from_value(value).map_err(bad)?)
        }
        InputRequest::Elicitation(_) => {
            ClientResult::ElicitResult(serde_json::from_value(value).map_err(bad)?)
        }
        InputRequest::ListRoots(_) => {
            ClientResult::ListRootsResult(serde_json::from_value(value).map_err(bad)?)
        }
        other => {
            let why = format!("an answer to {other:?}, which mcpw does not ask");
            return Err(McpError::invalid_params(why, None));
        }
    })
}

/// The held call a request's context is for: the client to ask, and the
/// id it has among the sessions.
#[derive(Clone)]
pub(super) struct HeldClient {
    pub(super) id: u64,
    held: Arc<Held>,
}

impl HeldClient {
    pub(super) fn client(&self) -> Client {
        crate::downstream::client(self.held.clone())
    }
}

impl HeldCalls {
    /// A request of a client of the stateless revision, held while what it
    /// is asked goes back as `inputRequired`: started by `start` in a task of
    /// its own (`id`: its number among the sessions servers may ask), or
    /// resumed by a retry's `(state, answers)`. `bound`: the client and the
    /// request the sealed state is bound to.
    pub(super) async fn hold<F, Fut>(
        self: &Arc<Self>,
        (client, name, kind): (&str, &str, Kind),
        (state, answers): (Option<String>, Option<InputResponses>),
        mut context: RequestContext<RoleServer>,
        id: impl FnOnce() -> u64,
        start: F,
    ) -> Result<ServerResult, McpError>
    where
        F: FnOnce(RequestContext<RoleServer>) -> Fut,
        Fut: Future<Output = Result<ServerResult, McpError>> + Send + 'static,
    {
        let bound = bound_to(client, &format!("{}:{name}", kind.method()));
        let ct = context.ct.clone();
        if let Some(state) = state {
            let (replica, id) = self.open(&state, &bound)?;
            let answers = answers.unwrap_or_default();
            if replica != self.replica {
                return self.resume_at(replica, id, answers, &bound, kind).await;
            }
            return self.resume(id, answers, &bound, ct.cancelled()).await;
        }
        let capabilities = context
            .client_capabilities()
            .and_then(|c| serde_json::to_value(c).ok())
            .unwrap_or_default();
        let held = Arc::new(Held::new(capabilities));
        let held_client = HeldClient {
            id: id(),
            held: held.clone(),
        };
        context.extensions.insert(held_client);
        // The request outlives this one, which ends with the question: it
        // is cancelled with the retry that waits for it.
        context.ct = Default::default();
        let run = tokio::spawn(start(context));
        *locked(&held.run) = Some(run);
        self.run_on(held, &bound, ct.cancelled()).await
    }
}

/// What kind of request is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Kind {
    Tool,
    Prompt,
    Read,
}

impl Kind {
    fn method(self) -> &'static str {
        match self {
            Kind::Tool => "tools/call",
            Kind::Prompt => "prompts/get",
            Kind::Read => "resources/read",
        }
    }
}

/// An answer of a kind the request does not have.
pub(super) fn unexpected(answer: &ServerResult) -> McpError {
    McpError::internal_error(format!("unexpected answer: {answer:?}"), None)
}

impl HeldCalls {
    /// Hands the client's answers to the call `id` waiting here, and runs it on.
    pub(super) async fn resume(
        self: &Arc<Self>,
        id: u64,
        answers: InputResponses,
        bound: &[u8],
        cancelled: impl Future<Output = ()>,
    ) -> Result<ServerResult, McpError> {
        let held = locked(&self.waiting).remove(&id).ok_or_else(gone)?;
        held.answer(answers);
        self.run_on(held, bound, cancelled).await
    }

    /// Runs `held` on until it ends, or until it asks again: then it waits,
    /// and the questions go to the client with a new sealed state.
    async fn run_on(
        self: &Arc<Self>,
        held: Arc<Held>,
        bound: &[u8],
        cancelled: impl Future<Output = ()>,
    ) -> Result<ServerResult, McpError> {
        let Some(mut run) = locked(&held.run).take() else {
            return Err(gone());
        };
        let step = tokio::select! {
            step = held.step(&mut run) => step,
            () = cancelled => {
                run.abort();
                return Err(McpError::internal_error("cancelled by the client", None));
            }
        };
        match step {
            Step::Done(done) => *done,
            Step::Asks(requests) => {
                *locked(&held.run) = Some(run);
                // A new id each round: a retry answers one round only.
                let id = self.next.fetch_add(1, Ordering::Relaxed);
                self.wait(id, held);
                let state = self.seal(id, bound);
                let asked = InputRequiredResult::new(Some(requests), Some(state));
                Ok(ServerResult::InputRequiredResult(asked))
            }
        }
    }
}

/// Whether a request comes from a client of the stateless revision.
pub(super) fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| !crate::servers::is_legacy_revision(v.as_str()))
}

fn gone() -> McpError {
    McpError::invalid_params(
        "the call this answers is no longer waiting (it ended, waited too long, or waits at another mcpw): call the tool again",
        None,
    )
}

impl HeldCalls {
    /// The state naming the call `id` waiting at this replica.
    fn seal(&self, id: u64, bound: &[u8]) -> String {
        let options = SealOptions::new().associated_data(bound).ttl(ANSWER_WITHIN);
        let mut payload = self.replica.to_be_bytes().to_vec();
        payload.extend(id.to_be_bytes());
        self.codec.seal_with(&payload, &options)
    }

    /// The replica and call a state names.
    fn open(&self, state: &str, bound: &[u8]) -> Result<(u64, u64), McpError> {
        let opened = self.codec.open_with(state, bound).map_err(|_| gone())?;
        let bytes: [u8; 16] = opened.as_slice().try_into().map_err(|_| gone())?;
        let (replica, id) = bytes.split_at(8);
        let number = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap_or_default());
        Ok((number(replica), number(id)))
    }

    /// Keeps `held` waiting for the client's retry, for [`ANSWER_WITHIN`]
    /// at most: then its call is abandoned.
    fn wait(self: &Arc<Self>, id: u64, held: Arc<Held>) {
        locked(&self.waiting).insert(id, held.clone());
        let calls = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(ANSWER_WITHIN).await;
            let Some(calls) = calls.upgrade() else { return };
            let mut waiting = locked(&calls.waiting);
            if waiting.get(&id).is_some_and(|h| Arc::ptr_eq(h, &held)) {
                waiting.remove(&id);
                if let Some(run) = locked(&held.run).take() {
                    run.abort();
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_opens_only_for_the_client_and_tool_it_was_sealed_for() {
        let calls = HeldCalls::new(None, None);
        let state = calls.seal(7, &bound_to("alice", "git__push"));
        let (replica, id) = calls.open(&state, &bound_to("alice", "git__push")).unwrap();
        assert_eq!((replica, id), (calls.replica, 7));
        // Replicas sharing the team's key open each other's states.
        let (a, b) = (
            HeldCalls::new(None, Some([7; 32])),
            HeldCalls::new(None, Some([7; 32])),
        );
        let sealed = a.seal(8, &bound_to("alice", "git__push"));
        let opened = b.open(&sealed, &bound_to("alice", "git__push")).unwrap();
        assert_eq!(opened, (a.replica, 8));
        assert_ne!(a.replica, b.replica);
        assert!(calls.open(&state, &bound_to("bob", "git__push")).is_err());
        assert!(calls.open(&state, &bound_to("alice", "git__pull")).is_err());
        // Another process's key (another replica's, a restarted mcpw's).
        assert!(
            HeldCalls::new(None, None)
                .open(&state, &bound_to("alice", "git__push"))
                .is_err()
        );
        let mut tampered = state.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert!(
            calls
                .open(&tampered, &bound_to("alice", "git__push"))
                .is_err()
        );
    }

    fn held(capabilities: Value) -> Held {
        Held::new(capabilities)
    }

    fn elicit() -> ServerRequest {
        let params = serde_json::from_value(serde_json::json!({
            "mode": "form", "message": "name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        }))
        .unwrap();
        ServerRequest::ElicitRequest(rmcp::model::Request::new(params))
    }

    #[tokio::test]
    async fn questions_go_out_as_input_requests_and_answers_come_back_by_key() {
        let held = held(serde_json::json!({"elicitation": {}}));
        let declared = held.capabilities().unwrap();
        assert!(declared.contains_key("elicitation") && !declared.contains_key("sampling"));
        let (first, second) = (held.put(elicit()), held.put(elicit()));
        // The call asked twice, then waits: both go out in one round.
        let mut run: Run = tokio::spawn(std::future::pending());
        let Step::Asks(asked) = held.step(&mut run).await else {
            panic!("the call asked")
        };
        assert_eq!(asked.len(), 2);
        let keys: Vec<String> = asked.keys().cloned().collect();
        let accept = serde_json::json!({"action": "accept", "content": {"name": "Ada"}});
        // The retry answers one; the other is refused, never left waiting.
        held.answer(InputResponses::from([(keys[0].clone(), accept)]));
        let (a, b) = (first.await, second.await);
        let answered = [a, b];
        assert_eq!(answered.iter().filter(|a| a.is_ok()).count(), 1);
        let Some(Ok(ClientResult::ElicitResult(r))) = answered.iter().find(|a| a.is_ok()) else {
            panic!("an elicitation answer")
        };
        assert_eq!(r.content.as_ref().unwrap()["name"], "Ada");
        run.abort();
    }

    #[tokio::test]
    async fn a_call_that_ends_without_asking_is_done() {
        let held = held(Value::Null);
        let mut run: Run =
            tokio::spawn(async { Ok(rmcp::model::CallToolResult::success(vec![]).into()) });
        assert!(matches!(held.step(&mut run).await, Step::Done(done) if done.is_ok()));
        // A question a client of the stateless revision cannot be asked.
        let ping = ServerRequest::PingRequest(Default::default());
        assert!(held.put(ping).await.is_err());
    }
}
