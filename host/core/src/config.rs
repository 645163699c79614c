//! Configuration: every source read, merged and validated.
//!
//! Order (later wins): the user file (`--config PATH`, else `MCPW_CONFIG`, else
//! `$XDG_CONFIG_HOME/mcpw/mcp.json`) → `imports` (other clients' configs; a server
//! is added only where its name is not defined yet) → the project's `.mcp.json`
//! → the project's `.mcpw/mcp.json`. `settings` merge user → project.
//! `serve` (who may connect to `mcpw serve --http`) is read from the user file
//! alone: a project directory cannot grant itself or anyone else access.
//!
//! A bad server is reported (file, server, field) and skipped; the rest load.
//! Nothing here fails as a whole: problems are [`Diagnostic`]s.

pub mod approve;
pub mod fields;
pub mod grants;
pub mod imports;
pub mod interpolate;
pub mod jsonc;
mod load;
pub mod model;
pub mod permissions;
pub mod plugins;
mod project_guests;
pub mod rate;
pub mod results;
pub mod search;
pub mod settings;
pub mod shared_url;
pub mod show;
pub mod trust;
pub mod validate;

pub use approve::{ApproveMode, ApproveRule};
pub use grants::{Capability, Grants};
pub use imports::ImportKind;
pub use load::load;
pub use model::{
    CaptureStats, DEFAULT_AUTO_EXPOSURE_BUDGET, DirectTools, Exposure, GatewayClient, GrantType,
    GroupPolicy, HttpKind, IdentityProvider, Lifecycle, OAuthConfig, OAuthIntrospection,
    OAuthIssuer, Origin, PluginSettings, Provenance, Serve, ServeOAuth, ServeToken, Server,
    ServerConfig, Settings, SourceKind, TokenSource, Transport,
};
pub use plugins::{Limits, PrefixMode, Role, SCRIPT_LIMIT_KEYS, ScriptLimits};

use crate::paths::Environment;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// How serious a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something was skipped or is unusable.
    Error,
    /// Something is suspicious but was used.
    Warning,
}

/// A problem found in a config file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file.
    pub file: PathBuf,
    /// 1-based line and column, for syntax errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub column: Option<usize>,
    /// The server concerned, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The field concerned, if any (`args[2]`, `env.TOKEN`, `settings.toolPrefix`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl Diagnostic {
    /// A problem with a server (or one of its fields).
    pub fn server(
        severity: Severity,
        file: &Path,
        server: &str,
        field: Option<&str>,
        message: String,
    ) -> Self {
        Diagnostic {
            severity,
            file: file.to_path_buf(),
            line: None,
            column: None,
            server: Some(server.to_string()),
            field: field.map(str::to_string),
            message,
        }
    }

    /// A problem with a top-level field.
    pub fn field(severity: Severity, file: &Path, field: String, message: String) -> Self {
        Diagnostic {
            severity,
            file: file.to_path_buf(),
            line: None,
            column: None,
            server: None,
            field: Some(field),
            message,
        }
    }

    /// A syntax error at a position.
    pub fn parse(file: &Path, line: usize, column: usize, message: String) -> Self {
        Diagnostic {
            severity: Severity::Error,
            file: file.to_path_buf(),
            line: Some(line),
            column: Some(column),
            server: None,
            field: None,
            message,
        }
    }

    /// A problem with a whole file.
    pub fn file(severity: Severity, file: &Path, message: String) -> Self {
        Diagnostic {
            severity,
            file: file.to_path_buf(),
            line: None,
            column: None,
            server: None,
            field: None,
            message,
        }
    }
}

impl Diagnostic {
    /// Where and what, without the severity (for a log line that shows its
    /// own level).
    pub fn detail(&self) -> String {
        let mut out = self.file.display().to_string();
        if let (Some(l), Some(c)) = (self.line, self.column) {
            out.push_str(&format!(":{l}:{c}"));
        }
        if let Some(s) = &self.server {
            out.push_str(&format!(": server \"{s}\""));
        }
        if let Some(field) = &self.field {
            out.push_str(&format!(": field `{field}`"));
        }
        out.push_str(&format!(": {}", self.message));
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{level}: {}", self.detail())
    }
}

/// Parses JSON with comments; a syntax error names the line and column.
#[allow(clippy::result_large_err)] // a diagnostic is built once per broken file
pub fn parse_json(text: &str, path: &Path) -> Result<serde_json::Value, Diagnostic> {
    serde_json::from_str(&jsonc::strip(text))
        // serde_json says column 0 at a line's end (an unexpected end of file):
        // editors count from 1.
        .map_err(|e| {
            Diagnostic::parse(
                path,
                e.line(),
                e.column().max(1),
                format!("invalid JSON: {e}"),
            )
        })
}

/// Where to read config from.
#[derive(Clone, Debug)]
pub struct ConfigSources {
    /// `--config PATH`: replaces the user file; must exist.
    pub user_file: Option<PathBuf>,
    /// A config given as a value instead of a user file (embedding). Relative
    /// plugin paths resolve against `user_file`'s directory, else the current one.
    pub user_value: Option<serde_json::Value>,
    /// The project directory whose `.mcp.json` and `.mcpw/mcp.json` apply; `None`
    /// reads no project files.
    pub project_dir: Option<PathBuf>,
    /// The environment (for `MCPW_CONFIG`, file locations and interpolation).
    pub env: Environment,
}

impl ConfigSources {
    /// Sources for this process: `--config` if given, the current directory as the
    /// project, and the process environment.
    pub fn for_process(user_file: Option<PathBuf>) -> Self {
        ConfigSources {
            user_file,
            user_value: None,
            project_dir: std::env::current_dir().ok(),
            env: Environment::from_process(),
        }
    }
}

/// A file that was (or would have been) read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceFile {
    /// What kind of source.
    pub kind: SourceKind,
    /// The import, for imports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<String>,
    /// The file.
    pub path: PathBuf,
    /// Whether it exists.
    pub found: bool,
    /// Servers defined in it (valid or not).
    pub servers: usize,
}

/// The merged configuration and every problem met.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Servers in definition order; disabled ones included.
    pub servers: Vec<Server>,
    /// Merged settings.
    pub settings: Settings,
    /// `serve`, from the user file alone.
    pub serve: Serve,
    /// Imports requested.
    pub imports: Vec<ImportKind>,
    /// Files considered, in merge order.
    pub sources: Vec<SourceFile>,
    /// Problems, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// The project's servers left out until approved (or ignored).
    pub trust: trust::ProjectTrust,
}

impl Config {
    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// A server by name.
    pub fn server(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|s| s.name == name)
    }
}

#[cfg(test)]
mod tests;
