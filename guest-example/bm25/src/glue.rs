//! The `ranking` role over [`crate::bm25f`].

use crate::bm25f::{self, Doc};
use crate::fusion;
use mcpw_guest::embed::{self, EmbedError, Urgency};
use mcpw_guest::{Entry, Hit, IndexOptions, PluginError, QueryMode, Ranking, SearchOptions};

/// One index: the BM25F index plus what select/regex/server filters need.
pub struct Index {
    bm25: bm25f::Index,
    names: Vec<String>,
    descriptions: Vec<String>,
    servers: Vec<String>,
    /// Each tool's vector, one row after another, when the host has a model.
    vectors: Vec<f32>,
    dimension: usize,
}

/// The tools' vectors, when the host embeds (`embed` is granted to the
/// ranking role by default). Pending, denied or no model: words alone.
fn tool_vectors(entries: &[Entry]) -> (Vec<f32>, usize) {
    let texts: Vec<String> = entries
        .iter()
        .map(|e| {
            format!(
                "{} {}: {}",
                e.tool.server,
                e.tool.name.replace('_', " "),
                e.tool.description
            )
        })
        .collect();
    match embed::embed(&texts, Urgency::Background) {
        Ok(rows) => {
            let dimension = rows.first().map_or(0, Vec::len);
            (rows.into_iter().flatten().collect(), dimension)
        }
        Err(EmbedError::Denied(why)) => {
            mcpw_guest::log(
                mcpw_guest::host::log::Level::Warn,
                &format!("ranking by words: {why}"),
            );
            (Vec::new(), 0)
        }
        Err(_) => (Vec::new(), 0),
    }
}

impl Ranking for Index {
    fn build(entries: Vec<Entry>, options: IndexOptions) -> Result<Index, PluginError> {
        if let Some(p) = options.profile {
            return Err(PluginError::InvalidInput(format!(
                "unknown profile {p:?}: this guest has one scoring"
            )));
        }
        let keywords: std::collections::HashMap<&str, String> = options
            .server_keywords
            .iter()
            .map(|(server, keywords)| (server.as_str(), keywords.join(" ")))
            .collect();
        let docs: Vec<Doc> = entries
            .iter()
            .map(|e| Doc {
                name: e.tool.name.clone(),
                server: format!(
                    "{} {}",
                    e.tool.server,
                    keywords
                        .get(e.tool.server.as_str())
                        .map_or("", |k| k.as_str())
                ),
                description: format!(
                    "{} {}",
                    e.tool.title.clone().unwrap_or_default(),
                    e.tool.description
                ),
                params: e.tool.schema_text(),
            })
            .collect();
        let (vectors, dimension) = tool_vectors(&entries);
        Ok(Index {
            vectors,
            dimension,
            bm25: bm25f::Index::build(&docs, bm25f::Params::default()),
            names: entries.iter().map(|e| e.name.clone()).collect(),
            descriptions: entries.iter().map(|e| e.tool.description.clone()).collect(),
            servers: entries.iter().map(|e| e.tool.server.clone()).collect(),
        })
    }

    fn search(&self, query: String, options: SearchOptions) -> Result<Vec<Hit>, PluginError> {
        let limit = options.limit as usize;
        let in_scope = |i: usize| {
            options
                .server
                .as_deref()
                .is_none_or(|s| self.servers[i] == s)
        };
        if options.mode == QueryMode::Regex {
            let re = regex_lite::RegexBuilder::new(&query)
                .case_insensitive(true)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| PluginError::InvalidPattern(e.to_string()))?;
            return Ok((0..self.names.len())
                .filter(|&i| {
                    in_scope(i)
                        && (re.is_match(&self.names[i]) || re.is_match(&self.descriptions[i]))
                })
                .take(limit)
                .map(|i| Hit {
                    index: i as u32,
                    score: 1.0,
                })
                .collect());
        }
        if let Some(list) = query.trim_start().strip_prefix("select:") {
            let mut hits: Vec<Hit> = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                if let Some(i) = self.names.iter().position(|n| n == name)
                    && in_scope(i)
                    && !hits.iter().any(|h| h.index as usize == i)
                    && hits.len() < limit
                {
                    hits.push(Hit {
                        index: i as u32,
                        score: 1.0,
                    });
                }
            }
            return Ok(hits);
        }
        let mut scored: Vec<(u32, f32)> = self
            .bm25
            .scores(&query)
            .into_iter()
            .filter(|(d, _)| in_scope(*d as usize))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        if self.dimension > 0
            && let Ok(mut q) = embed::embed(std::slice::from_ref(&query), Urgency::Now)
            && let Some(q) = q.pop()
        {
            let cosines = fusion::cosines(&self.vectors, self.dimension, &q);
            scored = fusion::fuse(&scored, &cosines, &in_scope);
        }
        scored.truncate(limit);
        Ok(scored
            .into_iter()
            .map(|(index, score)| Hit { index, score })
            .collect())
    }
}

mcpw_guest::ranking!(Index);
