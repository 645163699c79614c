//! Sessions in shared state: enough of each Streamable HTTP session that any
//! replica can take it up (its `initialize` parameters, for rmcp's session
//! restore), and what the session chose since (tools it loaded with
//! ToolSearch, its log level, the resources it watches). A change is
//! announced on a channel, so that the other replicas holding the session
//! update their copy at once.
//!
//! Keys, each expiring [`SESSION_TTL`] after the session's last change:
//! `mcpw:session:ID` (hash: `init`, `logLevel`), `mcpw:session:ID:tools` and
//! `mcpw:session:ID:watching` (sets). Channel: `mcpw:sessions`.

use super::{SharedState, SharedStateError, key};
use futures::StreamExt;
use rmcp::transport::streamable_http_server::session::{
    SessionState as InitState, SessionStore, SessionStoreError,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// How long a session nobody uses is kept. Clients that come back later
/// start a new one (a 404 tells them to).
pub const SESSION_TTL: Duration = Duration::from_secs(24 * 3600);

/// How long after Redis comes back every replica has surely written back
/// the sessions it began while Redis was away (each notices within
/// [`super::MONITOR_EVERY`]).
const CATCH_UP: Duration = Duration::from_secs(15);

fn base(id: &str) -> String {
    key(&["session", id])
}
/// A kept result of a session: under the session's id, so that only it reads it.
fn result_key(session: &str, id: &str) -> String {
    key(&["session", session, "result", id])
}

fn tools_key(id: &str) -> String {
    format!("{}:tools", base(id))
}
fn watching_key(id: &str) -> String {
    format!("{}:watching", base(id))
}
fn channel() -> String {
    key(&["sessions"])
}

/// What a session chose, as shared.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionRecord {
    /// Tools loaded with ToolSearch.
    pub tools: BTreeSet<String>,
    /// The log level it asked for.
    pub log_level: Option<String>,
    /// Resource URIs it watches.
    pub watching: BTreeSet<String>,
}

/// What changed in a session, as announced to the other replicas.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    /// Tools were loaded.
    Tools,
    /// The log level.
    LogLevel,
    /// Resources watched or no longer watched.
    Watching,
    /// The client ended the session.
    Closed,
}

/// One announcement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    /// The replica that made the change (it ignores its own).
    pub from: String,
    /// The session.
    pub session: String,
    /// What changed.
    pub change: Change,
}

/// The sessions of one replica in shared state.
pub struct SharedSessions {
    state: Arc<SharedState>,
    /// This replica, in announcements.
    replica: String,
    /// It has subscribed to the announcements at least once: until then it
    /// may miss another replica's changes to a session it holds.
    listened: std::sync::atomic::AtomicBool,
}

impl SharedSessions {
    /// Sessions kept in `state`, for a replica with a fresh id.
    pub fn new(state: Arc<SharedState>) -> Arc<SharedSessions> {
        let replica = format!(
            "{}-{}-{}",
            hostname(),
            std::process::id(),
            crate::clock::now_ms()
        );
        Arc::new(SharedSessions {
            state,
            replica,
            listened: false.into(),
        })
    }

    /// Whether announcements have been listened to since the start.
    pub fn has_listened(&self) -> bool {
        self.listened.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The shared state.
    pub fn state(&self) -> &Arc<SharedState> {
        &self.state
    }

    /// What `session` chose so far (empty for a session nobody recorded).
    pub async fn load(&self, session: &str) -> Result<SessionRecord, SharedStateError> {
        let mut pipe = redis::pipe();
        pipe.hget(base(session), "logLevel")
            .smembers(tools_key(session))
            .smembers(watching_key(session));
        let (level, tools, watching): (Option<String>, BTreeSet<String>, BTreeSet<String>) =
            self.state.pipeline(pipe).await?;
        Ok(SessionRecord {
            tools,
            log_level: level,
            watching,
        })
    }

    /// Writes all a session holds, as after Redis lost it or missed it:
    /// its handshake, tools, log level and watched resources.
    pub async fn restore_all(
        &self,
        session: &str,
        init: Option<&InitState>,
        record: &SessionRecord,
    ) -> Result<(), SharedStateError> {
        let mut pipe = redis::pipe();
        if let Some(init) = init {
            let text =
                serde_json::to_string(init).map_err(|e| self.state.corrupt("a handshake", e))?;
            // Never over a handshake Redis kept: this one may be a stand-in.
            pipe.hset_nx(base(session), "init", text).ignore();
        }
        if !record.tools.is_empty() {
            pipe.sadd(tools_key(session), &record.tools).ignore();
        }
        if let Some(level) = &record.log_level {
            pipe.hset(base(session), "logLevel", level).ignore();
        }
        if !record.watching.is_empty() {
            pipe.sadd(watching_key(session), &record.watching).ignore();
        }
        self.write(session, pipe, Change::Tools).await
    }

    /// The client (token name) that opened `session`, if recorded.
    pub async fn owner(&self, session: &str) -> Result<Option<String>, SharedStateError> {
        self.state.hget(base(session), "client").await
    }

    /// Records the client that opened `session`.
    pub async fn set_owner(&self, session: &str, client: &str) -> Result<(), SharedStateError> {
        self.set_field(session, "client", client).await
    }

    /// Sets `field` of the session's hash, and renews it.
    async fn set_field(
        &self,
        session: &str,
        field: &str,
        value: &str,
    ) -> Result<(), SharedStateError> {
        let mut pipe = redis::pipe();
        pipe.hset(base(session), field, value)
            .ignore()
            .expire(base(session), SESSION_TTL.as_secs() as i64)
            .ignore();
        self.state.pipeline(pipe).await
    }

    /// Tools loaded with ToolSearch, as recorded now.
    pub async fn tools(&self, session: &str) -> Result<BTreeSet<String>, SharedStateError> {
        let mut cmd = redis::cmd("SMEMBERS");
        cmd.arg(tools_key(session));
        self.state.command(cmd).await
    }

    /// Records tools loaded, and announces it.
    pub async fn add_tools(&self, session: &str, tools: &[String]) -> Result<(), SharedStateError> {
        if tools.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        pipe.sadd(tools_key(session), tools).ignore();
        self.write(session, pipe, Change::Tools).await
    }

    /// Keeps `record` (a result a session was shown a preview of) for
    /// `session`, gone after `ttl`: any replica serves it.
    pub async fn keep_result(
        &self,
        session: &str,
        id: &str,
        record: &str,
        ttl: Duration,
    ) -> Result<(), SharedStateError> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(result_key(session, id))
            .arg(record)
            .arg("PX")
            .arg(ttl.as_millis().max(1) as u64);
        self.state.command(cmd).await
    }

    /// The result `session` kept as `id`, while it lasts.
    pub async fn kept_result(
        &self,
        session: &str,
        id: &str,
    ) -> Result<Option<String>, SharedStateError> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(result_key(session, id));
        self.state.command(cmd).await
    }

    /// Records the log level, and announces it.
    pub async fn set_log_level(&self, session: &str, level: &str) -> Result<(), SharedStateError> {
        let mut pipe = redis::pipe();
        pipe.hset(base(session), "logLevel", level).ignore();
        self.write(session, pipe, Change::LogLevel).await
    }

    /// Records a resource watched (or no longer), and announces it.
    pub async fn set_watching(
        &self,
        session: &str,
        uri: &str,
        on: bool,
    ) -> Result<(), SharedStateError> {
        let mut pipe = redis::pipe();
        if on {
            pipe.sadd(watching_key(session), uri).ignore();
        } else {
            pipe.srem(watching_key(session), uri).ignore();
        }
        self.write(session, pipe, Change::Watching).await
    }

    /// Runs `pipe`, renews the session's keys and announces `change`, in one
    /// round trip.
    async fn write(
        &self,
        session: &str,
        mut pipe: redis::Pipeline,
        change: Change,
    ) -> Result<(), SharedStateError> {
        let ttl = SESSION_TTL.as_secs() as i64;
        for k in [base(session), tools_key(session), watching_key(session)] {
            pipe.expire(k, ttl).ignore();
        }
        pipe.publish(channel(), self.announcement(session, change))
            .ignore();
        self.state.pipeline(pipe).await
    }

    fn announcement(&self, session: &str, change: Change) -> String {
        serde_json::to_string(&Announcement {
            from: self.replica.clone(),
            session: session.to_string(),
            change,
        })
        .unwrap_or_default()
    }

    /// Changes other replicas make, as they are announced, for as long as the
    /// returned stream is held. Re-subscribes by itself after Redis comes
    /// back; announcements made while it was away are lost, which costs a
    /// stale copy until the session's next change (a restore reads it whole).
    pub fn announcements(
        self: &Arc<Self>,
    ) -> impl futures::Stream<Item = Announcement> + Send + 'static {
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(sessions) = me.upgrade() else { return };
                let subscribed = match sessions.state.pubsub().await {
                    Ok(mut pubsub) => pubsub.subscribe(channel()).await.map(|()| pubsub),
                    Err(_) => Err(redis::RedisError::from(std::io::Error::other("no pubsub"))),
                };
                let replica = sessions.replica.clone();
                if subscribed.is_ok() {
                    sessions
                        .listened
                        .store(true, std::sync::atomic::Ordering::Release);
                }
                drop(sessions);
                match subscribed {
                    Ok(pubsub) => {
                        let mut messages = pubsub.into_on_message();
                        while let Some(m) = messages.next().await {
                            let Ok(text) = m.get_payload::<String>() else {
                                continue;
                            };
                            let Ok(a) = serde_json::from_str::<Announcement>(&text) else {
                                continue;
                            };
                            if a.from != replica && tx.send(a).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(_) if tx.is_closed() => return,
                    Err(_) => {}
                }
                // The connection ended (Redis went away): try again shortly.
                tokio::time::sleep(super::MONITOR_EVERY).await;
            }
        });
        tokio_stream_from(rx)
    }
}

fn tokio_stream_from<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> + Send + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// The handshake of a client nothing is known of.
fn unknown_client() -> InitState {
    InitState::new(rmcp::model::InitializeRequestParams::new(
        Default::default(),
        rmcp::model::Implementation::new("(taken up while shared state was away)", "0"),
    ))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "mcpw".into())
}

/// rmcp's session store: the `initialize` parameters of every session, so
/// that another replica can replay its handshake.
#[async_trait::async_trait]
impl SessionStore for SharedSessions {
    async fn load(&self, session_id: &str) -> Result<Option<InitState>, SessionStoreError> {
        let text = match self.state.hget(base(session_id), "init").await {
            Ok(t) => t,
            // Redis is away: the session is taken up as one whose client
            // asked for nothing beyond the basics, rather than failing its
            // call. What it chose comes back with Redis.
            Err(e) if !self.state.health().is_up() => {
                tracing::warn!(
                    "session {session_id} taken up without its handshake ({e}): the client's sampling, elicitation and roots are not offered to servers through this replica"
                );
                return Ok(Some(unknown_client()));
            }
            Err(e) => return Err(e.into()),
        };
        match text {
            // Just after an outage, a session another replica began while
            // Redis was away may not be written back yet: taken up as above.
            None if self.state.health().back_within(CATCH_UP) => {
                tracing::warn!(
                    "session {session_id} is not in shared state yet; taken up without its handshake"
                );
                Ok(Some(unknown_client()))
            }
            None => Ok(None),
            Some(t) => Ok(Some(serde_json::from_str(&t).map_err(|e| {
                self.state.corrupt(format!("session {session_id}"), e)
            })?)),
        }
    }

    async fn store(&self, session_id: &str, state: &InitState) -> Result<(), SessionStoreError> {
        let text = serde_json::to_string(state)?;
        self.set_field(session_id, "init", &text).await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let mut pipe = redis::pipe();
        pipe.del(&[
            base(session_id),
            tools_key(session_id),
            watching_key(session_id),
        ])
        .ignore()
        .publish(channel(), self.announcement(session_id, Change::Closed))
        .ignore();
        self.state.pipeline::<()>(pipe).await?;
        Ok(())
    }
}
