//! What is kept for the session that got it, read back by reference
//! (`mcpw://results/<id>`) with `resources/read`: binary content a script saw
//! as a reference instead of its bytes, and whole results too big for the
//! agent to read at once (see [`crate::results`]). Each session has a shelf
//! of its own, gone with the session, so no other session can read it. Items
//! expire after a TTL; past a shelf's byte cap, or the cap of every shelf
//! together, the oldest go first.

use crate::clock::Instant;
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where kept items live: `mcpw://results/<id>`.
pub const URI_PREFIX: &str = "mcpw://results/";

/// One kept item: binary content as its server sent it (base64).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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

/// One part of a kept result, as its server sent it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Part {
    /// A text block.
    Text(Arc<str>),
    /// The structured content, as compact JSON.
    Structured(Arc<str>),
    /// Binary content: an image, audio, or a blob.
    Binary(Blob),
    /// An embedded resource's text, at its own URI.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type, when the server said.
        mime_type: Option<String>,
        /// Its text.
        text: Arc<str>,
    },
}

impl Part {
    fn size(&self) -> usize {
        match self {
            Part::Text(t) | Part::Structured(t) | Part::Resource { text: t, .. } => t.len(),
            Part::Binary(b) => b.base64.len(),
        }
    }
}

/// A whole result kept while the agent read a preview of it. Shared with
/// other replicas as its parts and source (its text is made again).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(into = "WholeRecord", from = "WholeRecord")]
pub struct Whole {
    /// Its parts, in order.
    pub parts: Vec<Part>,
    /// What ranges are read from: the text blocks one after the other, or
    /// the structured content when there are none.
    pub text: Arc<str>,
    /// The server and tool that gave it.
    pub from: String,
}

impl Whole {
    /// A result of `parts` from `from`.
    pub fn new(parts: Vec<Part>, from: String) -> Whole {
        let structured = parts.iter().find_map(|p| match p {
            Part::Structured(t) => Some(t.clone()),
            _ => None,
        });
        let texts: Vec<&Arc<str>> = parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) | Part::Resource { text: t, .. } => Some(t),
                _ => None,
            })
            .collect();
        let text = match (texts.as_slice(), structured) {
            ([], Some(s)) => s,
            ([one], _) => (*one).clone(),
            (many, _) => many
                .iter()
                .map(|t| &***t)
                .collect::<Vec<&str>>()
                .join("\n")
                .into(),
        };
        Whole { parts, text, from }
    }

    /// Its structured content (compact JSON), when it has some.
    pub fn structured(&self) -> Option<&str> {
        self.parts.iter().find_map(|p| match p {
            Part::Structured(t) => Some(&**t),
            _ => None,
        })
    }

    /// The bytes it holds.
    fn size(&self) -> usize {
        let parts: usize = self.parts.iter().map(Part::size).sum();
        let shared = self.parts.iter().any(|p| match p {
            Part::Text(t) | Part::Structured(t) | Part::Resource { text: t, .. } => {
                Arc::ptr_eq(t, &self.text)
            }
            Part::Binary(_) => false,
        });
        if shared || self.text.is_empty() {
            parts
        } else {
            parts + self.text.len()
        }
    }
}

/// A [`Whole`] as shared: its parts and where it came from.
#[derive(serde::Serialize, serde::Deserialize)]
struct WholeRecord {
    parts: Vec<Part>,
    from: String,
}

impl From<Whole> for WholeRecord {
    fn from(w: Whole) -> Self {
        WholeRecord {
            parts: w.parts,
            from: w.from,
        }
    }
}

impl From<WholeRecord> for Whole {
    fn from(r: WholeRecord) -> Self {
        Whole::new(r.parts, r.from)
    }
}

/// What an item on a shelf is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kept {
    /// Binary content a script saw as a reference.
    Blob(Blob),
    /// A whole result the agent read a preview of.
    Whole(Arc<Whole>),
}

impl Kept {
    fn size(&self) -> usize {
        match self {
            Kept::Blob(b) => b.base64.len(),
            Kept::Whole(w) => w.size(),
        }
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

impl From<crate::config::results::StoreSettings> for KeepLimits {
    fn from(s: crate::config::results::StoreSettings) -> Self {
        KeepLimits {
            ttl: s.ttl,
            shelf_bytes: s.session_bytes,
            total_bytes: s.total_bytes,
        }
    }
}

/// The limits `settings.resultStore` has when not set.
impl Default for KeepLimits {
    fn default() -> Self {
        crate::config::results::StoreSettings::default().into()
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
    what: Kept,
    size: usize,
}

impl Item {
    fn size(&self) -> usize {
        self.size
    }
}

impl Shelf {
    /// Keeps `blob`; its URI, or none when it is bigger than a shelf may hold,
    /// or than the process can hold once this shelf's older items are gone.
    pub fn keep(&self, blob: Blob) -> Option<String> {
        self.put(Kept::Blob(blob))
    }

    /// Keeps a whole result, as [`Shelf::keep`] does binary content.
    pub fn keep_whole(&self, whole: Whole) -> Option<String> {
        self.put(Kept::Whole(Arc::new(whole)))
    }

    /// The limits the shelf keeps under.
    pub fn limits(&self) -> KeepLimits {
        self.store.limits
    }

    fn put(&self, what: Kept) -> Option<String> {
        let limits = self.store.limits;
        let size = what.size();
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
            what,
            size,
        });
        Some(format!("{URI_PREFIX}{id}"))
    }

    /// The binary content at `uri`, if this shelf still keeps it.
    pub fn read(&self, uri: &str) -> Option<Blob> {
        match self.get(uri)? {
            Kept::Blob(b) => Some(b),
            Kept::Whole(_) => None,
        }
    }

    /// The whole result at `uri` (or its bare id), if this shelf still keeps it.
    pub fn whole(&self, uri: &str) -> Option<Arc<Whole>> {
        match self.get(uri)? {
            Kept::Whole(w) => Some(w),
            Kept::Blob(_) => None,
        }
    }

    /// The item at `uri` (or its bare id), if this shelf still keeps it.
    pub fn get(&self, uri: &str) -> Option<Kept> {
        let id = uri.strip_prefix(URI_PREFIX).unwrap_or(uri);
        let mut items = self.lock();
        self.expire(&mut items);
        items.iter().find(|i| i.id == id).map(|i| i.what.clone())
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
