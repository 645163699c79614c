//! Compiled guests cached on disk, so a warm start never runs Cranelift.
//!
//! Key: sha256 of the wasm bytes plus a hash of the engine's compatibility
//! settings and the wasmtime version. Only files this module wrote are ever
//! deserialized: each begins with a magic tag and the sha256 of the artifact,
//! which is checked before wasmtime sees a byte; user-supplied precompiled
//! files are never accepted.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"MCPWCC01";

/// Whether a component came from the cache or was compiled now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiled {
    /// Deserialized from the on-disk cache.
    FromCache,
    /// Compiled with Cranelift (and written to the cache when it has a directory).
    Fresh,
}

/// The on-disk cache of compiled guests.
#[derive(Clone, Debug, Default)]
pub struct CompileCache {
    dir: Option<PathBuf>,
}

/// Feeds `Hash` output into sha256, for a hash that is stable across runs.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        unreachable!("only the digest is used")
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl CompileCache {
    /// A cache in `dir`; `None` disables caching.
    pub fn new(dir: Option<PathBuf>) -> Self {
        CompileCache { dir }
    }

    /// The cache directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn key(engine: &Engine, wasm: &[u8]) -> String {
        let mut compat = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut compat);
        env!("CARGO_PKG_VERSION").hash(&mut compat);
        let compat = compat.0.finalize();
        format!("{}-{}", hex(&Sha256::digest(wasm)), hex(&compat[..8]))
    }

    /// Returns the compiled component for `wasm`, from the cache when possible.
    pub fn load(&self, engine: &Engine, wasm: &[u8]) -> wasmtime::Result<(Component, Compiled)> {
        let Some(dir) = &self.dir else {
            return Ok((Component::new(engine, wasm)?, Compiled::Fresh));
        };
        let path = dir.join(format!("{}.cwasm", Self::key(engine, wasm)));
        if let Some(artifact) = read_verified(&path) {
            // SAFETY: `artifact` was produced by `Engine::precompile_component` of an
            // engine with the same compatibility hash (it is part of the file name),
            // written by `store` below, and its sha256 has just been verified, so it
            // is exactly what this process's wasmtime wrote.
            match unsafe { Component::deserialize(engine, &artifact) } {
                Ok(component) => return Ok((component, Compiled::FromCache)),
                Err(e) => tracing::warn!("discarding compiled guest {}: {e}", path.display()),
            }
        }
        let artifact = engine.precompile_component(wasm)?;
        if let Err(e) = store(dir, &path, &artifact) {
            tracing::debug!("cannot cache the compiled guest in {}: {e}", dir.display());
        }
        // SAFETY: the artifact was produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &artifact)? };
        Ok((component, Compiled::Fresh))
    }
}

fn read_verified(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = std::fs::read(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // Only a file this user wrote, in a directory no one else can write
        // to, is trusted: anything else could have been planted.
        let trusted = |p: &Path| {
            std::fs::metadata(p).is_ok_and(|m| {
                // SAFETY: geteuid has no preconditions.
                m.uid() == unsafe { libc::geteuid() } && m.mode() & 0o022 == 0
            })
        };
        if !trusted(path) || !path.parent().is_some_and(trusted) {
            tracing::warn!(
                "ignoring {}: not written by this user, or writable by others",
                path.display()
            );
            return None;
        }
    }
    if bytes.len() < MAGIC.len() + 32 || &bytes[..MAGIC.len()] != MAGIC {
        return None;
    }
    let digest = bytes[MAGIC.len()..MAGIC.len() + 32].to_vec();
    let artifact = bytes.split_off(MAGIC.len() + 32);
    (Sha256::digest(&artifact).as_slice() == digest.as_slice()).then_some(artifact)
}

/// Writes atomically: a per-process temp file, then a rename.
fn store(dir: &Path, path: &Path, artifact: &[u8]) -> std::io::Result<()> {
    create_private_dir(dir)?;
    // Unique per process and per call: threads of one process share a pid.
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_extension(format!(
        "{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        file.write_all(MAGIC)?;
        file.write_all(&Sha256::digest(artifact))?;
        file.write_all(artifact)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}
