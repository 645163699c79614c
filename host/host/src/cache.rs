//! The metadata cache: each server's tools and resources as last listed, so that
//! start-up knows every tool without connecting to anything.
//!
//! `{version, servers: {name: {configHash, tools, resources, cachedAt}}}` under
//! `$XDG_CACHE_HOME/mcpw/metadata.json`. An entry is valid while its `configHash`
//! (sha256 over the server's identity fields, as written) matches and it is under
//! 7 days old. Original MCP names are stored, so naming changes never invalidate
//! it. Writes lock a sibling lock file, re-read, merge, write a temp file and
//! rename it over: concurrent mcpw processes neither corrupt the file nor drop
//! each other's entries. A corrupt file is set aside and rebuilt. The same file
//! records each server's last failed connect (`failures`), so that every mcpw
//! process honours the backoff and can say what went wrong. With shared state
//! ([`crate::team_state`]) the same entries and failures are kept in Redis too,
//! where every replica finds them.

mod team_state;
mod writer;

pub use writer::CacheWriter;

use crate::clock::now_ms;
use crate::team_state::SharedState;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::time::Duration;

/// The file format version.
pub const VERSION: u32 = 1;
/// How long an entry stays valid.
const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// One server's cached listing.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Hash of the identity fields it was listed under.
    pub config_hash: String,
    /// MCP tools as the server listed them, kept as JSON text: every start
    /// reads the whole cache, and most schemas are never looked into.
    pub tools: Vec<Box<RawValue>>,
    /// MCP resources as the server listed them.
    #[serde(default)]
    pub resources: Vec<Value>,
    /// MCP resource templates as the server listed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_templates: Vec<Value>,
    /// MCP prompts as the server listed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<Value>,
    /// Skills (SEP-2640) as the server listed them, each file's digest with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<Value>,
    /// The server answers `resources/directory/read`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub directory_read: bool,
    /// When it was listed, in milliseconds since the Unix epoch.
    pub cached_at: u64,
    /// The MCP revision the server negotiated then: one of the `initialize`
    /// era means the next connection skips the `server/discover` probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

/// A server's last failed connect, so that another mcpw process honours its
/// backoff and `mcpw status` can say what went wrong.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    /// [`definition_hash`] of the definition it failed under (an edited one retries at once).
    pub config_hash: String,
    /// When, in milliseconds since the Unix epoch.
    pub at: u64,
    /// The error.
    pub error: String,
    /// It answered 401/403.
    #[serde(default)]
    pub needs_auth: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    #[serde(deserialize_with = "readable_entries")]
    servers: BTreeMap<String, Entry>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    failures: BTreeMap<String, Failure>,
}

/// The servers' entries, but for those that cannot be read: each is dropped
/// with a warning (its server is listed again), and the rest are kept.
fn readable_entries<'de, D>(deserializer: D) -> Result<BTreeMap<String, Entry>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let raw = BTreeMap::<String, Box<RawValue>>::deserialize(deserializer)?;
    Ok(raw
        .into_iter()
        .filter_map(|(server, entry)| match serde_json::from_str(entry.get()) {
            Ok(entry) => Some((server, entry)),
            Err(e) => {
                tracing::warn!(
                    "the cache entry of server \"{server}\" cannot be read ({e}); it is dropped and the server will be listed again"
                );
                None
            }
        })
        .collect())
}

/// A cache file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the metadata cache {path}: {source}")]
pub struct CacheError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(
                sorted
                    .into_iter()
                    .map(|(k, v)| (k.clone(), v))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

fn sha256_hex(v: &impl Serialize) -> String {
    let text = serde_json::to_string(v).unwrap_or_default();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The sha256 of a server definition's identity fields, with object keys sorted so
/// that reordering a config does not invalidate the cache.
pub fn config_hash(raw: &Value) -> String {
    let identity: BTreeMap<&str, Value> = crate::config::fields::identity()
        .map(|f| (f, raw.get(f).map(canonical).unwrap_or(Value::Null)))
        .collect();
    sha256_hex(&identity)
}

/// The sha256 of a whole server definition (keys sorted): a failure recorded
/// under one definition does not hold for any edit of it (a longer
/// `startupTimeoutMs` deserves a try at once).
pub fn definition_hash(raw: &Value) -> String {
    sha256_hex(&canonical(raw))
}

impl Entry {
    /// Valid for this config hash at time `now_ms`?
    pub fn is_valid(&self, hash: &str, now_ms: u64) -> bool {
        self.config_hash == hash
            && self.cached_at > 0
            && now_ms.saturating_sub(self.cached_at) < MAX_AGE.as_millis() as u64
    }
}

/// The metadata cache file, and its shared copy if there is shared state.
#[derive(Clone, Debug)]
pub struct MetadataCache {
    path: PathBuf,
    shared: Option<Arc<SharedState>>,
}

impl MetadataCache {
    /// The cache at `path`.
    pub fn new(path: PathBuf) -> Self {
        MetadataCache { path, shared: None }
    }

    /// Also kept in `shared` (when given).
    pub fn with_shared(mut self, shared: Option<Arc<SharedState>>) -> Self {
        self.shared = shared;
        self
    }

    /// The shared state kept beside the file, if any.
    pub fn shared(&self) -> Option<&Arc<SharedState>> {
        self.shared.as_ref()
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry; a missing file is empty, a corrupt one is set aside.
    pub fn read(&self) -> BTreeMap<String, Entry> {
        self.read_all().0
    }

    fn read_file(&self) -> File {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(_) => {
                return File {
                    version: VERSION,
                    ..Default::default()
                };
            }
        };
        match serde_json::from_slice::<File>(&bytes) {
            Ok(f) if f.version == VERSION => f,
            Ok(f) => {
                tracing::info!(
                    "metadata cache {} has version {}; starting a new one",
                    self.path.display(),
                    f.version
                );
                File {
                    version: VERSION,
                    ..Default::default()
                }
            }
            Err(e) => {
                let aside = self.path.with_extension(format!("corrupt-{}", now_ms()));
                tracing::warn!(
                    "metadata cache {} is corrupt ({e}); moved to {} and rebuilt",
                    self.path.display(),
                    aside.display()
                );
                let _ = std::fs::rename(&self.path, &aside);
                File {
                    version: VERSION,
                    ..Default::default()
                }
            }
        }
    }

    /// Every entry and every recorded failure, from one read of the file;
    /// with shared state, what Redis holds wins over the file (which still
    /// fills the gaps, and stands in while Redis does not answer).
    pub fn read_all(&self) -> (BTreeMap<String, Entry>, BTreeMap<String, Failure>) {
        let file = self.read_file();
        let (mut servers, mut failures) = (file.servers, file.failures);
        if let Some(state) = &self.shared {
            match team_state::read_all(state) {
                Ok((s, f)) => {
                    servers.extend(s);
                    failures.extend(f);
                }
                Err(e) => tracing::warn!("{e}; using the local cache file"),
            }
        }
        (servers, failures)
    }

    /// A failure of `server` recorded in shared state (by any process), if
    /// there is shared state and it answers.
    pub async fn shared_failure(&self, server: &str) -> Option<Failure> {
        let state = self.shared.as_ref()?;
        team_state::failure(state, server).await.ok().flatten()
    }

    /// Stores (`Some`) or removes (`None`) entries, keeping everyone else's.
    /// Either way the server's recorded failure goes: it connected, or is forgotten.
    pub fn update(&self, changes: BTreeMap<String, Option<Entry>>) -> Result<(), CacheError> {
        let change = Change::Update(changes);
        self.apply(std::slice::from_ref(&change))?;
        if let Some(state) = &self.shared {
            team_state::apply(state, &[(now_ms(), change)]).map_err(|e| self.shared_error(e))?;
        }
        Ok(())
    }

    /// A failed write to shared state, as an error of this cache.
    fn shared_error(&self, e: crate::team_state::SharedStateError) -> CacheError {
        CacheError {
            path: self.path.clone(),
            source: std::io::Error::other(e.to_string()),
        }
    }

    /// Read-merge-write under the lock.
    fn modify(&self, change: impl FnOnce(&mut File)) -> Result<(), CacheError> {
        let err = |source| CacheError {
            path: self.path.clone(),
            source,
        };
        crate::state_file::update(
            &self.path,
            crate::state_file::Access::Default,
            crate::file_lock::DEFAULT_WAIT,
            |_| self.read_file(),
            change,
        )
        .map_err(err)
    }

    /// Removes every entry and recorded failure, here and in shared state;
    /// returns how many entries there were (the larger count of the two).
    pub fn clear(&self) -> Result<usize, CacheError> {
        let mut n = 0;
        self.modify(|file| {
            n = file.servers.len();
            file.servers.clear();
            file.failures.clear();
        })?;
        if let Some(state) = &self.shared {
            let shared = team_state::clear(state).map_err(|e| self.shared_error(e))?;
            n = n.max(shared);
        }
        Ok(n)
    }
}

/// One change to the cache, as the writer queues it and the shared state
/// applies it.
#[derive(Clone)]
pub(super) enum Change {
    /// Entries stored (`Some`) or removed (`None`); either way the server's failure goes.
    Update(BTreeMap<String, Option<Entry>>),
    /// A failure recorded (`Some`) or forgotten (`None`).
    Failure(String, Option<Failure>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hash_covers_identity_fields_only_and_ignores_key_order() {
        let a = json!({"command": "x", "env": {"A": "1", "B": "2"}, "lifecycle": "eager"});
        let b = json!({"env": {"B": "2", "A": "1"}, "command": "x", "lifecycle": "lazy", "debug": true});
        assert_eq!(config_hash(&a), config_hash(&b));
        let c = json!({"command": "x", "env": {"A": "1", "B": "3"}});
        assert_ne!(config_hash(&a), config_hash(&c));
        assert_ne!(
            config_hash(&a),
            config_hash(
                &json!({"command": "x", "env": {"A": "1", "B": "2"}, "excludeTools": ["t"]})
            )
        );
    }

    #[test]
    fn validity_needs_the_hash_and_a_fresh_timestamp() {
        let e = Entry {
            config_hash: "h".into(),
            tools: vec![],
            resources: vec![],
            resource_templates: vec![],
            prompts: vec![],
            skills: vec![],
            directory_read: false,
            cached_at: 1_000,
            protocol_version: None,
        };
        assert!(e.is_valid("h", 2_000));
        assert!(!e.is_valid("other", 2_000));
        assert!(!e.is_valid("h", 1_000 + MAX_AGE.as_millis() as u64));
        assert!(!Entry { cached_at: 0, ..e }.is_valid("h", 1));
    }

    /// Writers racing for the file: 16 caches on one path (each opens the
    /// lock itself, as a process does), released at one instant, each writing
    /// its own server 10 times. Without the lock, a read-merge-write that
    /// read before another's rename loses that other's entry.
    #[test]
    fn writers_racing_for_the_file_lose_no_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metadata.json");
        // Each write is synced to disk under the lock: on a busy disk, many
        // more writers than this wait past the lock's 2 s for their turn.
        let writers = 8;
        let start = std::sync::Arc::new(std::sync::Barrier::new(writers));
        let threads: Vec<_> = (0..writers)
            .map(|i| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    let cache = MetadataCache::new(path);
                    start.wait();
                    for round in 0..5u64 {
                        let entry = Entry {
                            config_hash: format!("{i}"),
                            tools: vec![],
                            resources: vec![],
                            resource_templates: vec![],
                            prompts: vec![],
                            skills: vec![],
                            directory_read: false,
                            cached_at: round + 1,
                            protocol_version: None,
                        };
                        cache
                            .update([(format!("s{i:02}"), Some(entry))].into())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let cached = MetadataCache::new(path).read();
        assert_eq!(
            cached.len(),
            writers,
            "{:?}",
            cached.keys().collect::<Vec<_>>()
        );
        assert!(
            cached.values().all(|e| e.cached_at == 5),
            "each writer's last write stands"
        );
    }

    #[test]
    fn update_merges_and_a_corrupt_file_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let cache = MetadataCache::new(dir.path().join("metadata.json"));
        let entry = |h: &str| Entry {
            config_hash: h.into(),
            tools: vec![serde_json::value::to_raw_value(&json!({"name": "t"})).unwrap()],
            resources: vec![],
            resource_templates: vec![],
            prompts: vec![],
            skills: vec![],
            directory_read: false,
            cached_at: 5,
            protocol_version: None,
        };
        cache
            .update([("a".to_string(), Some(entry("1")))].into())
            .unwrap();
        cache
            .update([("b".to_string(), Some(entry("2")))].into())
            .unwrap();
        assert_eq!(cache.read().keys().collect::<Vec<_>>(), vec!["a", "b"]);
        cache.update([("a".to_string(), None)].into()).unwrap();
        assert_eq!(cache.read().keys().collect::<Vec<_>>(), vec!["b"]);
        std::fs::write(cache.path(), b"{not json").unwrap();
        assert!(cache.read().is_empty());
        let aside = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().contains("corrupt-"));
        assert!(aside, "the corrupt file was kept for inspection");
        cache
            .update([("c".to_string(), Some(entry("3")))].into())
            .unwrap();
        assert_eq!(cache.read().keys().collect::<Vec<_>>(), vec!["c"]);
    }
}
