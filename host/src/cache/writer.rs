//! Cache writes off the async threads and off every call's path: changes
//! queue up for a writer thread, which applies all that are waiting in one
//! locked read-merge-write (one fsync for a burst of connects).

use super::{CacheError, Entry, Failure, MetadataCache};
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::mpsc;

/// One queued change.
pub(super) enum Change {
    /// Entries stored (`Some`) or removed (`None`); either way the server's failure goes.
    Update(BTreeMap<String, Option<Entry>>),
    /// A failure recorded (`Some`) or forgotten (`None`).
    Failure(String, Option<Failure>),
}

enum Job {
    Change(Change),
    /// Called once every change queued before it is written.
    Flushed(Box<dyn FnOnce() + Send>),
}

/// The writer of one cache file. Its thread starts with the first change and
/// ends when the writer is dropped, after writing what is queued.
pub struct CacheWriter {
    cache: MetadataCache,
    queue: OnceLock<mpsc::Sender<Job>>,
}

impl CacheWriter {
    /// A writer for `cache`.
    pub fn new(cache: MetadataCache) -> CacheWriter {
        CacheWriter {
            cache,
            queue: OnceLock::new(),
        }
    }

    /// Queues entries to store (`Some`) or remove (`None`).
    pub fn update(&self, changes: BTreeMap<String, Option<Entry>>) {
        self.send(Job::Change(Change::Update(changes)));
    }

    /// Queues a server's failure to record (`Some`) or forget (`None`).
    pub fn record_failure(&self, server: &str, failure: Option<Failure>) {
        self.send(Job::Change(Change::Failure(server.to_string(), failure)));
    }

    /// Waits until everything queued so far is written (or has failed, with a warning).
    pub async fn flush(&self) {
        if self.queue.get().is_none() {
            return;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Job::Flushed(Box::new(move || {
            let _ = tx.send(());
        })));
        let _ = rx.await;
    }

    /// Waits, blocking, at most `limit` for everything queued so far to be written.
    pub fn flush_blocking(&self, limit: std::time::Duration) {
        if self.queue.get().is_none() {
            return;
        }
        let (tx, rx) = mpsc::channel();
        self.send(Job::Flushed(Box::new(move || {
            let _ = tx.send(());
        })));
        let _ = rx.recv_timeout(limit);
    }

    fn send(&self, job: Job) {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel();
            let cache = self.cache.clone();
            std::thread::Builder::new()
                .name("mcpw-cache-writer".into())
                .spawn(move || write_loop(&cache, &rx))
                .expect("a thread can be started");
            tx
        });
        // The thread only ends when this sender is gone: sending cannot fail.
        let _ = queue.send(job);
    }
}

fn write_loop(cache: &MetadataCache, rx: &mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut changes = Vec::new();
        let mut flushed = Vec::new();
        for job in std::iter::once(first).chain(rx.try_iter()) {
            match job {
                Job::Change(c) => changes.push(c),
                Job::Flushed(done) => flushed.push(done),
            }
        }
        if !changes.is_empty()
            && let Err(e) = cache.apply(changes)
        {
            tracing::warn!("{e}");
        }
        for done in flushed {
            done();
        }
    }
}

impl MetadataCache {
    /// Applies queued changes in order, in one locked write.
    pub(super) fn apply(&self, changes: Vec<Change>) -> Result<(), CacheError> {
        self.modify(|file| {
            for change in changes {
                match change {
                    Change::Update(entries) => {
                        for (name, entry) in entries {
                            file.failures.remove(&name);
                            match entry {
                                Some(e) => file.servers.insert(name, e),
                                None => file.servers.remove(&name),
                            };
                        }
                    }
                    Change::Failure(server, Some(f)) => {
                        file.failures.insert(server, f);
                    }
                    Change::Failure(server, None) => {
                        file.failures.remove(&server);
                    }
                }
            }
        })
    }
}
