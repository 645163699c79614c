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
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 4] = [Role::Naming, Role::DirectTools, Role::Ranking, Role::Script];

    /// The name used in config (`settings.plugins`).
    pub fn config_key(self) -> &'static str {
        match self {
            Role::Naming => "naming",
            Role::DirectTools => "directTools",
            Role::Ranking => "ranking",
            Role::Script => "script",
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
