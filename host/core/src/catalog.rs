//! What is known of the servers' tools: the host-side tool record, and catalog
//! files (the `{"servers":[{"name","tools":[...]}]}` format of the search benchmark),
//! which let anyone run the policy guests before any server is connected.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

mod schema;
pub use schema::{JsonObject, Schema};

/// Tool or resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    /// An MCP tool.
    #[default]
    Tool,
    /// An MCP resource exposed as a tool.
    Resource,
    /// A skill a server offers (the MCP Skills extension): searched beside
    /// the tools, read rather than called. Never in the tool lists: only in
    /// the search index (see [`Tool::skill`]).
    Skill,
}

/// The scheme of skill URIs (the MCP Skills extension): a server's skill
/// files are its skills', never resource tools of their own.
pub const SKILL_SCHEME: &str = "skill://";

/// One catalog entry as the host knows it (the WIT `tool` record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The configured server that provides it.
    pub server: String,
    /// The server's own name for it (tool name, or resource name).
    pub name: String,
    /// Display title, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description; empty when none.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments.
    #[serde(default)]
    pub input_schema: Schema,
    /// MCP tool annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Tool or resource.
    #[serde(default)]
    pub kind: ToolKind,
    /// For a resource: the URI it reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// JSON Schema of its `structuredContent`, when the server declared one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Schema>,
    /// The tool's `_meta` as the server listed it (an MCP App's `_meta.ui`
    /// among it), kept for the clients that use it.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl Tool {
    /// A plain tool with an empty schema.
    pub fn new(
        server: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Tool {
            server: server.into(),
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: Schema::default(),
            annotations: None,
            kind: ToolKind::Tool,
            resource_uri: None,
            output_schema: None,
            meta: None,
        }
    }

    /// A skill as a search entry: `name` is its name, `uri` the URI of its
    /// `SKILL.md` as clients read it.
    pub fn skill(
        server: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        uri: impl Into<String>,
    ) -> Self {
        Tool {
            kind: ToolKind::Skill,
            resource_uri: Some(uri.into()),
            ..Tool::new(server, name, description)
        }
    }

    /// `server/name`, the identifier the benchmark files use.
    pub fn id(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }
}

/// A catalog entry with the agent-facing name the naming policy gave it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// The agent-facing name, e.g. `github__create_issue`.
    pub name: String,
    /// The entry; shared with the server's listing, not copied.
    pub tool: std::sync::Arc<Tool>,
}

impl Entry {
    /// The server's own name for the tool when the exposed name does not
    /// show it (a name that had to be replaced, or a naming guest's own).
    pub fn renamed_from(&self) -> Option<&str> {
        (!self.name.ends_with(self.tool.name.as_str())).then_some(self.tool.name.as_str())
    }

    /// The exposed name, with the original beside it when it is not in sight.
    pub fn shown_name(&self) -> std::borrow::Cow<'_, str> {
        match self.renamed_from() {
            Some(original) => format!("{} (originally \"{original}\")", self.name).into(),
            None => self.name.as_str().into(),
        }
    }
}

/// How the host is connected to a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionState {
    /// A live connection is open.
    Connected,
    /// Not connected; tools known from the cache.
    Cached,
    /// Not connected; nothing known.
    NotConnected,
    /// The last attempt failed.
    Failed,
    /// Credentials are needed.
    NeedsAuth,
    /// `enabled: false`.
    Disabled,
}

/// The status of one configured server.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The server name.
    pub name: String,
    /// Its connection state.
    pub state: ConnectionState,
    /// Tools known for it.
    pub tool_count: u32,
    /// Its lifecycle mode.
    pub lifecycle: crate::config::Lifecycle,
    /// The last connection error, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The MCP revision last negotiated with it (`2026-07-28`, `2025-11-25`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Whether a connected server of the stateless revision (2026-07-28)
    /// has its change stream (`subscriptions/listen`) open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<ListenReport>,
}

/// Where a connection's change stream stands, for a person or a program.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum ListenReport {
    /// Being opened.
    Starting,
    /// Open: changes arrive as they happen.
    Listening,
    /// The server has none: lists are fetched again when needed.
    Unsupported,
    /// Down: lists are fetched again when needed, and the stream is retried.
    Retrying {
        /// Why it is down.
        error: String,
        /// Failures in a row.
        attempts: u32,
        /// Seconds until the next try.
        retry_in_s: u64,
    },
}

impl ListenReport {
    /// One line: "listening", "not listening (…), retry in N s", ….
    pub fn describe(&self) -> String {
        match self {
            ListenReport::Starting => "opening its change stream".into(),
            ListenReport::Listening => "listening for changes".into(),
            ListenReport::Unsupported => "no change stream: lists fetched when needed".into(),
            ListenReport::Retrying {
                error, retry_in_s, ..
            } => format!(
                "change stream down ({error}): lists fetched when needed, retry in {retry_in_s} s"
            ),
        }
    }
}

/// A catalog file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The file could not be read.
    #[error("cannot read catalog {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a catalog.
    #[error("{path}:{line}:{column}: not a catalog file: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

#[derive(Deserialize)]
struct CatalogFile {
    servers: Vec<CatalogServer>,
}

#[derive(Deserialize)]
struct CatalogServer {
    name: String,
    #[serde(default)]
    tools: Vec<CatalogTool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CatalogTool {
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Schema,
    #[serde(default)]
    annotations: Option<Value>,
}

/// Parses a catalog from JSON text; `path` is only used in errors.
fn parse_catalog(text: &str, path: &Path) -> Result<Vec<Tool>, CatalogError> {
    let file: CatalogFile = serde_json::from_str(text).map_err(|e| CatalogError::Format {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    Ok(file
        .servers
        .into_iter()
        .flat_map(|s| {
            let server = s.name;
            s.tools.into_iter().map(move |t| Tool {
                server: server.clone(),
                name: t.name,
                title: t.title,
                description: t.description.unwrap_or_default(),
                input_schema: t.input_schema,
                annotations: t.annotations,
                kind: ToolKind::Tool,
                resource_uri: None,
                output_schema: None,
                meta: None,
            })
        })
        .collect())
}

/// Reads a catalog file.
pub fn load_catalog(path: &Path) -> Result<Vec<Tool>, CatalogError> {
    let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Io {
        path: path.into(),
        source,
    })?;
    parse_catalog(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, original: &str) -> Entry {
        Entry {
            name: name.into(),
            tool: std::sync::Arc::new(Tool::new("s", original, "does it")),
        }
    }

    #[test]
    fn a_renamed_tool_shows_its_original_name_and_another_does_not() {
        let renamed = entry("s__tool_1a2b3c4d", "天気を調べる");
        assert_eq!(renamed.renamed_from(), Some("天気を調べる"));
        assert_eq!(
            renamed.shown_name(),
            "s__tool_1a2b3c4d (originally \"天気を調べる\")"
        );
        let described = crate::present::describe(&renamed);
        assert!(
            described.starts_with("s__tool_1a2b3c4d (originally"),
            "{described}"
        );
        for (name, original) in [("s__echo", "echo"), ("echo", "echo")] {
            let plain = entry(name, original);
            assert_eq!(plain.renamed_from(), None);
            assert_eq!(plain.shown_name(), name);
        }
    }

    #[test]
    fn parses_the_benchmark_format() {
        let text = r#"{"servers":[{"name":"git","source":"x","tools":[
            {"name":"git_status","description":"Shows status","inputSchema":{"type":"object"}},
            {"name":"git_log"}]}]}"#;
        let tools = parse_catalog(text, Path::new("c.json")).unwrap();
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].id(), "git/git_status");
        assert_eq!(tools[1].description, "");
        assert_eq!(tools[1].input_schema, Schema::default());
    }

    #[test]
    fn bad_catalog_names_file_line_and_column() {
        let err = parse_catalog("{\n \"servers\": [\n  {\"name\": 3}]}", Path::new("c.json"))
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("c.json:3:"), "{msg}");
    }
}
