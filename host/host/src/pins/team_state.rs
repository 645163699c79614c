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
    #[serde(default, rename = "keyedByKind")]
    keyed_by_kind: bool,
}

/// Every server's pins in shared state, with what waits for approval.
/// Unreadable entries are removed with a warning (pinned again).
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
                    keyed_by_kind: s.keyed_by_kind,
                };
                out.insert(k, pins);
            }
            Err(e) => {
                // Removed, so that the server is pinned again: one that
                // `HSETNX` cannot replace would never be checked.
                tracing::warn!("{}; removed", state.corrupt(format!("the pins of {k}"), e));
                state.run_blocking(|c| c.hdel::<_, _, ()>(tools_key(), &k))?;
            }
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
                keyed_by_kind: p.keyed_by_kind,
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

/// Adds to what waits for approval of each server: what one replica saw
/// joins what others saw (one of them may run another version of the
/// server); only an approval, or forgetting the server, takes it away.
pub fn add_pending(
    state: &SharedState,
    additions: &[(String, BTreeMap<String, Pinned>)],
) -> Result<(), SharedStateError> {
    let pending = pending_key();
    state.run_blocking(|c| {
        redis::transaction(c, &[&pending], |c, pipe| {
            for (k, added) in additions {
                let was: Option<String> = c.hget(&pending, k)?;
                let mut waiting: BTreeMap<String, Pinned> = was
                    .and_then(|w| serde_json::from_str(&w).ok())
                    .unwrap_or_default();
                waiting.extend(added.clone());
                let json = serde_json::to_string(&waiting).expect("pins serialize");
                pipe.hset(&pending, k, json).ignore();
            }
            pipe.query::<Option<()>>(c)
        })
    })
}

/// Pins `pins` under `key` as they are, over any pins it had (the baseline
/// `mcpw add` takes of a server it adds), nothing waiting.
pub fn set(state: &SharedState, key: &str, pins: &ServerPins) -> Result<(), SharedStateError> {
    let stored = Stored {
        server: pins.server.clone(),
        tools: pins.tools.clone(),
        keyed_by_kind: pins.keyed_by_kind,
    };
    let json = serde_json::to_string(&stored).expect("pins serialize");
    state.run_blocking(|c| {
        redis::pipe()
            .hset(tools_key(), key, json)
            .ignore()
            .hdel(pending_key(), key)
            .ignore()
            .incr(version_key(), 1)
            .ignore()
            .query::<()>(c)
    })
}

/// Approves what waits, as it was shown: for each pin key, the tools and
/// the digests of their definitions the user saw. A definition that changed
/// since (another replica saw another one) keeps waiting. Returns the
/// servers approved, with the tools of each.
pub fn approve(
    state: &SharedState,
    shown: &[(String, BTreeMap<String, String>)],
) -> Result<Vec<(String, Vec<String>)>, SharedStateError> {
    let (tools, pending) = (tools_key(), pending_key());
    state.run_blocking(|c| {
        redis::transaction(c, &[&tools, &pending], |c, pipe| {
            let mut done = Vec::new();
            for (k, digests) in shown {
                let (Some(stored), Some(waiting)): (Option<String>, Option<String>) =
                    (c.hget(&tools, k)?, c.hget(&pending, k)?)
                else {
                    continue;
                };
                let (Ok(mut s), Ok(mut waiting)) = (
                    serde_json::from_str::<Stored>(&stored),
                    serde_json::from_str::<BTreeMap<String, Pinned>>(&waiting),
                ) else {
                    continue;
                };
                let approved = super::take_shown(&mut waiting, digests);
                if approved.is_empty() {
                    continue;
                }
                done.push((s.server.clone(), approved.keys().cloned().collect()));
                s.tools.extend(approved);
                let json = serde_json::to_string(&s).expect("pins serialize");
                pipe.hset(&tools, k, json).ignore();
                match waiting.is_empty() {
                    true => pipe.hdel(&pending, k).ignore(),
                    false => {
                        let rest = serde_json::to_string(&waiting).expect("pins serialize");
                        pipe.hset(&pending, k, rest).ignore()
                    }
                };
            }
            if !done.is_empty() {
                pipe.incr(version_key(), 1).ignore();
            }
            pipe.query::<Option<()>>(c).map(|o| o.map(|()| done))
        })
    })
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
            // The first read counts too: a change between the host's first
            // catalog and this read would be missed otherwise.
            if seen != Some(now) {
                changed();
            }
            seen = Some(now);
        }
    })
}
