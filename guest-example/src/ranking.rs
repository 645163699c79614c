//! Tool search: an index built once per catalog, then queried.
//!
//! Three query forms: `select:a,b` picks exact names; regex mode matches names and
//! descriptions; everything else is scored by the index's profile.

mod fasthash;
mod hybrid;
mod lexicon;
pub mod meaning;
mod needs;
mod pattern;
mod schema_text;
mod seed;
mod select;
mod shapes;
pub mod text;
mod typo;
mod writers;

use crate::model::{Entry, PolicyError};

/// The profile used when the host names none.
const DEFAULT_PROFILE: &str = hybrid::PROFILE;
/// Every profile this guest offers: the default scoring (words fused with
/// meaning when the host has a model), words alone, meaning alone, and the
/// seed's keyword scoring kept for compatibility.
const PROFILES: &[&str] = &[
    hybrid::PROFILE,
    meaning::WORDS,
    meaning::MEANING,
    seed::PROFILE,
];

// The role's options and answers, as the contract crate defines them.
pub use mcpw_guest::{Hit, IndexOptions, QueryMode as Mode, SearchOptions};

enum Scorer {
    Hybrid(hybrid::HybridIndex),
    Seed(seed::SeedIndex),
}

/// What the word scores are combined with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signals {
    /// Words, fused with meaning when there are vectors.
    Fused,
    /// Words alone.
    Words,
    /// Meaning alone, when there are vectors (else words).
    Meaning,
}

/// A search index over one catalog (WIT resource `index`).
pub struct Index {
    entries: Vec<Entry>,
    scorer: Scorer,
    signals: Signals,
    vectors: Option<meaning::Vectors>,
    weight: f32,
}

/// One hit with the parts of its score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Explained {
    pub hit: Hit,
    /// The word score (0 when no word matched).
    pub words: f32,
    /// The cosine to the query, when the index has vectors.
    pub meaning: Option<f32>,
    /// Which of the query's needs ([`Index::needs`]) it was found for, when
    /// the query states several.
    pub need: Option<usize>,
}

impl Index {
    /// Builds the index for the profile named in `options` (or the default one).
    pub fn build(entries: Vec<Entry>, options: IndexOptions) -> Result<Index, PolicyError> {
        let profile = options.profile.as_deref().unwrap_or(DEFAULT_PROFILE);
        let hybrid = || {
            Scorer::Hybrid(hybrid::HybridIndex::build(
                &entries,
                &options.server_keywords,
            ))
        };
        let (scorer, signals) = match profile {
            hybrid::PROFILE => (hybrid(), Signals::Fused),
            meaning::WORDS => (hybrid(), Signals::Words),
            meaning::MEANING => (hybrid(), Signals::Meaning),
            seed::PROFILE => (
                Scorer::Seed(seed::SeedIndex::build(&entries)),
                Signals::Words,
            ),
            other => {
                return Err(PolicyError::InvalidInput(format!(
                    "unknown ranking profile {other:?}; this guest offers: {}",
                    PROFILES.join(", ")
                )));
            }
        };
        Ok(Index {
            entries,
            scorer,
            signals,
            vectors: None,
            weight: meaning::WEIGHT,
        })
    }

    /// The texts to embed, one per entry, when this profile uses meaning.
    pub fn texts_to_embed(&self) -> Option<Vec<String>> {
        (self.signals != Signals::Words).then(|| {
            self.entries
                .iter()
                .map(|e| meaning::tool_text(&e.tool))
                .collect()
        })
    }

    /// Gives the index each entry's vector (rows in entry order); returns
    /// whether they fit.
    pub fn set_vectors(&mut self, rows: Vec<Vec<f32>>) -> bool {
        self.vectors = meaning::Vectors::new(rows, self.entries.len());
        self.vectors.is_some()
    }

    /// Does a query need its vector (the index has vectors to compare)?
    pub fn wants_query_vector(&self, query: &str, options: &SearchOptions) -> bool {
        self.vectors.is_some()
            && options.mode == Mode::Keyword
            && select::parse(query).is_none()
            && !query.trim().is_empty()
    }

    /// Sets the weight of meaning (for experiments; the default is
    /// [`meaning::WEIGHT`]).
    pub fn set_weight(&mut self, weight: f32) {
        self.weight = weight;
    }

    /// How many entries the index holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the index holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Answers one query by words: at most `options.limit` hits, best first.
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<Vec<Hit>, PolicyError> {
        self.search_with(query, options, None)
    }

    /// Answers one query, with its vector when the index has vectors.
    pub fn search_with(
        &self,
        query: &str,
        options: &SearchOptions,
        query_vector: Option<&[f32]>,
    ) -> Result<Vec<Hit>, PolicyError> {
        Ok(self
            .explain(query, options, query_vector)?
            .into_iter()
            .map(|e| e.hit)
            .collect())
    }

    /// As [`Index::search_with`], with each hit's word and meaning parts.
    pub fn explain(
        &self,
        query: &str,
        options: &SearchOptions,
        query_vector: Option<&[f32]>,
    ) -> Result<Vec<Explained>, PolicyError> {
        let in_scope = |i: usize| {
            options
                .server
                .as_deref()
                .is_none_or(|s| self.entries[i].tool.server == s)
        };
        let limit = options.limit as usize;
        if options.mode == Mode::Regex {
            return pattern::search(&self.entries, query, limit, &in_scope).map(plain);
        }
        if let Some(names) = select::parse(query) {
            return Ok(plain(select::search(
                &self.entries,
                &names,
                limit,
                &in_scope,
            )));
        }
        if query.trim().is_empty() {
            return Err(PolicyError::InvalidInput(
                "the search query is empty".into(),
            ));
        }
        let mut scored = match &self.scorer {
            Scorer::Hybrid(index) => index.score(query, &in_scope),
            Scorer::Seed(index) => index.score(query, &in_scope),
        };
        let (Some(vectors), Some(q)) = (&self.vectors, query_vector) else {
            if let Some(hits) = self.by_needs(query, &scored, &in_scope, limit) {
                return Ok(with_word_scores(hits, &scored));
            }
            top(&mut scored, limit);
            return Ok(plain(scored));
        };
        let weight = match self.signals {
            Signals::Meaning => 1.0,
            _ => self.weight,
        };
        let mut fused = meaning::fuse(&scored, vectors.cosines(q), weight, &in_scope);
        if self.signals == Signals::Meaning {
            // Meaning alone: the cosine itself is the score (same order).
            for h in &mut fused.hits {
                h.score = fused.meaning[h.index as usize];
            }
        }
        let mut hits = fused.hits;
        // Each need's best by its words, among the whole query's fused order
        // (a need's own meaning would take a vector per need).
        let hits: Vec<(Hit, Option<usize>)> = match self.by_needs(query, &hits, &in_scope, limit) {
            Some(by_needs) => by_needs,
            None => {
                top(&mut hits, limit);
                hits.into_iter().map(|h| (h, None)).collect()
            }
        };
        Ok(hits
            .into_iter()
            .map(|(hit, need)| Explained {
                hit,
                words: fused.words[hit.index as usize],
                meaning: Some(fused.meaning[hit.index as usize]),
                need,
            })
            .collect())
    }
}

impl Index {
    /// The needs a query states, in its order, when it states several
    /// (what [`Explained::need`] counts); none for one need.
    pub fn needs(query: &str) -> Vec<String> {
        let clauses = needs::split(query);
        if clauses.len() < 2 {
            Vec::new()
        } else {
            clauses
        }
    }

    /// A query that states several needs: the whole query's best hit, then
    /// the best of each need (searched alone), in rounds, then the whole
    /// query's order. Each hit comes with the need it is among the best of
    /// (the first such), if any.
    fn by_needs(
        &self,
        query: &str,
        whole: &[Hit],
        in_scope: &dyn Fn(usize) -> bool,
        limit: usize,
    ) -> Option<Vec<(Hit, Option<usize>)>> {
        let clauses = needs::split(query);
        if clauses.len() < 2 {
            return None;
        }
        let mut ranked = whole.to_vec();
        top(&mut ranked, limit);
        let bests: Vec<Vec<Hit>> = clauses
            .iter()
            .map(|clause| {
                let mut own = match &self.scorer {
                    Scorer::Hybrid(index) => index.score(clause, in_scope),
                    Scorer::Seed(index) => index.score(clause, in_scope),
                };
                top(&mut own, PER_NEED);
                own
            })
            .collect();
        let need_of = |h: &Hit| {
            bests
                .iter()
                .position(|b| b.iter().any(|o| o.index == h.index))
        };
        let mut out: Vec<Hit> = ranked.first().copied().into_iter().collect();
        for round in 0..PER_NEED {
            for best in bests.iter().filter_map(|b| b.get(round)) {
                if !out.iter().any(|h| h.index == best.index) {
                    out.push(*best);
                }
            }
        }
        for h in ranked {
            if out.len() >= limit {
                break;
            }
            if !out.iter().any(|o| o.index == h.index) {
                out.push(h);
            }
        }
        // Scores that keep this order, above the rest.
        let n = out.len() as f32;
        for (i, h) in out.iter_mut().enumerate() {
            h.score = n - i as f32;
        }
        out.truncate(limit);
        Some(out.into_iter().map(|h| (h, need_of(&h))).collect())
    }
}

/// How many of each need's own best hits go before the whole query's order
/// (in rounds: every need's first, then every need's second).
const PER_NEED: usize = 2;

/// Hits as they are: their score is their word score.
fn plain(hits: Vec<Hit>) -> Vec<Explained> {
    hits.into_iter()
        .map(|hit| Explained {
            hit,
            words: hit.score,
            meaning: None,
            need: None,
        })
        .collect()
}

/// Hits in the needs' order, each with its own word score from `scored`
/// (their scores only keep that order).
fn with_word_scores(hits: Vec<(Hit, Option<usize>)>, scored: &[Hit]) -> Vec<Explained> {
    let words = |i: u32| {
        scored
            .iter()
            .find(|h| h.index == i)
            .map_or(0.0, |h| h.score)
    };
    hits.into_iter()
        .map(|(hit, need)| Explained {
            hit,
            words: words(hit.index),
            meaning: None,
            need,
        })
        .collect()
}

/// Keeps the best `limit` hits, best first; equal scores keep catalog order.
fn top(hits: &mut Vec<Hit>, limit: usize) {
    let order = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index));
    if hits.len() > limit && limit > 0 {
        hits.select_nth_unstable_by(limit - 1, order);
    }
    hits.truncate(limit);
    hits.sort_unstable_by(order);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tool;

    pub(crate) fn catalog() -> Vec<Entry> {
        [
            (
                "playwright",
                "browser_take_screenshot",
                "Take a screenshot of the current page",
            ),
            (
                "github",
                "create_issue",
                "Create a new issue in a GitHub repository",
            ),
            (
                "github",
                "list_issues",
                "List issues in a GitHub repository",
            ),
            ("git", "git_status", "Shows the working tree status"),
            (
                "filesystem",
                "read_file",
                "Read the complete contents of a file",
            ),
        ]
        .iter()
        .map(|(s, t, d)| Entry {
            name: format!("{s}__{t}"),
            tool: Tool::new(s, t, d),
        })
        .collect()
    }

    fn index() -> Index {
        Index::build(catalog(), IndexOptions::default()).unwrap()
    }

    #[test]
    fn unknown_profile_is_an_error_value() {
        let opts = IndexOptions {
            profile: Some("nope".into()),
            ..Default::default()
        };
        assert!(matches!(
            Index::build(catalog(), opts),
            Err(PolicyError::InvalidInput(_))
        ));
    }

    #[test]
    fn empty_query_is_an_error_value() {
        assert!(matches!(
            index().search("  ", &SearchOptions::default()),
            Err(PolicyError::InvalidInput(_))
        ));
    }

    #[test]
    fn limit_is_respected_and_zero_means_nothing() {
        let idx = index();
        let opts = SearchOptions {
            limit: 1,
            ..Default::default()
        };
        assert_eq!(idx.search("issue", &opts).unwrap().len(), 1);
        let opts = SearchOptions {
            limit: 0,
            ..Default::default()
        };
        assert!(idx.search("issue", &opts).unwrap().is_empty());
    }

    /// The bench catalog (`tests/fixtures/catalog.json`, 1,287 real tools),
    /// as the host would hand it to the index.
    fn bench_catalog() -> Vec<Entry> {
        let text = include_str!("../../tests/fixtures/catalog.json");
        let catalog: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut entries = Vec::new();
        for s in catalog["servers"].as_array().unwrap() {
            let server = s["name"].as_str().unwrap();
            for t in s["tools"].as_array().unwrap() {
                let name = t["name"].as_str().unwrap();
                let description = t["description"].as_str().unwrap_or("");
                let mut tool = Tool::new(server, name, description);
                tool.input_schema = t["inputSchema"].to_string();
                entries.push(Entry {
                    name: format!("{}__{name}", server.replace('-', "_")),
                    tool,
                });
            }
        }
        entries
    }

    fn top5(index: &Index, query: &str) -> Vec<String> {
        let options = SearchOptions {
            limit: 5,
            ..Default::default()
        };
        let hits = index.search(query, &options).unwrap();
        hits.iter()
            .map(|h| {
                let tool = &index.entries[h.index as usize].tool;
                format!("{}/{}", tool.server, tool.name)
            })
            .collect()
    }

    #[test]
    fn each_need_of_a_task_reaches_the_top_5_before_one_needs_siblings_fill_it() {
        let index = Index::build(bench_catalog(), IndexOptions::default()).unwrap();
        // The whole task's words rank the first need's siblings and a notes
        // tool above any tool that writes a file.
        let task = "Get today's top 10 Hacker News stories and save their titles and links to ./digest/hn.md.";
        let top = top5(&index, task);
        assert!(top.iter().any(|t| t.starts_with("hackernews/")), "{top:?}");
        assert!(top.iter().any(|t| t.ends_with("/write_file")), "{top:?}");
        let task = "List the running Docker containers, grab the logs of the nginx one \
                    and save them to ./logs/nginx.log.";
        let top = top5(&index, task);
        assert!(
            top.contains(&"docker-mcp/list-containers".to_string()),
            "{top:?}"
        );
        assert!(top.iter().any(|t| t.ends_with("/write_file")), "{top:?}");
        // With meaning too (here every cosine alike, so the words decide).
        let mut fused = Index::build(bench_catalog(), IndexOptions::default()).unwrap();
        assert!(fused.set_vectors(vec![vec![1.0, 0.0]; fused.len()]));
        let task = "Get today's top 10 Hacker News stories and save their titles and links to ./digest/hn.md.";
        let options = SearchOptions {
            limit: 5,
            ..Default::default()
        };
        let hits = fused
            .search_with(task, &options, Some(&[1.0, 0.0]))
            .unwrap();
        let tools: Vec<&str> = hits
            .iter()
            .map(|h| fused.entries[h.index as usize].tool.name.as_str())
            .collect();
        assert!(tools.contains(&"write_file"), "{tools:?}");
        // One need: ranked by the whole query, as before.
        let one = "take a screenshot of the page";
        let whole = index.explain(one, &SearchOptions::default(), None).unwrap();
        let first = &index.entries[whole[0].hit.index as usize].tool;
        assert_eq!(
            top5(&index, one)[0],
            format!("{}/{}", first.server, first.name)
        );
    }

    /// Each hit of a task says which need it answers: the file writer the
    /// need to save, the stories' tool the need to get them; a single need
    /// gives none.
    #[test]
    fn a_tasks_hits_carry_the_need_they_answer() {
        let index = Index::build(bench_catalog(), IndexOptions::default()).unwrap();
        let task = "Get today's top 10 Hacker News stories and save their titles and links to ./digest/hn.md.";
        let needs = Index::needs(task);
        assert_eq!(needs.len(), 2, "{needs:?}");
        let options = SearchOptions {
            limit: 5,
            ..Default::default()
        };
        let hits = index.explain(task, &options, None).unwrap();
        let need_of = |name: &str| {
            let hit = hits
                .iter()
                .find(|e| index.entries[e.hit.index as usize].tool.name == name);
            hit.and_then(|e| e.need).map(|i| needs[i].as_str())
        };
        assert!(need_of("write_file").unwrap().contains("save"), "{hits:?}");
        let stories = hits
            .iter()
            .find(|e| index.entries[e.hit.index as usize].tool.server == "hackernews");
        assert!(needs[stories.and_then(|e| e.need).unwrap()].contains("Hacker News"));
        let one = index
            .explain("take a screenshot of the page", &options, None)
            .unwrap();
        assert!(one.iter().all(|e| e.need.is_none()));
        assert!(Index::needs("take a screenshot of the page").is_empty());
    }

    #[test]
    fn server_filter_limits_the_scope() {
        let opts = SearchOptions {
            server: Some("git".into()),
            ..Default::default()
        };
        let hits = index().search("status issue", &opts).unwrap();
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn empty_catalog_answers_nothing() {
        let idx = Index::build(Vec::new(), IndexOptions::default()).unwrap();
        assert!(idx.is_empty());
        assert!(
            idx.search("anything", &SearchOptions::default())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn top_orders_by_score_then_catalog_order() {
        let mut hits = vec![
            Hit {
                index: 3,
                score: 1.0,
            },
            Hit {
                index: 1,
                score: 2.0,
            },
            Hit {
                index: 0,
                score: 1.0,
            },
            Hit {
                index: 2,
                score: 0.5,
            },
        ];
        top(&mut hits, 3);
        assert_eq!(
            hits.iter().map(|h| h.index).collect::<Vec<_>>(),
            vec![1, 0, 3]
        );
    }
}
