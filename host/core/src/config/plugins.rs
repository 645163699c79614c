//! The value types of `settings.plugins` and `settings.toolPrefix`: which guest
//! fills which role, under which limits. The plugin runtime acts on them.

use std::fmt;
use std::time::Duration;

/// A policy role, each a WIT export interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// `naming`: agent-facing tool names.
    Naming,
    /// `direct-tools`: which tools are always loaded.
    DirectTools,
    /// `ranking`: tool search.
    Ranking,
    /// `script`: runs an agent's scripts (code mode).
    Script,
    /// `guard`: checks calls before they run and their results after
    /// (`settings.guards` lists them, in order).
    Guard,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 5] = [
        Role::Naming,
        Role::DirectTools,
        Role::Ranking,
        Role::Script,
        Role::Guard,
    ];

    /// The name used in config (`settings.plugins`).
    pub fn config_key(self) -> &'static str {
        match self {
            Role::Naming => "naming",
            Role::DirectTools => "directTools",
            Role::Ranking => "ranking",
            Role::Script => "script",
            Role::Guard => "guard",
        }
    }

    /// Parses a config key.
    pub fn parse(key: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.config_key() == key)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Naming => "naming",
            Role::DirectTools => "direct-tools",
            Role::Ranking => "ranking",
            Role::Script => "script",
            Role::Guard => "guard",
        })
    }
}

/// `settings.toolPrefix`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PrefixMode {
    /// `<server>__<tool>`.
    #[default]
    Server,
    /// `<server without -mcp>__<tool>`.
    Short,
    /// `<tool>`.
    None,
}

impl PrefixMode {
    /// Parses a config value.
    pub fn parse(s: &str) -> Option<PrefixMode> {
        match s {
            "server" => Some(PrefixMode::Server),
            "short" => Some(PrefixMode::Short),
            "none" => Some(PrefixMode::None),
            _ => None,
        }
    }
}

/// The limits applied to a guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most linear memory a guest may grow to, in bytes (all memories together).
    pub memory_bytes: usize,
    /// Wall-clock budget of one call into the guest.
    pub deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 256 << 20,
            deadline: Duration::from_secs(2),
        }
    }
}

impl Limits {
    /// Each limit the larger of the two: what the embedded default guest runs
    /// with, so that limits set for user guests can never starve the fallback.
    pub fn at_least(self, other: Limits) -> Limits {
        Limits {
            memory_bytes: self.memory_bytes.max(other.memory_bytes),
            deadline: self.deadline.max(other.deadline),
        }
    }
}

/// The limits of one script run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptLimits {
    /// Wall time of the whole run, calls included.
    pub wall: Duration,
    /// The guest's own running time.
    pub cpu: Duration,
    /// Linear memory, in bytes.
    pub memory_bytes: usize,
    /// The returned value and logs together, in bytes.
    pub output_bytes: usize,
    /// Calls the script may make.
    pub calls: u32,
    /// Calls in flight at once; more wait for a free place.
    pub concurrency: u32,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        ScriptLimits {
            wall: Duration::from_secs(30),
            cpu: Duration::from_secs(10),
            memory_bytes: 64 << 20,
            output_bytes: 1 << 20,
            calls: 100,
            concurrency: 8,
        }
    }
}

/// The keys of a limits object (`settings.scriptLimits`, a call's `limits`).
pub const SCRIPT_LIMIT_KEYS: [&str; 6] = [
    "timeoutMs",
    "cpuMs",
    "memoryMb",
    "maxCalls",
    "maxOutputKb",
    "concurrency",
];

impl ScriptLimits {
    /// `base` with the limits a JSON object sets (keys of
    /// [`SCRIPT_LIMIT_KEYS`]; a value that is not a positive integer is
    /// left out).
    pub fn read(object: &serde_json::Map<String, serde_json::Value>, base: ScriptLimits) -> Self {
        let get = |k: &str| {
            object
                .get(k)
                .and_then(serde_json::Value::as_u64)
                .filter(|n| *n > 0)
        };
        let small = |n: u64| n.min(u64::from(u32::MAX)) as u32;
        ScriptLimits {
            wall: get("timeoutMs").map_or(base.wall, Duration::from_millis),
            cpu: get("cpuMs").map_or(base.cpu, Duration::from_millis),
            memory_bytes: get("memoryMb")
                .map_or(base.memory_bytes, |m| (m.min(1 << 16) as usize) << 20),
            output_bytes: get("maxOutputKb")
                .map_or(base.output_bytes, |k| (k.min(1 << 30) as usize) << 10),
            calls: get("maxCalls").map_or(base.calls, small),
            concurrency: get("concurrency").map_or(base.concurrency, small),
        }
    }

    /// Each limit no higher than in `ceiling` (the configured limits bound
    /// what one call may ask for).
    pub fn within(self, ceiling: ScriptLimits) -> ScriptLimits {
        ScriptLimits {
            wall: self.wall.min(ceiling.wall),
            cpu: self.cpu.min(ceiling.cpu),
            memory_bytes: self.memory_bytes.min(ceiling.memory_bytes),
            output_bytes: self.output_bytes.min(ceiling.output_bytes),
            calls: self.calls.min(ceiling.calls),
            concurrency: self.concurrency.min(ceiling.concurrency).max(1),
        }
    }
}
