//! The last hour of calls, minute by minute, per tool: calls, errors and
//! latency, and the slowest calls; in memory, for the live page of
//! `mcpw serve --http`.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// Minutes kept.
const MINUTES: usize = 60;
/// Latencies kept per tool and minute for its median: the first ones, then
/// a uniform sample of all (reservoir).
const SAMPLES: usize = 64;
/// Slowest calls kept.
const SLOWEST: usize = 20;

/// One tool's minute.
#[derive(Clone, Default)]
struct Minute {
    /// Which minute (since the epoch) this is; an older one is stale.
    at: u64,
    calls: u32,
    errors: u32,
    latencies_ms: Vec<f32>,
}

/// One of the slowest calls.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Slow {
    /// The server.
    pub server: String,
    /// The tool's own name.
    pub tool: String,
    /// How long it took.
    pub ms: f64,
    /// When it ended (ms since the epoch).
    pub at: u64,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// One tool's hour, oldest minute first.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolHour {
    /// The server.
    pub server: String,
    /// The tool's own name.
    pub tool: String,
    /// Calls per minute.
    pub calls: Vec<u32>,
    /// Failed calls per minute.
    pub errors: Vec<u32>,
    /// Median latency per minute (none without calls).
    pub p50_ms: Vec<Option<f64>>,
    /// Calls in the hour.
    pub total_calls: u64,
    /// Failed calls in the hour.
    pub total_errors: u64,
    /// Median latency over the hour's samples.
    pub p50_ms_hour: Option<f64>,
}

/// The last hour.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hour {
    /// Minutes in each series.
    pub minutes: usize,
    /// Start of the newest minute (ms since the epoch).
    pub end: u64,
    /// Tools called in the hour, most calls first.
    pub tools: Vec<ToolHour>,
    /// The slowest calls of the hour, slowest first.
    pub slowest: Vec<Slow>,
}

#[derive(Default)]
struct State {
    tools: BTreeMap<(String, String), Vec<Minute>>,
    slowest: Vec<Slow>,
    /// Drives the reservoir sampling.
    draws: u64,
}

/// The recorder. Cheap to call on every call: one lock, no allocation once
/// a tool's minutes exist.
#[derive(Default)]
pub struct Recent {
    state: Mutex<State>,
}

impl Recent {
    /// Records a call of `tool` on `server` that ended at `now_ms` (ms since
    /// the epoch) after `took`; `error` says why it failed.
    pub fn record(
        &self,
        server: &str,
        tool: &str,
        took: Duration,
        error: Option<&str>,
        now_ms: u64,
    ) {
        let minute = now_ms / 60_000;
        let ms = took.as_secs_f64() * 1000.0;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.draws = state
            .draws
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let draw = state.draws >> 33;
        let key = (server.to_string(), tool.to_string());
        let minutes = state
            .tools
            .entry(key)
            .or_insert_with(|| vec![Minute::default(); MINUTES]);
        let slot = &mut minutes[(minute % MINUTES as u64) as usize];
        if slot.at != minute {
            *slot = Minute {
                at: minute,
                ..Minute::default()
            };
        }
        slot.calls += 1;
        if error.is_some() {
            slot.errors += 1;
        }
        if slot.latencies_ms.len() < SAMPLES {
            slot.latencies_ms.push(ms as f32);
        } else {
            let pick = (draw % u64::from(slot.calls)) as usize;
            if pick < SAMPLES {
                slot.latencies_ms[pick] = ms as f32;
            }
        }
        let hour_ago = now_ms.saturating_sub(MINUTES as u64 * 60_000);
        let slowest = &mut state.slowest;
        slowest.retain(|s| s.at > hour_ago);
        if slowest.len() < SLOWEST || slowest.last().is_some_and(|s| s.ms < ms) {
            slowest.push(Slow {
                server: server.to_string(),
                tool: tool.to_string(),
                ms,
                at: now_ms,
                error: error.map(str::to_string),
            });
            slowest.sort_by(|a, b| b.ms.total_cmp(&a.ms));
            slowest.truncate(SLOWEST);
        }
    }

    /// The hour ending with the minute of `now_ms`, of the tools `shown` lets
    /// through (by server).
    pub fn hour(&self, now_ms: u64, shown: impl Fn(&str, &str) -> bool) -> Hour {
        let newest = now_ms / 60_000;
        let oldest = newest + 1 - MINUTES as u64;
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut tools: Vec<ToolHour> = state
            .tools
            .iter()
            .filter(|((server, tool), _)| shown(server, tool))
            .filter_map(|((server, tool), minutes)| {
                let mut hour = ToolHour {
                    server: server.clone(),
                    tool: tool.clone(),
                    calls: vec![0; MINUTES],
                    errors: vec![0; MINUTES],
                    p50_ms: vec![None; MINUTES],
                    total_calls: 0,
                    total_errors: 0,
                    p50_ms_hour: None,
                };
                let mut all = Vec::new();
                for m in minutes.iter().filter(|m| m.at >= oldest && m.at <= newest) {
                    let i = (m.at - oldest) as usize;
                    hour.calls[i] = m.calls;
                    hour.errors[i] = m.errors;
                    hour.p50_ms[i] = median(&m.latencies_ms);
                    hour.total_calls += u64::from(m.calls);
                    hour.total_errors += u64::from(m.errors);
                    all.extend_from_slice(&m.latencies_ms);
                }
                hour.p50_ms_hour = median(&all);
                (hour.total_calls > 0).then_some(hour)
            })
            .collect();
        tools.sort_by_key(|t| std::cmp::Reverse(t.total_calls));
        let hour_ago = now_ms.saturating_sub(MINUTES as u64 * 60_000);
        let slowest = state
            .slowest
            .iter()
            .filter(|s| s.at > hour_ago && shown(&s.server, &s.tool))
            .cloned()
            .collect();
        Hour {
            minutes: MINUTES,
            end: newest * 60_000,
            tools,
            slowest,
        }
    }
}

fn median(samples: &[f32]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f32::total_cmp);
    Some(f64::from(sorted[sorted.len() / 2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_764_259_200_000;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn minutes_count_calls_errors_and_medians_and_an_hour_later_are_gone() {
        let r = Recent::default();
        r.record("s", "a", ms(10), None, T0);
        r.record("s", "a", ms(30), Some("boom"), T0 + 1_000);
        r.record("s", "a", ms(20), None, T0 + 2_000);
        r.record("s", "a", ms(5), None, T0 + 60_000);
        r.record("t", "b", ms(1), None, T0 + 60_000);
        let h = r.hour(T0 + 61_000, |_, _| true);
        assert_eq!(h.end, T0 + 60_000);
        assert_eq!(h.tools.len(), 2);
        let a = &h.tools[0];
        assert_eq!(
            (a.server.as_str(), a.tool.as_str()),
            ("s", "a"),
            "most calls first"
        );
        assert_eq!(a.calls[MINUTES - 2..], [3, 1]);
        assert_eq!(a.errors[MINUTES - 2..], [1, 0]);
        assert_eq!(a.p50_ms[MINUTES - 2..], [Some(20.0), Some(5.0)]);
        assert_eq!((a.total_calls, a.total_errors), (4, 1));
        assert_eq!(h.slowest[0].ms, 30.0);
        assert_eq!(h.slowest[0].error.as_deref(), Some("boom"));
        // Only the servers shown.
        let only_t = r.hour(T0 + 61_000, |s, _| s == "t");
        assert_eq!(only_t.tools.len(), 1);
        assert!(only_t.slowest.iter().all(|s| s.server == "t"));
        // An hour on, the minutes and the slowest calls have gone.
        let later = r.hour(T0 + 2 * 3_600_000, |_, _| true);
        assert!(later.tools.is_empty() && later.slowest.is_empty());
        // The slot of T0's minute, reused an hour later, starts again (1
        // call, not 4); the minute after T0's is still in the hour.
        r.record("s", "a", ms(7), None, T0 + 3_600_000);
        let reused = r.hour(T0 + 3_600_000, |_, _| true);
        assert_eq!(reused.tools[0].calls[MINUTES - 1], 1);
        assert_eq!(reused.tools[0].calls[0], 1);
        assert_eq!(reused.tools[0].total_calls, 2);
    }

    #[test]
    fn the_slowest_are_kept_slowest_first_and_capped() {
        let r = Recent::default();
        for i in 0..50 {
            r.record("s", "a", ms(i), None, T0 + i);
        }
        let h = r.hour(T0 + 100, |_, _| true);
        assert_eq!(h.slowest.len(), SLOWEST);
        assert_eq!(h.slowest[0].ms, 49.0);
        assert_eq!(h.slowest[SLOWEST - 1].ms, 30.0);
        // Latency samples stay bounded however many calls a minute has.
        for i in 0..1000 {
            r.record("s", "b", ms(i % 10), None, T0 + 200);
        }
        let b = r.hour(T0 + 300, |_, _| true);
        let b = b.tools.iter().find(|t| t.tool == "b").unwrap();
        assert_eq!(b.calls[MINUTES - 1], 1000);
        let p50 = b.p50_ms[MINUTES - 1].unwrap();
        assert!((2.0..=7.0).contains(&p50), "{p50}");
    }
}
