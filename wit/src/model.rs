//! The roles' options and answers as plain Rust values: the same in every
//! world a guest may target.

use crate::{Entry, PrefixMode, Tool};

/// How the host wants tools named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamingOptions {
    /// `settings.toolPrefix`.
    pub prefix: PrefixMode,
    /// Names the host keeps for itself (`mcp`, `ToolSearch`, …).
    pub reserved: Vec<String>,
}

/// What becomes of one tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameOutcome {
    /// Exposed under this name.
    Named(String),
    /// Hidden: it would have the name of the tool at this earlier index.
    DuplicateOf(u32),
    /// Hidden: it would have this reserved name.
    Reserved(String),
}

/// A server's `directTools` setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerDirect {
    /// `true`: every tool.
    All,
    /// `false` or absent.
    None,
    /// These tool names.
    Only(Vec<String>),
}

/// What decides the direct tools.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirectOptions {
    /// `MCP_DIRECT_TOOLS`, when set: overrides the servers' settings.
    pub env_override: Option<String>,
    /// Each server's setting.
    pub servers: Vec<(String, ServerDirect)>,
}

/// Fixed when a search index is built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexOptions {
    /// Each server's `searchKeywords`.
    pub server_keywords: Vec<(String, Vec<String>)>,
    /// A scoring profile by name; `None` for the guest's default. A guest
    /// that does not know the profile answers `invalid-input`.
    pub profile: Option<String>,
}

/// How a query is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueryMode {
    /// Free text, and `select:a,b` for exact names.
    #[default]
    Keyword,
    /// A case-insensitive regular expression.
    Regex,
}

/// One query's options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchOptions {
    /// Most hits to return.
    pub limit: u32,
    /// How the query is read.
    pub mode: QueryMode,
    /// Only entries of this server.
    pub server: Option<String>,
}

impl Default for SearchOptions {
    /// Five hits, free text, every server: what a search asks unless told.
    fn default() -> Self {
        SearchOptions {
            limit: 5,
            mode: QueryMode::Keyword,
            server: None,
        }
    }
}

/// One search hit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Index into the entries the index was built from.
    pub index: u32,
    /// Higher is better.
    pub score: f32,
}

/// A hit with the need it answers: what [`crate::Ranking::find`] gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The hit.
    pub hit: Hit,
    /// The part of the query the hit answers, in the query's words, when
    /// the query states several needs; none for a single need.
    pub need: Option<String>,
}

impl From<Hit> for Found {
    fn from(hit: Hit) -> Found {
        Found { hit, need: None }
    }
}

impl Hit {
    /// The hits with a positive score, best first (ties by index), at most
    /// `limit`: what a ranking answers.
    pub fn best(scores: impl IntoIterator<Item = f32>, limit: u32) -> Vec<Hit> {
        let mut hits: Vec<Hit> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .map(|(i, score)| Hit {
                index: i as u32,
                score,
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        hits.truncate(limit as usize);
        hits
    }
}

impl Tool {
    /// The words of the tool's JSON Schema: parameter names, descriptions and
    /// enum choices, without the JSON punctuation (searchable text).
    pub fn schema_text(&self) -> String {
        schema_text(&self.input_schema)
    }
}

impl Entry {
    /// The words an agent would search this entry by: its name, the tool's
    /// title, description and schema text.
    pub fn search_text(&self) -> String {
        let t = &self.tool;
        format!(
            "{} {} {} {}",
            self.name,
            t.title.as_deref().unwrap_or_default(),
            t.description,
            t.schema_text()
        )
    }
}

/// The words of a JSON text, without its punctuation.
pub fn schema_text(schema: &str) -> String {
    schema
        .replace(['{', '}', '[', ']', '"', ':', ','], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_hits_drop_zeros_order_by_score_then_index_and_keep_the_limit() {
        let hits = Hit::best([0.0, 2.0, 1.0, 2.0, 3.0], 3);
        let order: Vec<u32> = hits.iter().map(|h| h.index).collect();
        assert_eq!(order, [4, 1, 3]);
        assert!(Hit::best([0.0, -1.0], 5).is_empty());
    }

    #[test]
    fn schema_text_keeps_the_words() {
        let s = r#"{"type":"object","properties":{"path":{"description":"File to read"}}}"#;
        assert_eq!(
            schema_text(s),
            "type object properties path description File to read"
        );
    }
}
