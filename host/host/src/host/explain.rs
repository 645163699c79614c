//! A search's hits with each signal's part: the score by words alone and by
//! meaning alone, from the ranking guest's one-signal profiles (`words`,
//! `meaning`), built once per catalog snapshot on first need. A ranking
//! guest without those profiles has no parts.

use super::{EntryRef, Host, HostError, joined};
use crate::plugin::{IndexOptions, SearchIndex, SearchOptions};
use std::collections::HashMap;
use std::sync::Arc;

/// A hit and its parts.
pub struct ExplainedHit {
    /// The tool (or skill).
    pub entry: EntryRef,
    /// Its score in the ranking searched with.
    pub score: f32,
    /// The need of the query it answers, when the query states several.
    pub need: Option<String>,
    /// Its score by words alone (none: the guest has no such profile).
    pub words: Option<f32>,
    /// Its score by meaning alone (none: no model, vectors not ready, or no
    /// such profile).
    pub meaning: Option<f32>,
}

/// The one-signal indexes of one snapshot.
#[derive(Default)]
pub(super) struct Signals {
    /// The snapshot they index, and whether meaning was ready then.
    of: Option<(u64, bool)>,
    words: Option<Arc<SearchIndex>>,
    meaning: Option<Arc<SearchIndex>>,
}

impl Host {
    /// The hits of `query`, with each signal's part.
    pub async fn explain(
        &self,
        query: &str,
        options: SearchOptions,
    ) -> Result<Vec<ExplainedHit>, HostError> {
        let hits = self.search_refs(query, options.clone()).await?;
        let (words, meaning) = self.signal_indexes().await;
        let part = |index: Option<Arc<SearchIndex>>| {
            let (query, options) = (query.to_string(), options.clone());
            async move {
                let index = index?;
                let found = tokio::task::spawn_blocking(move || index.scores(&query, &options));
                joined(found.await).ok()?.ok()
            }
        };
        let (words, meaning) = (part(words).await, part(meaning).await);
        let of = |parts: &Option<HashMap<usize, f32>>, i: usize| {
            parts.as_ref().map(|p| p.get(&i).copied().unwrap_or(0.0))
        };
        Ok(hits
            .into_iter()
            .map(|hit| {
                let i = hit.entry.index;
                ExplainedHit {
                    words: of(&words, i),
                    meaning: of(&meaning, i),
                    entry: hit.entry,
                    score: hit.score,
                    need: hit.need,
                }
            })
            .collect())
    }

    /// The `words` and `meaning` indexes of the current snapshot, built on
    /// first need (meaning only once its vectors are ready).
    async fn signal_indexes(&self) -> (Option<Arc<SearchIndex>>, Option<Arc<SearchIndex>>) {
        let Ok(snapshot) = self.snapshot().await else {
            return (None, None);
        };
        let meaning_ready = self
            .embedding_status()
            .is_some_and(|s| s.error.is_none() && !s.busy && s.model.is_some());
        let mut signals = self.signals.lock().await;
        if signals.of != Some((snapshot.version(), meaning_ready)) {
            let build = |profile: &str| {
                let (policy, entries) = (self.policy.clone(), snapshot.searchable().clone());
                let options = IndexOptions {
                    profile: Some(profile.to_string()),
                    ..snapshot.index_options.clone()
                };
                async move {
                    let built = tokio::task::spawn_blocking(move || policy.index(entries, options));
                    joined(built.await).ok()?.ok().map(Arc::new)
                }
            };
            *signals = Signals {
                of: Some((snapshot.version(), meaning_ready)),
                words: build("words").await,
                meaning: match meaning_ready {
                    true => build("meaning").await,
                    false => None,
                },
            };
        }
        (signals.words.clone(), signals.meaning.clone())
    }
}
