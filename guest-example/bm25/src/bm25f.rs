//! BM25F: one inverted index over several fields, each with a weight and its
//! own length normalisation. Term weights are computed at build time, so a
//! query only adds up postings.

use crate::tokens::tokenize;
use std::collections::HashMap;

/// A document's fields, as text.
#[derive(Clone, Debug, Default)]
pub struct Doc {
    /// The tool's own name.
    pub name: String,
    /// The server's name.
    pub server: String,
    /// Title and description.
    pub description: String,
    /// Parameter names and their descriptions.
    pub params: String,
}

/// Field weights and BM25 constants.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Weights of name, server, description, params.
    pub weights: [f32; 4],
    /// Length normalisation per field.
    pub b: [f32; 4],
    /// Term-frequency saturation.
    pub k1: f32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            weights: [3.0, 1.5, 1.0, 0.4],
            b: [0.3, 0.0, 0.75, 0.75],
            k1: 1.2,
        }
    }
}

/// The index.
pub struct Index {
    postings: HashMap<String, Vec<(u32, f32)>>,
    docs: usize,
}

impl Index {
    /// Indexes `docs`.
    pub fn build(docs: &[Doc], p: Params) -> Index {
        let fields: Vec<[Vec<String>; 4]> = docs
            .iter()
            .map(|d| {
                [
                    tokenize(&d.name),
                    tokenize(&d.server),
                    tokenize(&d.description),
                    tokenize(&d.params),
                ]
            })
            .collect();
        let n = docs.len().max(1) as f32;
        let mut avg = [0f32; 4];
        for f in &fields {
            for (i, t) in f.iter().enumerate() {
                avg[i] += t.len() as f32 / n;
            }
        }
        // Weighted, length-normalised term frequency per (term, doc).
        let mut tf: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
        for (d, f) in fields.iter().enumerate() {
            let mut local: HashMap<&str, f32> = HashMap::new();
            for (i, tokens) in f.iter().enumerate() {
                let norm = 1.0 - p.b[i] + p.b[i] * tokens.len() as f32 / avg[i].max(1e-6);
                for t in tokens {
                    *local.entry(t.as_str()).or_default() += p.weights[i] / norm;
                }
            }
            for (t, w) in local {
                tf.entry(t.to_string()).or_default().push((d as u32, w));
            }
        }
        let postings = tf
            .into_iter()
            .map(|(t, list)| {
                let df = list.len() as f32;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let scored = list
                    .into_iter()
                    .map(|(d, w)| (d, idf * w * (p.k1 + 1.0) / (w + p.k1)))
                    .collect();
                (t, scored)
            })
            .collect();
        Index {
            postings,
            docs: docs.len(),
        }
    }

    /// Scores of every document matching any query term (unsorted).
    pub fn scores(&self, query: &str) -> Vec<(u32, f32)> {
        let mut acc: HashMap<u32, f32> = HashMap::new();
        let mut terms = tokenize(query);
        terms.sort();
        terms.dedup();
        for t in terms {
            if let Some(list) = self.postings.get(&t) {
                for (d, s) in list {
                    *acc.entry(*d).or_default() += s;
                }
            }
        }
        acc.into_iter().collect()
    }

    /// Documents indexed.
    pub fn len(&self) -> usize {
        self.docs
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> Vec<Doc> {
        [
            (
                "createIssue",
                "github",
                "Create a new issue in a repository",
                "title body",
            ),
            (
                "list_issues",
                "github",
                "List issues of a repository",
                "state",
            ),
            (
                "send_message",
                "slack",
                "Send a message to a channel",
                "channel text",
            ),
            ("read_file", "filesystem", "Read a file from disk", "path"),
        ]
        .iter()
        .map(|(n, s, d, p)| Doc {
            name: n.to_string(),
            server: s.to_string(),
            description: d.to_string(),
            params: p.to_string(),
        })
        .collect()
    }

    fn top(q: &str) -> u32 {
        let idx = Index::build(&docs(), Params::default());
        let mut s = idx.scores(q);
        s.sort_by(|a, b| b.1.total_cmp(&a.1));
        s[0].0
    }

    #[test]
    fn camel_case_names_match_words() {
        assert_eq!(top("create issue"), 0);
        assert_eq!(top("issues list"), 1);
    }

    #[test]
    fn server_and_parameter_fields_count() {
        assert_eq!(top("slack"), 2);
        assert_eq!(top("path"), 3);
    }

    #[test]
    fn no_match_no_score() {
        assert!(
            Index::build(&docs(), Params::default())
                .scores("zebra")
                .is_empty()
        );
        assert!(Index::build(&[], Params::default()).scores("x").is_empty());
    }
}
