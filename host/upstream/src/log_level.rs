//! MCP log levels, ordered from the most verbose (`debug`) to the most severe
//! (`emergency`), for deciding which server log messages reach which session.

use serde::{Deserialize, Serialize};

/// A syslog severity as MCP names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Debugging detail.
    Debug,
    /// Information.
    Info,
    /// Normal but significant.
    Notice,
    /// Warning.
    Warning,
    /// Error.
    Error,
    /// Critical.
    Critical,
    /// Action must be taken.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level an MCP message or request names (any value that
    /// serialises to `"info"`, …: rmcp's level type, or JSON).
    pub fn of(level: &impl Serialize) -> Option<LogLevel> {
        serde_json::to_value(level)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())
    }

    /// Whether a session that asked for `self` gets a message of `level`.
    pub fn admits(self, level: LogLevel) -> bool {
        level >= self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_admits_itself_and_what_is_more_severe() {
        assert!(LogLevel::Info.admits(LogLevel::Info));
        assert!(LogLevel::Info.admits(LogLevel::Error));
        assert!(!LogLevel::Warning.admits(LogLevel::Info));
        assert_eq!(
            LogLevel::of(&serde_json::json!("critical")),
            Some(LogLevel::Critical)
        );
        assert_eq!(LogLevel::of(&serde_json::json!("loud")), None);
    }
}
