//! The metadata cache and the failure record in shared state, beside the
//! file: one hash of entries (`mcpw:cache:servers`), one of failures
//! (`mcpw:cache:failures`), and the time of each server's last change
//! (`mcpw:cache:at`), so that changes written late (kept while Redis was
//! away) never replace newer ones another process wrote meanwhile.

use super::Change;
use super::{Entry, Failure};
use crate::team_state::{SharedState, SharedStateError, key};
use redis::Commands;
use std::collections::BTreeMap;

fn servers_key() -> String {
    key(&["cache", "servers"])
}
fn failures_key() -> String {
    key(&["cache", "failures"])
}
fn at_key() -> String {
    key(&["cache", "at"])
}

/// Stores or removes one server's entry unless a newer change is recorded:
/// KEYS servers, at, failures; ARGV server, time of the change, entry JSON
/// (empty: remove). Either way a failure of the server is forgotten.
const PUT: &str = r"
local seen = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if seen > tonumber(ARGV[2]) then return 0 end
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[1])
else redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
";

/// Entries and failures, by server.
type Held = (BTreeMap<String, Entry>, BTreeMap<String, Failure>);

/// Every entry and failure in shared state; unreadable ones are left out
/// with a warning (the server is listed again).
pub(super) fn read_all(state: &SharedState) -> Result<Held, SharedStateError> {
    let (servers, failures): (BTreeMap<String, String>, BTreeMap<String, String>) = state
        .run_blocking(|c| {
            redis::pipe()
                .hgetall(servers_key())
                .hgetall(failures_key())
                .query(c)
        })?;
    Ok((
        decode(state, servers, "cache entry"),
        decode(state, failures, "failure"),
    ))
}

fn decode<T: serde::de::DeserializeOwned>(
    state: &SharedState,
    raw: BTreeMap<String, String>,
    what: &str,
) -> BTreeMap<String, T> {
    raw.into_iter()
        .filter_map(|(server, text)| match serde_json::from_str(&text) {
            Ok(v) => Some((server, v)),
            Err(e) => {
                tracing::warn!(
                    "{}",
                    state.corrupt(format!("the {what} of server \"{server}\""), e)
                );
                None
            }
        })
        .collect()
}

/// One server's recorded failure, asked before connecting it: another
/// replica may have failed it a moment ago.
pub(super) async fn failure(
    state: &SharedState,
    server: &str,
) -> Result<Option<Failure>, SharedStateError> {
    let text = state.hget(failures_key(), server).await?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

/// Applies queued changes, each stamped with when it was made.
pub(super) fn apply(
    state: &SharedState,
    changes: &[(u64, Change)],
) -> Result<(), SharedStateError> {
    let put = redis::Script::new(PUT);
    state.run_blocking(|c| {
        for (at, change) in changes {
            match change {
                Change::Update(entries) => {
                    for (server, entry) in entries {
                        let json = match entry {
                            Some(e) => serde_json::to_string(e).map_err(json_error)?,
                            None => String::new(),
                        };
                        put.key(servers_key())
                            .key(at_key())
                            .key(failures_key())
                            .arg(server)
                            .arg(at)
                            .arg(json)
                            .invoke::<i64>(c)?;
                    }
                }
                Change::Failure(server, Some(f)) => {
                    let json = serde_json::to_string(f).map_err(json_error)?;
                    c.hset::<_, _, _, ()>(failures_key(), server, json)?;
                }
                Change::Failure(server, None) => {
                    c.hdel::<_, _, ()>(failures_key(), server)?;
                }
            }
        }
        Ok(())
    })
}

/// Removes every entry and failure; returns how many entries there were.
pub(super) fn clear(state: &SharedState) -> Result<usize, SharedStateError> {
    let (n,): (usize,) = state.run_blocking(|c| {
        redis::pipe()
            .atomic()
            .hlen(servers_key())
            .del(servers_key())
            .ignore()
            .del(failures_key())
            .ignore()
            .del(at_key())
            .ignore()
            .query(c)
    })?;
    Ok(n)
}

fn json_error(e: serde_json::Error) -> redis::RedisError {
    redis::RedisError::from((redis::ErrorKind::Client, "cannot encode", e.to_string()))
}
