//! Plain data types the policy modules work on, mirroring the WIT records.

/// Tool or resource (WIT `tool-kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    Tool,
    Resource,
    /// A server's skill: ranked by its name and description, never named.
    Skill,
}

/// One catalog entry before naming (WIT `tool`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tool {
    pub server: String,
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: String,
    pub kind: Kind,
    pub resource_uri: Option<String>,
}

impl Tool {
    /// A tool with just a server, a name and a description (tests and fixtures).
    pub fn new(server: &str, name: &str, description: &str) -> Self {
        Tool {
            server: server.into(),
            name: name.into(),
            description: description.into(),
            input_schema: "{}".into(),
            ..Default::default()
        }
    }
}

/// A catalog entry with its agent-facing name (WIT `entry`).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub name: String,
    pub tool: Tool,
}

/// Errors returned as values (the subset of WIT `plugin-error` a policy produces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyError {
    InvalidInput(String),
    InvalidPattern(String),
}
