//! Cache writes off the async threads and off every call's path: changes
//! queue up for a writer thread, which applies all that are waiting in one
//! locked read-merge-write (one fsync for a burst of connects).

use super::{CacheError, Entry, Failure, MetadataCache};
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::mpsc;

use super::Change;

enum Job {
    /// A change, and when it was made (ms since the epoch).
    Change(u64, Change),
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
        self.send(Job::Change(crate::clock::now_ms(), Change::Update(changes)));
    }

    /// Queues a server's failure to record (`Some`) or forget (`None`).
    pub fn record_failure(&self, server: &str, failure: Option<Failure>) {
        self.send(Job::Change(
            crate::clock::now_ms(),
            Change::Failure(server.to_string(), failure),
        ));
    }

    /// Waits until everything queued so far has been tried: written, or
    /// failed with a warning (changes that met a locked file are kept and
    /// tried again later).
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

/// How soon changes that met a locked file, or a shared state that did not
/// answer, are tried again.
const RETRY: std::time::Duration = std::time::Duration::from_secs(5);

fn write_loop(cache: &MetadataCache, rx: &mpsc::Receiver<Job>) {
    // Changes not written yet because another process held the file's lock,
    // or not shared yet because Redis did not answer: kept, and tried again
    // with the next changes or after a while.
    let mut unwritten: Vec<Change> = Vec::new();
    let mut unshared: Vec<(u64, Change)> = Vec::new();
    loop {
        let waiting = !unwritten.is_empty() || !unshared.is_empty();
        let first = if !waiting {
            rx.recv().ok()
        } else {
            match rx.recv_timeout(RETRY) {
                Ok(job) => Some(job),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    if let Err(e) = cache.apply(&unwritten) {
                        tracing::warn!("{e}; the last tool lists were not cached");
                    }
                    share(cache, &mut unshared);
                    return;
                }
            }
        };
        if first.is_none() && !waiting {
            return;
        }
        let mut flushed = Vec::new();
        for job in first.into_iter().chain(rx.try_iter()) {
            match job {
                Job::Change(at, c) => {
                    if cache.shared.is_some() {
                        unshared.push((at, c.clone()));
                    }
                    unwritten.push(c);
                }
                Job::Flushed(done) => flushed.push(done),
            }
        }
        if !unwritten.is_empty() {
            match cache.apply(&unwritten) {
                Ok(()) => unwritten.clear(),
                Err(e) if e.source.kind() == std::io::ErrorKind::TimedOut => {
                    tracing::warn!("{e}; kept in memory and written later");
                }
                Err(e) => {
                    tracing::warn!("{e}");
                    unwritten.clear();
                }
            }
        }
        share(cache, &mut unshared);
        // A flush waits for an attempt, not for another process to let go.
        for done in flushed {
            done();
        }
    }
}

/// Writes the changes to shared state; what Redis did not take is kept (it
/// says so in the logs, once) and written when it answers again.
fn share(cache: &MetadataCache, unshared: &mut Vec<(u64, Change)>) {
    let Some(state) = &cache.shared else { return };
    if unshared.is_empty() {
        return;
    }
    match super::team_state::apply(state, unshared) {
        Ok(()) => unshared.clear(),
        Err(e) => tracing::debug!("{e}; {} cache change(s) kept for later", unshared.len()),
    }
}

impl MetadataCache {
    /// Applies queued changes in order, in one locked write.
    pub(super) fn apply(&self, changes: &[Change]) -> Result<(), CacheError> {
        self.modify(|file| {
            for change in changes.iter().cloned() {
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
