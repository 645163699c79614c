//! Compiled guests cached on disk, so a warm start never runs Cranelift.
//!
//! Key: sha256 of the wasm bytes plus a hash of the engine's compatibility
//! settings and the wasmtime version. Only files this module wrote are ever
//! deserialized: each begins with a magic tag and the sha256 of the artifact,
//! which is checked before wasmtime sees a byte; user-supplied precompiled
//! files are never accepted.
//!
//! Deserializing is unsafe, so what is read must be exactly what was written.
//! Everything goes through a handle on the cache directory, opened once per
//! load: the directory itself must not be a symlink and (on Unix) must be ours
//! and not writable by group or others; an entry must be a regular file, not a
//! symlink, ours and not writable by group or others, and those checks are
//! made on the opened handle, the same one the bytes are read from, so the
//! file cannot be swapped between the check and the read. Entries are written
//! as a 0600 temporary file in the directory, fsynced, then renamed over the
//! entry (which replaces a planted symlink rather than writing through it).
//! Directories above the cache directory are taken as they are.
//!
//! A cache that cannot be used, or is not trusted, never fails a load: the
//! guest is compiled again, with a log line saying why.

use cap_std::fs::{Dir, Metadata, OpenOptions};
#[cfg(unix)]
use cap_std::fs::{MetadataExt, OpenOptionsExt};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

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
        let Some(dir_path) = &self.dir else {
            return Ok((Component::new(engine, wasm)?, Compiled::Fresh));
        };
        let name = format!("{}.cwasm", Self::key(engine, wasm));
        // Missing is fine (it is created to store the result); unusable or
        // untrusted means neither read nor written.
        let dir = match open_cache_dir(dir_path, false) {
            Ok(dir) => dir,
            Err(e) => {
                e.log(dir_path);
                return Ok((Component::new(engine, wasm)?, Compiled::Fresh));
            }
        };
        if let Some(artifact) = dir.as_ref().and_then(|d| read_verified(d, dir_path, &name)) {
            // SAFETY: `artifact` was read from a regular file (not a symlink) that
            // this user owns and no one else can write, in a directory with the
            // same properties, both checked on the handles it was read through;
            // it carries a sha256 that has just been verified, and its name holds
            // the engine's compatibility hash. So it is exactly what `store`
            // wrote, from `Engine::precompile_component` of a compatible engine.
            match unsafe { Component::deserialize(engine, &artifact) } {
                Ok(component) => return Ok((component, Compiled::FromCache)),
                Err(e) => tracing::warn!(
                    "discarding compiled guest {}: {e}",
                    dir_path.join(&name).display()
                ),
            }
        }
        let artifact = engine.precompile_component(wasm)?;
        let dir = match dir {
            Some(dir) => Ok(Some(dir)),
            None => open_cache_dir(dir_path, true),
        };
        match dir {
            Ok(Some(dir)) => {
                if let Err(e) = store(&dir, &name, &artifact) {
                    tracing::debug!(
                        "cannot cache the compiled guest in {}: {e}",
                        dir_path.display()
                    );
                }
            }
            Ok(None) => {}
            Err(e) => e.log(dir_path),
        }
        // SAFETY: the artifact was produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &artifact)? };
        Ok((component, Compiled::Fresh))
    }
}

/// Why the cache directory or an entry cannot be used.
#[derive(Debug)]
enum Unusable {
    /// It cannot be reached or created: caching is merely unavailable.
    Io(io::Error),
    /// It is there but could have been planted or altered by someone else.
    Untrusted(&'static str),
}

impl Unusable {
    /// Says why `path` is not used: a warning when it is not trusted, since
    /// that may be an attack or a misconfiguration; debug otherwise.
    fn log(&self, path: &Path) {
        match self {
            Unusable::Io(e) => {
                tracing::debug!("cannot use the compile cache {}: {e}", path.display());
            }
            Unusable::Untrusted(why) => {
                tracing::warn!("ignoring the compile cache {}: {why}", path.display());
            }
        }
    }
}

impl From<io::Error> for Unusable {
    fn from(e: io::Error) -> Self {
        Unusable::Io(e)
    }
}

/// Opens the cache directory `path` without following a symlink in its last
/// component, and checks the opened handle. When missing: creates it (mode
/// 0700, and its missing parents likewise) if `create`, else `Ok(None)`.
fn open_cache_dir(path: &Path, create: bool) -> Result<Option<Dir>, Unusable> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(Unusable::Untrusted(
            "it does not name a directory of its own",
        ));
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let parent = match Dir::open_ambient_dir(parent, cap_std::ambient_authority()) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
            create_private_dirs(parent)?;
            Dir::open_ambient_dir(parent, cap_std::ambient_authority())?
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        other => other?,
    };
    let Some(seen) = crate::private_fs::child_dir_seen(&parent, Path::new(name), create)? else {
        return Ok(None);
    };
    if seen.file_type().is_symlink() {
        return Err(Unusable::Untrusted("it is a symbolic link"));
    }
    if !seen.is_dir() {
        return Err(io::Error::from(io::ErrorKind::NotADirectory).into());
    }
    let dir = parent.open_dir(name)?;
    check_trusted(&dir.dir_metadata()?, &seen, true).map_err(Unusable::Untrusted)?;
    Ok(Some(dir))
}

/// Creates `path` and its missing parents, private to this user.
fn create_private_dirs(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(path)
}

/// Checks what was opened: the very object `seen` (by `symlink_metadata`,
/// which does not follow links) and of the expected type, owned by this user
/// and not writable by group or others. Anything else could have been planted.
fn check_trusted(opened: &Metadata, seen: &Metadata, dir: bool) -> Result<(), &'static str> {
    if (dir && !opened.is_dir()) || (!dir && !opened.is_file()) {
        return Err(if dir {
            "not a directory"
        } else {
            "not a regular file"
        });
    }
    #[cfg(unix)]
    {
        if (opened.dev(), opened.ino()) != (seen.dev(), seen.ino()) {
            return Err("it was replaced while being opened");
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        if opened.uid() != unsafe { libc::geteuid() } {
            return Err("not owned by this user");
        }
        if opened.mode() & 0o022 != 0 {
            return Err("writable by group or others");
        }
    }
    #[cfg(not(unix))]
    let _ = seen;
    Ok(())
}

/// The artifact stored as `name` in `dir`, if it is there, trusted (see
/// [`check_trusted`]) and intact. The checks and the read use one handle.
fn read_verified(dir: &Dir, dir_path: &Path, name: &str) -> Option<Vec<u8>> {
    let path = dir_path.join(name);
    let seen = match dir.symlink_metadata(name) {
        Ok(seen) => seen,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::debug!("cannot read {}: {e}", path.display());
            return None;
        }
    };
    if !seen.is_file() {
        tracing::warn!(
            "ignoring {}: not a regular file (a symbolic link is never followed)",
            path.display()
        );
        return None;
    }
    let mut options = OpenOptions::new();
    options.read(true);
    // No symlink, even one swapped in after the check above; and no blocking
    // open should a FIFO be (the dev/ino check refuses it afterwards).
    #[cfg(unix)]
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let read = dir.open_with(name, &options).and_then(|mut file| {
        let opened = file.metadata()?;
        if let Err(why) = check_trusted(&opened, &seen, false) {
            return Ok(Err(why));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
        file.read_to_end(&mut bytes)?;
        Ok(Ok(bytes))
    });
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(why)) => {
            tracing::warn!("ignoring {}: {why}", path.display());
            return None;
        }
        Err(e) => {
            tracing::debug!("cannot read {}: {e}", path.display());
            return None;
        }
    };
    let artifact = verify(bytes);
    if artifact.is_none() {
        tracing::debug!("ignoring {}: its digest does not match", path.display());
    }
    artifact
}

/// The artifact in a cache file's bytes, if its digest matches.
fn verify(mut bytes: Vec<u8>) -> Option<Vec<u8>> {
    if bytes.len() < MAGIC.len() + 32 || &bytes[..MAGIC.len()] != MAGIC {
        return None;
    }
    let digest = bytes[MAGIC.len()..MAGIC.len() + 32].to_vec();
    let artifact = bytes.split_off(MAGIC.len() + 32);
    (Sha256::digest(&artifact).as_slice() == digest.as_slice()).then_some(artifact)
}

/// Writes `artifact` as `name` in `dir`, owner-only and atomically (see
/// [`crate::state_file`]); a lost write only costs a compile.
fn store(dir: &Dir, name: &str, artifact: &[u8]) -> io::Result<()> {
    crate::state_file::replace(dir, name, crate::state_file::Access::Private, |w| {
        w.write_all(MAGIC)?;
        w.write_all(&Sha256::digest(artifact))?;
        w.write_all(artifact)
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use mcpw_test_support::fs::{chmod, mode, names};
    use std::os::unix::fs::symlink;

    fn untrusted(result: Result<Option<Dir>, Unusable>) -> &'static str {
        match result {
            Err(Unusable::Untrusted(why)) => why,
            other => panic!("trusted: {other:?}"),
        }
    }

    /// A fresh cache directory in a temporary one, and its handle.
    fn cache() -> (tempfile::TempDir, PathBuf, Dir) {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("guests");
        let dir = open_cache_dir(&path, true).unwrap().unwrap();
        (root, path, dir)
    }

    #[test]
    fn a_missing_cache_dir_is_created_private_only_when_storing() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("a/b/guests");
        assert!(open_cache_dir(&path, false).unwrap().is_none());
        assert!(!root.path().join("a").exists(), "reading creates nothing");
        assert!(open_cache_dir(&path, true).unwrap().is_some());
        assert_eq!(mode(&path), 0o700);
        assert_eq!(mode(&root.path().join("a/b")), 0o700);
        assert!(open_cache_dir(&path, false).unwrap().is_some());
    }

    #[test]
    fn a_symlinked_cache_dir_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        open_cache_dir(&real, true).unwrap().unwrap();
        let link = root.path().join("link");
        symlink(&real, &link).unwrap();
        assert_eq!(
            untrusted(open_cache_dir(&link, false)),
            "it is a symbolic link"
        );
        assert_eq!(
            untrusted(open_cache_dir(&link, true)),
            "it is a symbolic link"
        );
        // A dangling link is not created through either.
        let dangling = root.path().join("dangling");
        symlink(root.path().join("nowhere"), &dangling).unwrap();
        untrusted(open_cache_dir(&dangling, true));
        assert!(!root.path().join("nowhere").exists());
    }

    #[test]
    fn a_cache_dir_writable_by_others_is_refused() {
        let (_root, path, _) = cache();
        chmod(&path, 0o757);
        assert_eq!(
            untrusted(open_cache_dir(&path, false)),
            "writable by group or others"
        );
        chmod(&path, 0o770);
        untrusted(open_cache_dir(&path, false));
        chmod(&path, 0o755);
        assert!(open_cache_dir(&path, false).unwrap().is_some());
    }

    #[test]
    fn a_cache_path_that_is_a_file_is_unusable_not_untrusted() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(open_cache_dir(&file, true), Err(Unusable::Io(_))));
        let below = file.join("guests");
        assert!(matches!(open_cache_dir(&below, true), Err(Unusable::Io(_))));
    }

    #[test]
    fn entries_round_trip_private_and_without_leftovers() {
        let (_root, path, dir) = cache();
        store(&dir, "a.cwasm", b"artifact").unwrap();
        assert_eq!(names(&path), ["a.cwasm"]);
        assert_eq!(mode(&path.join("a.cwasm")), 0o600);
        assert_eq!(
            read_verified(&dir, &path, "a.cwasm").as_deref(),
            Some(&b"artifact"[..])
        );
        assert_eq!(read_verified(&dir, &path, "missing.cwasm"), None);
        // Rewriting replaces the entry.
        store(&dir, "a.cwasm", b"other").unwrap();
        assert_eq!(
            read_verified(&dir, &path, "a.cwasm").as_deref(),
            Some(&b"other"[..])
        );
        assert_eq!(names(&path), ["a.cwasm"]);
    }

    #[test]
    fn a_symlinked_entry_is_never_followed_even_within_the_cache() {
        let (root, path, dir) = cache();
        store(&dir, "a.cwasm", b"artifact").unwrap();
        symlink("a.cwasm", path.join("b.cwasm")).unwrap();
        assert_eq!(read_verified(&dir, &path, "b.cwasm"), None);
        std::fs::copy(path.join("a.cwasm"), root.path().join("outside")).unwrap();
        symlink(root.path().join("outside"), path.join("c.cwasm")).unwrap();
        assert_eq!(read_verified(&dir, &path, "c.cwasm"), None);
        assert!(read_verified(&dir, &path, "a.cwasm").is_some());
    }

    #[test]
    fn untrusted_or_irregular_entries_are_ignored() {
        let (_root, path, dir) = cache();
        store(&dir, "a.cwasm", b"artifact").unwrap();
        chmod(&path.join("a.cwasm"), 0o620);
        assert_eq!(read_verified(&dir, &path, "a.cwasm"), None);
        chmod(&path.join("a.cwasm"), 0o602);
        assert_eq!(read_verified(&dir, &path, "a.cwasm"), None);
        chmod(&path.join("a.cwasm"), 0o644);
        assert!(read_verified(&dir, &path, "a.cwasm").is_some());
        std::fs::create_dir(path.join("d.cwasm")).unwrap();
        assert_eq!(read_verified(&dir, &path, "d.cwasm"), None);
        let fifo =
            std::ffi::CString::new(path.join("f.cwasm").into_os_string().into_encoded_bytes())
                .unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert_eq!(read_verified(&dir, &path, "f.cwasm"), None, "and no hang");
    }

    #[test]
    fn a_tampered_entry_is_ignored() {
        let (_root, path, dir) = cache();
        store(&dir, "a.cwasm", b"artifact").unwrap();
        let mut bytes = std::fs::read(path.join("a.cwasm")).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(path.join("a.cwasm"), &bytes).unwrap();
        assert_eq!(read_verified(&dir, &path, "a.cwasm"), None);
        std::fs::write(path.join("a.cwasm"), &bytes[..20]).unwrap();
        assert_eq!(read_verified(&dir, &path, "a.cwasm"), None);
    }

    #[test]
    fn storing_replaces_a_planted_symlink_instead_of_writing_through_it() {
        let (root, path, dir) = cache();
        let outside = root.path().join("outside");
        std::fs::write(&outside, "someone else's").unwrap();
        symlink(&outside, path.join("a.cwasm")).unwrap();
        store(&dir, "a.cwasm", b"artifact").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"someone else's");
        assert!(
            std::fs::symlink_metadata(path.join("a.cwasm"))
                .unwrap()
                .is_file()
        );
        assert!(read_verified(&dir, &path, "a.cwasm").is_some());
    }

    #[test]
    fn a_file_swapped_after_the_check_is_refused() {
        let (_root, _, dir) = cache();
        store(&dir, "a.cwasm", b"one").unwrap();
        store(&dir, "b.cwasm", b"two").unwrap();
        let seen = dir.symlink_metadata("a.cwasm").unwrap();
        let opened = dir.open("b.cwasm").unwrap().metadata().unwrap();
        assert_eq!(
            check_trusted(&opened, &seen, false),
            Err("it was replaced while being opened")
        );
        let opened = dir.open("a.cwasm").unwrap().metadata().unwrap();
        assert_eq!(check_trusted(&opened, &seen, false), Ok(()));
    }
}
