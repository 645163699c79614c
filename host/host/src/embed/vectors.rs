//! The vectors of texts a model has embedded, by (model, text digest): in
//! memory, in one file per model beside the metadata cache (read on first
//! need, replaced whole under its lock, merged with what other processes
//! wrote), and in Redis for a team, so that a replica reuses another's work.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A text's digest: what a vector is kept under.
pub type Key = [u8; 32];

/// The first bytes of a vector file.
const MAGIC: &[u8; 8] = b"MCPWVEC1";
/// The most vectors a file keeps (those of this process first): about
/// 150 MB at 384 dimensions.
const MAX_KEPT: usize = 100_000;
/// How long to wait for another process writing the same file.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The digest `text` is kept under.
pub fn key(text: &str) -> Key {
    Sha256::digest(text.as_bytes()).into()
}

/// Vectors of one model.
pub struct Vectors {
    dimension: usize,
    file: PathBuf,
    loaded: bool,
    map: HashMap<Key, Arc<[f32]>>,
    /// Keys added since the file was last written.
    unsaved: Vec<Key>,
    shared: Option<(Arc<crate::team_state::SharedState>, String)>,
}

impl Vectors {
    /// The vectors of the model `identity` (of `dimension`), kept in `dir`.
    pub fn new(
        identity: &str,
        dimension: usize,
        dir: &Path,
        shared: Option<Arc<crate::team_state::SharedState>>,
    ) -> Vectors {
        let safe: String = identity
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Vectors {
            dimension,
            file: dir.join(format!("{safe}.vectors")),
            loaded: false,
            map: HashMap::new(),
            unsaved: Vec::new(),
            shared: shared.map(|s| (s, crate::team_state::key(&["vectors", identity]))),
        }
    }

    /// The file the vectors are kept in.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The vector of `key`, looking in the file the first time.
    pub fn get(&mut self, key: &Key) -> Option<Arc<[f32]>> {
        self.load();
        self.map.get(key).cloned()
    }

    /// Looks up in Redis those of `keys` not known here; returns how many it found.
    pub fn fetch_shared(&mut self, keys: &[Key]) -> usize {
        let Some((state, hash)) = &self.shared else {
            return 0;
        };
        let missing: Vec<&Key> = keys.iter().filter(|k| !self.map.contains_key(*k)).collect();
        if missing.is_empty() {
            return 0;
        }
        let fields: Vec<String> = missing.iter().map(|k| hex(k)).collect();
        let got: Result<Vec<Option<Vec<u8>>>, _> =
            state.run_blocking(|c| redis::cmd("HMGET").arg(hash).arg(&fields).query(c));
        let mut found = 0;
        match got {
            Ok(values) => {
                for (k, v) in missing.into_iter().zip(values) {
                    if let Some(v) = v.and_then(|b| self.decode(&b)) {
                        self.map.insert(*k, v);
                        found += 1;
                    }
                }
            }
            Err(e) => tracing::warn!("cannot read shared vectors: {e}"),
        }
        found
    }

    /// Keeps `vector` for `key`.
    pub fn insert(&mut self, key: Key, vector: Arc<[f32]>) {
        self.load();
        if self.map.insert(key, vector).is_none() {
            self.unsaved.push(key);
        }
    }

    /// Writes what was added since the last save: to the file (merged with
    /// what other processes wrote meanwhile) and to Redis.
    pub fn save(&mut self) {
        if self.unsaved.is_empty() {
            return;
        }
        let added = std::mem::take(&mut self.unsaved);
        if let Some((state, hash)) = &self.shared {
            let mut cmd = redis::cmd("HSET");
            cmd.arg(hash);
            for k in &added {
                cmd.arg(hex(k)).arg(encode(&self.map[k]));
            }
            if let Err(e) = state.run_blocking(|c| cmd.query::<()>(c)) {
                tracing::warn!("cannot share vectors: {e}");
            }
        }
        if let Err(e) = self.write() {
            tracing::warn!("cannot write {}: {e}", self.file.display());
        }
    }

    fn write(&self) -> io::Result<()> {
        let dimension = self.dimension;
        let mine = &self.map;
        crate::state_file::update_file(&self.file, LOCK_WAIT, |on_disk| {
            let mut theirs = HashMap::new();
            if let Some(bytes) = on_disk {
                read_records(bytes, dimension, &mut theirs);
            }
            let kept = mine
                .iter()
                .chain(theirs.iter().filter(|(k, _)| !mine.contains_key(*k)))
                .take(MAX_KEPT);
            let mut out = Vec::with_capacity(12 + mine.len() * (32 + dimension * 4));
            out.extend_from_slice(MAGIC);
            out.extend_from_slice(&(dimension as u32).to_le_bytes());
            for (k, v) in kept {
                out.extend_from_slice(k);
                out.extend_from_slice(&encode(v));
            }
            out
        })
    }

    /// Reads the file once; a missing or foreign file is an empty cache.
    fn load(&mut self) {
        if self.loaded {
            return;
        }
        self.loaded = true;
        let mut bytes = Vec::new();
        match std::fs::File::open(&self.file).and_then(|mut f| f.read_to_end(&mut bytes)) {
            Ok(_) => {
                let mut found = HashMap::new();
                read_records(&bytes, self.dimension, &mut found);
                // What this process computed before the read stays.
                for (k, v) in found {
                    self.map.entry(k).or_insert(v);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("cannot read {}: {e}", self.file.display()),
        }
    }

    fn decode(&self, bytes: &[u8]) -> Option<Arc<[f32]>> {
        (bytes.len() == self.dimension * 4).then(|| decode(bytes))
    }
}

fn hex(k: &Key) -> String {
    k.iter().map(|b| format!("{b:02x}")).collect()
}

fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Arc<[f32]> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The records of a vector file of `dimension`; a file of another dimension,
/// or its torn tail, is left out.
fn read_records(bytes: &[u8], dimension: usize, into: &mut HashMap<Key, Arc<[f32]>>) {
    let Some(rest) = bytes.strip_prefix(MAGIC.as_slice()) else {
        return;
    };
    if rest.len() < 4
        || u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize != dimension
    {
        return;
    }
    for record in rest[4..].chunks_exact(32 + dimension * 4) {
        let (k, v) = record.split_at(32);
        into.insert(k.try_into().expect("32 bytes"), decode(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_survive_a_new_store_and_merge_with_another_writer() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (key("alpha"), key("beta"));
        let mut one = Vectors::new("m@1", 3, dir.path(), None);
        let mut two = Vectors::new("m@1", 3, dir.path(), None);
        assert!(one.get(&a).is_none() && two.get(&b).is_none());
        one.insert(a, Arc::from(vec![1.0, 0.0, 0.0]));
        one.save();
        // `two` read the file before `one` wrote it: its save keeps `a`.
        two.insert(b, Arc::from(vec![0.0, 1.0, 0.0]));
        two.save();
        let mut again = Vectors::new("m@1", 3, dir.path(), None);
        assert_eq!(&*again.get(&a).unwrap(), &[1.0, 0.0, 0.0]);
        assert_eq!(&*again.get(&b).unwrap(), &[0.0, 1.0, 0.0]);
        // Another model's vectors are another file.
        assert!(Vectors::new("m@2", 3, dir.path(), None).get(&a).is_none());
    }

    #[test]
    fn a_torn_or_foreign_file_is_an_empty_cache() {
        let dir = tempfile::tempdir().unwrap();
        let mut v = Vectors::new("m@1", 2, dir.path(), None);
        v.insert(key("a"), Arc::from(vec![0.5, 0.5]));
        v.insert(key("b"), Arc::from(vec![0.25, 0.75]));
        v.save();
        let bytes = std::fs::read(v.file()).unwrap();
        std::fs::write(v.file(), &bytes[..bytes.len() - 3]).unwrap();
        let mut torn = Vectors::new("m@1", 2, dir.path(), None);
        assert_eq!(
            torn.get(&key("a")).is_some() as u8 + torn.get(&key("b")).is_some() as u8,
            1
        );
        std::fs::write(v.file(), b"not vectors").unwrap();
        assert!(
            Vectors::new("m@1", 2, dir.path(), None)
                .get(&key("a"))
                .is_none()
        );
    }
}
