//! Call statistics (`settings.captureStats`): per tool, calls, errors, latency
//! and bytes returned. Kept in memory as deltas and added to the stats file
//! (`$XDG_STATE_HOME/mcpw/stats.json`, or `captureStats.path`) under a lock, with
//! an atomic rename: shortly after calls (`flushDelayMs`) and on shutdown.
//! With shared state the deltas are added in Redis instead, where every
//! replica's calls meet.

mod team_state;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Totals for one tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolStats {
    /// The server.
    pub server: String,
    /// The tool's original name.
    pub tool: String,
    /// Calls made.
    pub calls: u64,
    /// Calls that failed or returned an error.
    pub errors: u64,
    /// Sum of call durations, milliseconds.
    pub total_ms: f64,
    /// Longest call, milliseconds.
    pub max_ms: f64,
    /// Bytes of content returned.
    pub bytes: u64,
    /// When the last call was made (ms since the epoch).
    pub last_call: u64,
}

impl ToolStats {
    fn add(&mut self, d: &ToolStats) {
        self.server.clone_from(&d.server);
        self.tool.clone_from(&d.tool);
        self.calls += d.calls;
        self.errors += d.errors;
        self.total_ms += d.total_ms;
        self.max_ms = self.max_ms.max(d.max_ms);
        self.bytes += d.bytes;
        self.last_call = self.last_call.max(d.last_call);
    }

    /// Mean call duration, milliseconds.
    pub fn mean_ms(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.total_ms / self.calls as f64
        }
    }
}

#[derive(Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    tools: BTreeMap<String, ToolStats>,
}

/// Where statistics go, and how soon.
#[derive(Clone, Debug)]
pub struct StatsConfig {
    /// The stats file.
    pub path: PathBuf,
    /// Delay between a call and the write that records it.
    pub flush_delay: Duration,
    /// Shared state, which takes the statistics instead of the file.
    pub shared: Option<std::sync::Arc<crate::team_state::SharedState>>,
}

impl StatsConfig {
    /// From `settings.captureStats`; `None` when off.
    pub fn from_setting(
        setting: Option<&crate::config::CaptureStats>,
        state_dir: &Path,
    ) -> Option<StatsConfig> {
        let s = setting?;
        Some(StatsConfig {
            path: s
                .path
                .clone()
                .unwrap_or_else(|| state_dir.join("stats.json")),
            flush_delay: Duration::from_millis(s.flush_delay_ms.unwrap_or(500)),
            shared: None,
        })
    }

    /// Kept in `shared` instead of the file (when given).
    pub fn with_shared(
        mut self,
        shared: Option<std::sync::Arc<crate::team_state::SharedState>>,
    ) -> Self {
        self.shared = shared;
        self
    }

    /// Where the statistics are, for people: the shared state or the file.
    pub fn location(&self) -> String {
        match &self.shared {
            Some(s) => format!("shared state {}", s.location()),
            None => self.path.display().to_string(),
        }
    }

    /// Every tool's totals, busiest first.
    pub fn load(&self) -> std::io::Result<Vec<(String, ToolStats)>> {
        let mut all = match &self.shared {
            Some(state) => team_state::load(state).map_err(std::io::Error::other)?,
            None => read(&self.path).tools.into_iter().collect(),
        };
        all.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then(a.0.cmp(&b.0)));
        Ok(all)
    }
}

/// Statistics being collected.
pub struct Stats {
    config: StatsConfig,
    pending: Mutex<BTreeMap<String, ToolStats>>,
    flush_scheduled: std::sync::atomic::AtomicBool,
}

impl Stats {
    /// Collects into the file of `config`.
    pub fn new(config: StatsConfig) -> Stats {
        Stats {
            config,
            pending: Mutex::new(BTreeMap::new()),
            flush_scheduled: false.into(),
        }
    }

    /// Records one call of `name`.
    pub fn record(
        &self,
        name: &str,
        server: &str,
        tool: &str,
        elapsed: Duration,
        error: bool,
        bytes: u64,
    ) {
        let ms = elapsed.as_secs_f64() * 1000.0;
        let delta = ToolStats {
            server: server.into(),
            tool: tool.into(),
            calls: 1,
            errors: u64::from(error),
            total_ms: ms,
            max_ms: ms,
            bytes,
            last_call: crate::clock::now_ms(),
        };
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name.to_string())
            .or_default()
            .add(&delta);
    }

    /// Whether a delayed flush should be scheduled now (true once per batch).
    pub fn claim_flush(&self) -> bool {
        !self
            .flush_scheduled
            .swap(true, std::sync::atomic::Ordering::AcqRel)
    }

    /// The configured flush delay.
    pub fn flush_delay(&self) -> Duration {
        self.config.flush_delay
    }

    /// Adds what was recorded since the last flush to the file.
    pub fn flush(&self) -> std::io::Result<()> {
        self.flush_scheduled
            .store(false, std::sync::atomic::Ordering::Release);
        let deltas = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if deltas.is_empty() {
            return Ok(());
        }
        if let Some(state) = &self.config.shared {
            return team_state::add(state, &deltas).map_err(|e| {
                // Kept for the next flush: Redis away loses no call.
                self.keep(&deltas);
                std::io::Error::other(e)
            });
        }
        let merged = crate::state_file::update(
            &self.config.path,
            crate::state_file::Access::Default,
            crate::file_lock::DEFAULT_WAIT,
            read,
            |file| {
                for (name, d) in &deltas {
                    file.tools.entry(name.clone()).or_default().add(d);
                }
            },
        );
        // Kept for the next flush: a busy or failing file loses no call.
        merged.inspect_err(|_| self.keep(&deltas))
    }
}

impl Stats {
    /// Puts deltas that could not be written back among the pending ones.
    fn keep(&self, deltas: &BTreeMap<String, ToolStats>) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        for (name, d) in deltas {
            pending.entry(name.clone()).or_default().add(d);
        }
    }
}

fn read(path: &Path) -> File {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_add_up_across_flushes_and_collectors() {
        let dir = tempfile::tempdir().unwrap();
        let config = StatsConfig {
            path: dir.path().join("stats.json"),
            flush_delay: Duration::ZERO,
            shared: None,
        };
        let a = Stats::new(config.clone());
        let b = Stats::new(config.clone());
        a.record("s__t", "s", "t", Duration::from_millis(10), false, 100);
        a.record("s__t", "s", "t", Duration::from_millis(30), true, 50);
        b.record("s__t", "s", "t", Duration::from_millis(20), false, 10);
        a.flush().unwrap();
        b.flush().unwrap();
        a.flush().unwrap();
        let all = config.load().unwrap();
        let t = &all[0].1;
        assert_eq!((t.calls, t.errors, t.bytes), (3, 1, 160));
        assert_eq!(t.max_ms, 30.0);
        assert!((t.mean_ms() - 20.0).abs() < 1e-9);
    }

    #[test]
    fn setting_forms() {
        let state = Path::new("/state");
        let stats = |setting: serde_json::Value| {
            let cfg = crate::config::load(&crate::config::ConfigSources {
                user_file: None,
                user_value: Some(serde_json::json!({"settings": {"captureStats": setting}})),
                project_dir: None,
                env: crate::paths::Environment::from_pairs([("HOME", "/home")]),
            });
            StatsConfig::from_setting(cfg.settings.capture_stats.as_ref(), state)
        };
        assert!(StatsConfig::from_setting(None, state).is_none());
        assert!(stats(serde_json::json!(false)).is_none());
        assert_eq!(
            stats(serde_json::json!(true)).unwrap().path,
            state.join("stats.json")
        );
        let c = stats(serde_json::json!({"path": "/x.json", "flushDelayMs": 5})).unwrap();
        assert_eq!(
            (c.path, c.flush_delay),
            (PathBuf::from("/x.json"), Duration::from_millis(5))
        );
    }
}
