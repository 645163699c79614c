//! Pins in shared state, so that the replicas of a team gateway pin a
//! server's tools once for all of them: a replica that first lists a server
//! after its tools changed finds them pinned by another, and withholds the
//! change, where a file of its own would have pinned it as it is.
//!
//! Three keys: the pinned tools by pin key (`mcpw:pins:tools`, a server's
//! name and its tools as JSON), the definitions waiting for approval
//! (`mcpw:pins:pending`), and a counter bumped whenever the pins change
//! (`mcpw:pins:version`), which serving replicas follow. A server is pinned
//! with `HSETNX`, so the first replica's listing wins; an approval moves the
//! pending definitions into the pins in one transaction.

use super::{Pinned, ServerPins};
use crate::team_state::{SharedState, SharedStateError, key};
use redis::Commands;
use std::collections::BTreeMap;

fn tools_key() -> String {
    key(&["pins", "tools"])
}
fn pending_key() -> String {
    key(&["pins", "pending"])
}
fn version_key() -> String {
    key(&["pins", "version"])
}

/// What is stored of a server's pins besides what waits.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    server: String,
    tools: BTreeMap<String, Pinned>,
}

/// Every server's pins in shared state, with what waits for approval.
/// Unreadable entries are left out with a warning (pinned again).
pub fn load(state: &SharedState) -> Result<BTreeMap<String, ServerPins>, SharedStateError> {
    let (tools, pending): (BTreeMap<String, String>, BTreeMap<String, String>) = state
        .run_blocking(|c| {
            redis::pipe()
                .hgetall(tools_key())
                .hgetall(pending_key())
                .query(c)
        })?;
    let mut out = BTreeMap::new();
    for (k, text) in tools {
        match serde_json::from_str::<Stored>(&text) {
            Ok(s) => {
                let waiting = pending.get(&k).and_then(|p| serde_json::from_str(p).ok());
                let pins = ServerPins {
                    server: s.server,
                    tools: s.tools,
                    pending: waiting.unwrap_or_default(),
                };
                out.insert(k, pins);
            }
            Err(e) => tracing::warn!("{}", state.corrupt(format!("the pins of {k}"), e)),
        }
    }
    Ok(out)
}

/// Pins each server not pinned yet (another replica may have been first:
/// its pins stay). Pending definitions are not stored here.
pub fn first(state: &SharedState, pins: &[(String, ServerPins)]) -> Result<(), SharedStateError> {
    let stored: Vec<(String, String)> = pins
        .iter()
        .map(|(k, p)| {
            let s = Stored {
                server: p.server.clone(),
                tools: p.tools.clone(),
            };
            (
                k.clone(),
                serde_json::to_string(&s).expect("pins serialize"),
            )
        })
        .collect();
    state.run_blocking(|c| {
        let mut added = 0;
        for (k, json) in &stored {
            added += c.hset_nx::<_, _, _, i64>(tools_key(), k, json)?;
        }
        if added > 0 {
            c.incr::<_, _, ()>(version_key(), 1)?;
        }
        Ok(())
    })
}

/// Records what waits for approval of each server (none: nothing waits).
pub fn set_pending(
    state: &SharedState,
    pending: &[(String, BTreeMap<String, Pinned>)],
) -> Result<(), SharedStateError> {
    let texts: Vec<(String, Option<String>)> = pending
        .iter()
        .map(|(k, p)| {
            let text = (!p.is_empty()).then(|| serde_json::to_string(p).expect("pins serialize"));
            (k.clone(), text)
        })
        .collect();
    state.run_blocking(|c| {
        let mut pipe = redis::pipe();
        for (k, text) in &texts {
            match text {
                Some(t) => pipe.hset(pending_key(), k, t).ignore(),
                None => pipe.hdel(pending_key(), k).ignore(),
            };
        }
        pipe.query::<()>(c)
    })
}

/// Approves what waits for the servers pinned under `keys`: it becomes their
/// pins. Returns the servers approved, with the tools of each.
pub fn approve(
    state: &SharedState,
    keys: &[String],
) -> Result<Vec<(String, Vec<String>)>, SharedStateError> {
    let (tools, pending) = (tools_key(), pending_key());
    let outcome = state.run_blocking(|c| {
        redis::transaction(c, &[&tools, &pending], |c, pipe| {
            let mut done = Vec::new();
            for k in keys {
                let (Some(stored), Some(waiting)): (Option<String>, Option<String>) =
                    (c.hget(&tools, k)?, c.hget(&pending, k)?)
                else {
                    continue;
                };
                let (Ok(mut s), Ok(waiting)) = (
                    serde_json::from_str::<Stored>(&stored),
                    serde_json::from_str::<BTreeMap<String, Pinned>>(&waiting),
                ) else {
                    continue;
                };
                done.push((s.server.clone(), waiting.keys().cloned().collect()));
                s.tools.extend(waiting);
                let json = serde_json::to_string(&s).expect("pins serialize");
                pipe.hset(&tools, k, json)
                    .ignore()
                    .hdel(&pending, k)
                    .ignore();
            }
            if !done.is_empty() {
                pipe.incr(version_key(), 1).ignore();
            }
            pipe.query::<Option<()>>(c).map(|o| o.map(|()| done))
        })
    })?;
    Ok(outcome)
}

/// Forgets the pins of `keys` (a server `mcpw remove` took away).
pub fn forget(state: &SharedState, keys: &[String]) -> Result<(), SharedStateError> {
    state.run_blocking(|c| {
        redis::pipe()
            .hdel(tools_key(), keys)
            .ignore()
            .hdel(pending_key(), keys)
            .ignore()
            .incr(version_key(), 1)
            .ignore()
            .query::<()>(c)
    })
}

/// The pins' version: it changes whenever a server is pinned, approved or
/// forgotten.
pub async fn version(state: &SharedState) -> Result<u64, SharedStateError> {
    let mut get = redis::cmd("GET");
    get.arg(version_key());
    let v: Option<u64> = state.command(get).await?;
    Ok(v.unwrap_or(0))
}

/// Calls `changed` whenever another process changes the pins, checking
/// every `every` (off every call's path).
pub fn follow(
    state: std::sync::Arc<SharedState>,
    every: std::time::Duration,
    changed: impl Fn() + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut seen = None;
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Ok(now) = version(&state).await else {
                continue;
            };
            if seen.is_some_and(|s| s != now) {
                changed();
            }
            seen = Some(now);
        }
    })
}
