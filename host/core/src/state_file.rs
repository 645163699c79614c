//! The files mcpw keeps its state in (the metadata cache, usage stats, npx
//! resolutions, credentials, compiled guests) are replaced whole: a new
//! temporary file, synced, renamed over the old one, so that a crash leaves
//! the old file or the new one and never a torn one, nor a temporary file. A
//! file other processes change too is changed under its lock, on a fresh
//! read, so that no process's change is lost.

use cap_std::fs::{Dir, OpenOptions};
use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Who may read a state file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Its owner only (0600): credentials, compiled code.
    Private,
    /// As the umask allows: caches and statistics.
    Default,
}

/// Replaces `name` in `dir` with what `write` writes.
pub fn replace(
    dir: &Dir,
    name: &str,
    access: Access,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    // Threads of one process share a pid, hence the sequence number.
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let mut options = OpenOptions::new();
    // create_new never follows a symlink: the file is a new one of ours.
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.mode(match access {
            Access::Private => 0o600,
            Access::Default => 0o666,
        });
    }
    let written = dir.open_with(&tmp, &options).and_then(|mut file| {
        write(&mut file)?;
        file.sync_all()?;
        drop(file);
        dir.rename(&tmp, dir, name)
    });
    if written.is_err() {
        let _ = dir.remove_file(&tmp);
        return written;
    }
    // The rename made durable; the data is safe already if this fails. (The
    // `Dir` handle itself may be `O_PATH`, which cannot be synced.)
    let _ = dir.open(".").and_then(|d| d.sync_all());
    Ok(())
}

/// As [`replace`], for the file at `path`; its directory is created.
pub fn replace_at(
    path: &Path,
    access: Access,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let (dir, name) = parent(path)?;
    replace(&dir, &name, access, write)
}

/// Writes `value` as pretty JSON over the file at `path`.
pub fn write_json(path: &Path, access: Access, value: &impl Serialize) -> io::Result<()> {
    replace_at(path, access, |w| {
        serde_json::to_writer_pretty(w, value).map_err(io::Error::other)
    })
}

/// Changes the JSON file at `path`, which other processes change too: under
/// its lock (`<path>.lock`, waited for at most `wait`), reads it again with
/// `read`, applies `change` and writes it back. Returns what `change`
/// returned; an error leaves the file as it was.
pub fn update<T: Serialize, R>(
    path: &Path,
    access: Access,
    wait: std::time::Duration,
    read: impl FnOnce(&Path) -> T,
    change: impl FnOnce(&mut T) -> R,
) -> io::Result<R> {
    locked(path, wait, || {
        let mut value = read(path);
        let out = change(&mut value);
        write_json(path, access, &value).map(|()| out)
    })
}

/// Runs `f` holding the lock of the file at `path` (`<path>.lock`, waited
/// for at most `wait`); creates the file's directory.
fn locked<R>(
    path: &Path,
    wait: std::time::Duration,
    f: impl FnOnce() -> io::Result<R>,
) -> io::Result<R> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.with_extension("lock"))?;
    crate::file_lock::lock_within(&lock, wait)?;
    let out = f();
    let _ = lock.unlock();
    out
}

/// The directory of `path`, created and opened, and the file's name in it.
fn parent(path: &Path) -> io::Result<(Dir, String)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other(format!("{} names no file", path.display())))?
        .to_string_lossy()
        .into_owned();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let dir = Dir::open_ambient_dir(dir, cap_std::ambient_authority())?;
    Ok((dir, name))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use mcpw_test_support::fs::{mode, names};

    #[test]
    fn a_replaced_file_has_the_new_content_its_mode_and_no_leftover() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/state.json");
        write_json(&path, Access::Private, &serde_json::json!({"a": 1})).unwrap();
        write_json(&path, Access::Private, &serde_json::json!({"a": 2})).unwrap();
        let read: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(read["a"], 2);
        assert_eq!(mode(&path) & 0o777, 0o600);
        assert_eq!(names(&dir.path().join("sub")), ["state.json"]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_json(&path, Access::Default, &1).unwrap();
        let failed = replace_at(&path, Access::Default, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1");
        assert_eq!(names(dir.path()), ["state.json"]);
    }

    #[test]
    fn updates_from_many_threads_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts.json");
        let read = |p: &Path| -> Vec<u32> {
            std::fs::read(p)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default()
        };
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let path = &path;
                s.spawn(move || {
                    for i in 0..10 {
                        let wait = std::time::Duration::from_secs(10);
                        update(path, Access::Default, wait, read, |v| v.push(t * 100 + i)).unwrap();
                    }
                });
            }
        });
        assert_eq!(read(&path).len(), 40);
    }
}

/// Rewrites the file at `path`, which other processes write too: under its
/// lock (`<path>.lock`, waited for at most `wait`), `make` gets its bytes as
/// they are now (none if it does not exist) and returns the new ones.
pub fn update_file(
    path: &Path,
    wait: std::time::Duration,
    make: impl FnOnce(Option<&[u8]>) -> Vec<u8>,
) -> io::Result<()> {
    locked(path, wait, || {
        let now = match std::fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let bytes = make(now.as_deref());
        replace_at(path, Access::Default, |w| w.write_all(&bytes))
    })
}
