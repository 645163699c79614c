//! Search by meaning: the embedding model `settings.search.model` names, run
//! natively on threads of its own, and the vectors it made (see
//! [`vectors`]). Guests reach it through `mcpw:plugin/embed`: a query is
//! embedded while the guest waits; a catalog's texts are embedded in the
//! background, and until they all have vectors the answer is "pending" and
//! search ranks by words. When a background run ends, [`Embeddings::status`]
//! moves on and the host builds its search index again.

mod model;
mod source;
pub mod vectors;

pub use model::{Model, ModelError};
pub use source::ModelSource;

use crate::plugin::{EmbedError, EmbedModel, Urgency};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use vectors::{Key, Vectors};

/// The most texts embedded while a guest waits.
const MAX_NOW: usize = 64;
/// Texts embedded together in the background: long enough batches to use
/// the matrix kernels well, short enough to report progress often.
const BATCH: usize = 32;

/// Where background embedding stands, as `mcpw status` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The model's identity, once its files were read.
    pub model: Option<String>,
    /// The model as configured (its id or folder name).
    pub name: String,
    /// The model is mcpw's default, not one the user named.
    pub default: bool,
    /// Nothing is fetched, loaded or computed before the first search.
    pub waiting_for_search: bool,
    /// Texts of the last background request with a vector.
    pub done: u32,
    /// Texts of the last background request.
    pub total: u32,
    /// A background run is under way.
    pub busy: bool,
    /// Background runs finished (the host builds its index again after each).
    pub generation: u64,
    /// Answers of "pending" given so far.
    pub pendings: u64,
    /// Why the model cannot be used, once that is known.
    pub error: Option<String>,
}

impl Status {
    /// How search ranks, in one line (`mcpw status`, the proxy's status).
    pub fn describe(&self) -> String {
        let model = self.model.as_deref().unwrap_or(&self.name);
        let model = match self.default {
            true => format!("{model}, the default model"),
            false => model.to_string(),
        };
        match &self.error {
            Some(e) => format!("Search: by words only: {model} cannot be used ({e})"),
            None if self.waiting_for_search => format!(
                "Search: by words, then by words and meaning once {model} is ready (fetched and loaded in the background from the first search on)"
            ),
            None if self.busy && self.done == self.total => {
                format!("Search: by words while {model} loads")
            }
            None if self.busy => format!(
                "Search: by words while tool vectors are computed: {} of {} ready ({model})",
                self.done, self.total
            ),
            None if self.total == 0 => format!(
                "Search: by words and meaning ({model}), once the tool vectors are computed at the first search"
            ),
            None => format!(
                "Search: by words and meaning ({model}, {} tool vectors)",
                self.total
            ),
        }
    }
}

/// What the model's files say of it.
#[derive(Clone, Debug)]
struct Described {
    info: EmbedModel,
}

/// The texts waiting for vectors.
#[derive(Default)]
struct Queue {
    texts: VecDeque<(Key, String)>,
    queued: std::collections::HashSet<Key>,
    worker: bool,
    /// The first search came: background requests are served from now on.
    armed: bool,
    /// The last background request before it, served then.
    deferred: Option<Vec<String>>,
}

/// One configured model and its vectors.
pub struct Embeddings {
    source: ModelSource,
    /// Where vector files go.
    dir: PathBuf,
    shared: Option<Arc<crate::team_state::SharedState>>,
    runtime: tokio::runtime::Handle,
    described: OnceLock<Result<Described, String>>,
    model: OnceLock<Result<Arc<Model>, String>>,
    vectors: Mutex<Option<Vectors>>,
    queue: Mutex<Queue>,
    status: tokio::sync::watch::Sender<Status>,
}

impl Embeddings {
    /// The model `source`, with vectors kept in `dir` (and in `shared`).
    /// Reads nothing yet. Must be made inside a tokio runtime.
    pub fn new(
        source: ModelSource,
        dir: PathBuf,
        shared: Option<Arc<crate::team_state::SharedState>>,
    ) -> Arc<Embeddings> {
        let status = Status {
            name: source.name.clone(),
            default: source.default,
            waiting_for_search: true,
            ..Status::default()
        };
        Arc::new(Embeddings {
            source,
            dir,
            shared,
            runtime: tokio::runtime::Handle::current(),
            described: OnceLock::new(),
            model: OnceLock::new(),
            vectors: Mutex::new(None),
            queue: Mutex::new(Queue::default()),
            status: tokio::sync::watch::Sender::new(status),
        })
    }

    /// Serves background requests from now on: the first search came, so
    /// the model is fetched and loaded, and the vectors asked for so far are
    /// computed, all on a thread of their own. Until then nothing was read:
    /// a gateway that is never searched never holds the model.
    pub fn arm(self: &Arc<Self>) {
        let deferred = {
            let mut queue = self.queue.lock().expect("queue");
            if std::mem::replace(&mut queue.armed, true) {
                return;
            }
            queue.deferred.take()
        };
        self.status.send_modify(|s| {
            s.waiting_for_search = false;
            s.busy = true;
        });
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("mcpw-embed-arm".into())
            .spawn(move || {
                if let Some(texts) = deferred
                    && let Err(EmbedError::Model(e)) = me.background(&texts)
                {
                    me.status.send_modify(|s| s.error = Some(e));
                }
                // Runs the model's load when no texts needed a vector.
                me.start_worker();
            });
        if let Err(e) = spawned {
            self.status.send_modify(|s| {
                s.busy = false;
                s.error = Some(format!("cannot start embedding: {e}"));
            });
        }
    }

    /// Are the model's files here (no fetch needed)?
    pub fn at_hand(&self) -> bool {
        self.source.present()
    }

    /// Fetches and loads the model now, waiting for it (commands a person
    /// runs once, which rank by meaning or say why not).
    pub fn load(&self) -> Result<(), EmbedError> {
        self.loaded().map(|_| ())
    }

    /// Where background embedding stands; changes as it goes.
    pub fn status(&self) -> tokio::sync::watch::Receiver<Status> {
        self.status.subscribe()
    }

    /// The model as guests see it, when its files are at hand. Blocking.
    pub fn model(&self) -> Option<EmbedModel> {
        self.described().ok().map(|d| d.info)
    }

    /// Reads what the files say, once they are present (a model still to
    /// fetch is not described yet, and not remembered as such).
    fn described(&self) -> Result<Described, Option<String>> {
        if let Some(d) = self.described.get() {
            return d.clone().map_err(Some);
        }
        if !self.source.present() {
            return Err(None);
        }
        let d = self
            .described
            .get_or_init(|| {
                let identity = self.source.identity().map_err(|e| e.to_string())?;
                let (dimension, max_tokens) =
                    model::shape(&self.source.folder).map_err(|e| e.to_string())?;
                self.status
                    .send_modify(|s| s.model = Some(identity.clone()));
                Ok(Described {
                    info: EmbedModel {
                        id: identity,
                        dimension: dimension as u32,
                        max_tokens: max_tokens as u32,
                    },
                })
            })
            .clone();
        d.map_err(Some)
    }

    /// The loaded model: fetched and read on first need. Blocking.
    fn loaded(&self) -> Result<Arc<Model>, EmbedError> {
        self.model
            .get_or_init(|| {
                self.source
                    .fetch(&self.runtime)
                    .map_err(|e| e.to_string())?;
                let started = std::time::Instant::now();
                let model = Model::load(&self.source.folder).map_err(|e| e.to_string())?;
                tracing::info!(
                    "loaded the embedding model {} in {:.0?}",
                    self.source.name,
                    started.elapsed()
                );
                Ok(Arc::new(model))
            })
            .clone()
            .map_err(EmbedError::Model)
    }

    /// One unit vector per text; see [`Urgency`]. Blocking.
    pub fn embed(
        self: &Arc<Self>,
        texts: &[String],
        urgency: Urgency,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        match urgency {
            Urgency::Now => self.now(texts),
            Urgency::Background => self.background(texts),
        }
    }

    fn now(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.len() > MAX_NOW {
            return Err(EmbedError::InvalidInput(format!(
                "{} texts asked for now: at most {MAX_NOW}; ask for the rest in the background",
                texts.len()
            )));
        }
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        self.loaded()?
            .embed(&texts)
            .map_err(|e| EmbedError::Model(e.to_string()))
    }

    fn background(self: &Arc<Self>, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if let Some(error) = &self.status.borrow().error {
            return Err(EmbedError::Model(error.clone()));
        }
        if let Some(pending) = self.defer(texts) {
            return Err(pending);
        }
        let keys: Vec<Key> = texts.iter().map(|t| vectors::key(t)).collect();
        let missing: Vec<usize> = match self.described() {
            Ok(d) => {
                let mut slot = self.vectors.lock().expect("vectors");
                let vectors = self.vectors_in(&mut slot, &d);
                let unknown = |v: &mut Vectors| -> Vec<usize> {
                    (0..keys.len())
                        .filter(|&i| v.get(&keys[i]).is_none())
                        .collect()
                };
                let mut missing = unknown(vectors);
                if !missing.is_empty() {
                    let asked: Vec<Key> = missing.iter().map(|&i| keys[i]).collect();
                    if vectors.fetch_shared(&asked) > 0 {
                        missing = unknown(vectors);
                    }
                }
                if missing.is_empty() {
                    let out = keys
                        .iter()
                        .map(|k| vectors.get(k).expect("known").to_vec())
                        .collect();
                    drop(slot);
                    let n = texts.len() as u32;
                    self.status.send_modify(|s| {
                        s.done = n;
                        s.total = n;
                    });
                    // Queries will need the model: load it now, not at the first one.
                    self.warm();
                    return Ok(out);
                }
                missing
            }
            Err(Some(error)) => return Err(EmbedError::Model(error)),
            // Not fetched yet: every text waits for the fetch.
            Err(None) => (0..texts.len()).collect(),
        };
        let (done, total) = ((texts.len() - missing.len()) as u32, texts.len() as u32);
        {
            let mut queue = self.queue.lock().expect("queue");
            for &i in &missing {
                if queue.queued.insert(keys[i]) {
                    queue.texts.push_back((keys[i], texts[i].clone()));
                }
            }
        }
        self.status.send_modify(|s| {
            s.done = done;
            s.total = total;
            s.pendings += 1;
        });
        self.start_worker();
        Err(EmbedError::Pending { done, total })
    }

    /// Before the first search, keeps `texts` for it and answers "pending"
    /// (see [`Embeddings::arm`]); after it, `None`.
    fn defer(&self, texts: &[String]) -> Option<EmbedError> {
        let mut queue = self.queue.lock().expect("queue");
        if queue.armed {
            return None;
        }
        queue.deferred = Some(texts.to_vec());
        let total = texts.len() as u32;
        self.status.send_modify(|s| {
            s.done = 0;
            s.total = total;
            s.pendings += 1;
        });
        Some(EmbedError::Pending { done: 0, total })
    }

    /// Starts the background run unless one is under way: it embeds the
    /// queue and makes sure the model is loaded.
    fn start_worker(self: &Arc<Self>) {
        if std::mem::replace(&mut self.queue.lock().expect("queue").worker, true) {
            return;
        }
        self.status.send_modify(|s| s.busy = true);
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("mcpw-embed".into())
            .spawn(move || me.work());
        if let Err(e) = spawned {
            self.queue.lock().expect("queue").worker = false;
            self.status.send_modify(|s| {
                s.busy = false;
                s.error = Some(format!("cannot start embedding: {e}"));
            });
        }
    }

    /// The model's vectors in `slot`, made on first need.
    fn vectors_in<'a>(&self, slot: &'a mut Option<Vectors>, d: &Described) -> &'a mut Vectors {
        slot.get_or_insert_with(|| {
            Vectors::new(
                &d.info.id,
                d.info.dimension as usize,
                &self.dir,
                self.shared.clone(),
            )
        })
    }

    /// Loads the model in the background run, if nothing has yet.
    fn warm(self: &Arc<Self>) {
        if self.model.get().is_none() {
            self.start_worker();
        }
    }

    /// The background run: embeds the queue to its end (texts queued
    /// meanwhile too), makes sure the model is loaded, for queries need it
    /// even when every text's vector was cached, then saves.
    fn work(self: Arc<Self>) {
        let mut failed = None;
        loop {
            while failed.is_none() {
                let Some(batch) = self.next_batch() else {
                    break;
                };
                failed = self.embed_batch(&batch).err();
            }
            let failed = failed
                .take()
                .or_else(|| self.loaded().err().map(|e| e.to_string()));
            if let Some(vectors) = self.vectors.lock().expect("vectors").as_mut() {
                vectors.save();
            }
            let mut queue = self.queue.lock().expect("queue");
            if failed.is_none() && !queue.texts.is_empty() {
                continue;
            }
            queue.texts.clear();
            queue.queued.clear();
            queue.worker = false;
            if let Some(e) = &failed {
                tracing::warn!("search ranks by words only: {e}");
            }
            // Under the queue's lock: a run started after this one's end
            // marks itself busy only after this.
            self.status.send_modify(|s| {
                s.busy = false;
                s.generation += 1;
                s.error = failed;
            });
            return;
        }
    }

    /// The next texts to embed together, shortest first: a batch is padded
    /// to its longest text, and in catalog order one long description pads
    /// 31 short ones.
    fn next_batch(&self) -> Option<Vec<(Key, String)>> {
        let mut queue = self.queue.lock().expect("queue");
        if queue.texts.is_empty() {
            return None;
        }
        queue
            .texts
            .make_contiguous()
            .sort_by_key(|(_, text)| text.len());
        let n = queue.texts.len().min(BATCH);
        Some(queue.texts.drain(..n).collect())
    }

    /// Embeds one batch and keeps its vectors.
    fn embed_batch(&self, batch: &[(Key, String)]) -> Result<(), String> {
        let model = self.loaded().map_err(|e| e.to_string())?;
        let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
        let made = model.embed(&texts).map_err(|e| e.to_string())?;
        if let Ok(d) = self.described() {
            let mut slot = self.vectors.lock().expect("vectors");
            let vectors = self.vectors_in(&mut slot, &d);
            for ((k, _), v) in batch.iter().zip(made) {
                vectors.insert(*k, Arc::from(v));
            }
        }
        let n = batch.len() as u32;
        self.status
            .send_modify(|s| s.done = (s.done + n).min(s.total));
        Ok(())
    }

    /// Waits until no background run is under way.
    pub async fn idle(&self) {
        let mut status = self.status.subscribe();
        let _ = status.wait_for(|s| !s.busy).await;
    }
}
