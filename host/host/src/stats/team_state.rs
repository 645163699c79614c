//! Statistics in shared state: one hash per tool (`mcpw:stats:tool:NAME`)
//! and the set of tools (`mcpw:stats:tools`), each flush adding its deltas
//! in one script, so that replicas flushing at once lose nothing.

use super::ToolStats;
use crate::team_state::{SharedState, SharedStateError, key};
use std::collections::BTreeMap;

fn tool_key(name: &str) -> String {
    key(&["stats", "tool", name])
}
fn index_key() -> String {
    key(&["stats", "tools"])
}

/// Adds one tool's delta: KEYS tool hash, index; ARGV name, server, tool,
/// calls, errors, totalMs, maxMs, bytes, lastCall.
const ADD: &str = r"
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[1], 'server', ARGV[2], 'tool', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'calls', ARGV[4])
redis.call('HINCRBY', KEYS[1], 'errors', ARGV[5])
redis.call('HINCRBYFLOAT', KEYS[1], 'totalMs', ARGV[6])
redis.call('HINCRBY', KEYS[1], 'bytes', ARGV[8])
if tonumber(ARGV[7]) > tonumber(redis.call('HGET', KEYS[1], 'maxMs') or '0') then
  redis.call('HSET', KEYS[1], 'maxMs', ARGV[7]) end
if tonumber(ARGV[9]) > tonumber(redis.call('HGET', KEYS[1], 'lastCall') or '0') then
  redis.call('HSET', KEYS[1], 'lastCall', ARGV[9]) end
return 1
";

/// Adds `deltas` to what shared state holds.
pub(super) fn add(
    state: &SharedState,
    deltas: &BTreeMap<String, ToolStats>,
) -> Result<(), SharedStateError> {
    let script = redis::Script::new(ADD);
    state.run_blocking(|c| {
        for (name, d) in deltas {
            script
                .key(tool_key(name))
                .key(index_key())
                .arg(name)
                .arg(&d.server)
                .arg(&d.tool)
                .arg(d.calls)
                .arg(d.errors)
                .arg(d.total_ms)
                .arg(d.max_ms)
                .arg(d.bytes)
                .arg(d.last_call)
                .invoke::<i64>(c)?;
        }
        Ok(())
    })
}

/// Every tool's totals in shared state.
pub(super) fn load(state: &SharedState) -> Result<Vec<(String, ToolStats)>, SharedStateError> {
    state.run_blocking(|c| {
        let names: Vec<String> = redis::cmd("SMEMBERS").arg(index_key()).query(c)?;
        let mut pipe = redis::pipe();
        for n in &names {
            pipe.hgetall(tool_key(n));
        }
        let rows: Vec<BTreeMap<String, String>> = pipe.query(c)?;
        Ok(names
            .into_iter()
            .zip(rows)
            .map(|(name, h)| {
                let num = |k: &str| h.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
                let stats = ToolStats {
                    server: h.get("server").cloned().unwrap_or_default(),
                    tool: h.get("tool").cloned().unwrap_or_default(),
                    calls: num("calls") as u64,
                    errors: num("errors") as u64,
                    total_ms: num("totalMs"),
                    max_ms: num("maxMs"),
                    bytes: num("bytes") as u64,
                    last_call: num("lastCall") as u64,
                };
                (name, stats)
            })
            .collect())
    })
}
