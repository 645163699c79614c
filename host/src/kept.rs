//! Binary content kept for the session that got it: a script sees a reference
//! (`mcpw://results/<id>`) instead of the bytes, and the session reads them
//! back with `resources/read`. Each session has a shelf of its own, gone with
//! the session, so no other session can read it. Items expire after a TTL;
//! past a shelf's byte cap, or the cap of every shelf together, the oldest go
//! first.

use crate::clock::Instant;
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where kept items live: `mcpw://results/<id>`.
pub const URI_PREFIX: &str = "mcpw://results/";

/// One kept item: binary content as its server sent it (base64).
#[derive(Debug, Clone, PartialEq)]
pub struct Blob {
    /// Its MIME type.
    pub mime_type: String,
    /// Its bytes, base64 (kept encoded: it is read back encoded).
    pub base64: Arc<str>,
}

impl Blob {
    /// Its size decoded, in bytes.
    pub fn bytes(&self) -> usize {
        let padding = self.base64.bytes().rev().take_while(|&b| b == b'=').count();
        (self.base64.len() / 4 * 3).saturating_sub(padding)
    }
}

/// How long and how much a shelf keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeepLimits {
    /// An item is gone this long after it was kept.
    pub ttl: Duration,
    /// The bytes (encoded) one shelf holds at most.
    pub shelf_bytes: usize,
    /// The bytes every shelf of the process holds together at most.
    pub total_bytes: usize,
}

impl Default for KeepLimits {
    fn default() -> Self {
        KeepLimits {
            ttl: Duration::from_secs(30 * 60),
            shelf_bytes: 64 << 20,
            total_bytes: 256 << 20,
        }
    }
}

/// The shelves of one process: their limits and the bytes they hold together.
#[derive(Debug, Default)]
pub struct Store {
    limits: KeepLimits,
    held: Arc<AtomicUsize>,
    next: AtomicU64,
    /// Keys ids so that they cannot be guessed from one another.
    ids: std::collections::hash_map::RandomState,
}

impl Store {
    /// Shelves under `limits`.
    pub fn new(limits: KeepLimits) -> Arc<Store> {
        Arc::new(Store {
            limits,
            ..Store::default()
        })
    }

    /// A new, empty shelf (for one session).
    pub fn shelf(self: &Arc<Self>) -> Shelf {
        Shelf {
            store: self.clone(),
            items: Mutex::default(),
        }
    }

    /// The bytes every shelf holds now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    fn new_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut h = self.ids.build_hasher();
        h.write_u64(n);
        format!("{:016x}{n:x}", h.finish())
    }
}

/// One session's kept items, oldest first.
#[derive(Debug)]
pub struct Shelf {
    store: Arc<Store>,
    items: Mutex<VecDeque<Item>>,
}

#[derive(Debug)]
struct Item {
    id: String,
    kept: Instant,
    blob: Blob,
}

impl Item {
    fn size(&self) -> usize {
        self.blob.base64.len()
    }
}

impl Shelf {
    /// Keeps `blob`; its URI, or none when it is bigger than a shelf may hold,
    /// or than the process can hold once this shelf's older items are gone.
    pub fn keep(&self, blob: Blob) -> Option<String> {
        let limits = self.store.limits;
        let size = blob.base64.len();
        if size > limits.shelf_bytes.min(limits.total_bytes) {
            return None;
        }
        let mut items = self.lock();
        self.expire(&mut items);
        let mut mine: usize = items.iter().map(Item::size).sum();
        let others = self.store.held().saturating_sub(mine);
        if others + size > limits.total_bytes {
            return None; // other sessions hold the rest: evict nothing
        }
        while mine + size > limits.shelf_bytes || self.store.held() + size > limits.total_bytes {
            let Some(old) = items.pop_front() else {
                return None; // other sessions kept more meanwhile
            };
            mine -= old.size();
            self.release(old.size());
        }
        self.store.held.fetch_add(size, Ordering::AcqRel);
        let id = self.store.new_id();
        items.push_back(Item {
            id: id.clone(),
            kept: Instant::now(),
            blob,
        });
        Some(format!("{URI_PREFIX}{id}"))
    }

    /// The item at `uri`, if this shelf still keeps it.
    pub fn read(&self, uri: &str) -> Option<Blob> {
        let id = uri.strip_prefix(URI_PREFIX)?;
        let mut items = self.lock();
        self.expire(&mut items);
        items.iter().find(|i| i.id == id).map(|i| i.blob.clone())
    }

    /// How many items the shelf keeps now.
    pub fn len(&self) -> usize {
        let mut items = self.lock();
        self.expire(&mut items);
        items.len()
    }

    /// Whether the shelf keeps nothing now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn expire(&self, items: &mut VecDeque<Item>) {
        let ttl = self.store.limits.ttl;
        while items.front().is_some_and(|i| i.kept.elapsed() >= ttl) {
            if let Some(old) = items.pop_front() {
                self.release(old.size());
            }
        }
    }

    fn release(&self, size: usize) {
        self.store.held.fetch_sub(size, Ordering::AcqRel);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Item>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Shelf {
    fn drop(&mut self) {
        let held: usize = self.lock().iter().map(Item::size).sum();
        self.release(held);
    }
}

#[cfg(test)]
mod tests;
