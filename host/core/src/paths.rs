//! Where mcpw reads and writes files, following the XDG base directory rules.
//! Everything is derived from an [`Environment`], so tests can point it anywhere.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// A snapshot of environment variables. Config interpolation, file locations and
/// `MCP_DIRECT_TOOLS` all read from this rather than from the process directly.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    /// The current process environment (variables that are not UTF-8 are skipped).
    pub fn from_process() -> Self {
        Environment {
            vars: std::env::vars().collect(),
        }
    }

    /// An environment holding exactly these variables.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Environment {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// Every variable.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Sets a variable (builder style).
    pub fn with(mut self, name: &str, value: impl Into<String>) -> Self {
        self.vars.insert(name.to_string(), value.into());
        self
    }

    /// The home directory (`HOME`, or `USERPROFILE` on Windows).
    pub fn home(&self) -> PathBuf {
        self.get("HOME")
            .or_else(|| self.get("USERPROFILE"))
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"))
    }

    fn xdg(&self, var: &str, fallback: &str) -> PathBuf {
        match self.get(var) {
            Some(v) if !v.is_empty() && PathBuf::from(v).is_absolute() => PathBuf::from(v),
            _ => self.home().join(fallback),
        }
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub fn config_home(&self) -> PathBuf {
        self.xdg("XDG_CONFIG_HOME", ".config")
    }

    /// `$XDG_CACHE_HOME`, else `~/.cache`.
    fn cache_home(&self) -> PathBuf {
        self.xdg("XDG_CACHE_HOME", ".cache")
    }

    /// `$XDG_STATE_HOME`, else `~/.local/state`.
    pub fn state_home(&self) -> PathBuf {
        self.xdg("XDG_STATE_HOME", ".local/state")
    }

    /// mcpw's state directory: `$XDG_STATE_HOME/mcpw` (call statistics).
    pub fn state_dir(&self) -> PathBuf {
        self.state_home().join("mcpw")
    }

    /// mcpw's default user config file: `$XDG_CONFIG_HOME/mcpw/mcp.json`.
    pub fn default_config_file(&self) -> PathBuf {
        self.config_home().join("mcpw").join("mcp.json")
    }

    /// mcpw's cache directory: `$XDG_CACHE_HOME/mcpw`.
    pub fn cache_dir(&self) -> PathBuf {
        self.cache_home().join("mcpw")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_variables_win_over_home() {
        let env = Environment::from_pairs([
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "/c"),
            ("XDG_CACHE_HOME", "relative"),
        ]);
        assert_eq!(env.default_config_file(), PathBuf::from("/c/mcpw/mcp.json"));
        // A relative XDG path is invalid per the spec and ignored.
        assert_eq!(env.cache_dir(), PathBuf::from("/h/.cache/mcpw"));
    }
}
