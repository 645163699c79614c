//! Kept results as files, for a local (stdio) session: an agent with a file
//! tool reads the rest of a result where it already reads files. Each is
//! written whole and private (0600) in mcpw's state folder; files older than
//! the TTL go, and past the folder's cap the oldest go first, whichever
//! process wrote them.

use crate::state_file::{Access, replace_at};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The results folder of one machine's user.
#[derive(Debug, Clone)]
pub struct ResultFiles {
    dir: PathBuf,
    ttl: Duration,
    cap: u64,
}

impl ResultFiles {
    /// Files in `dir`, gone after `ttl`, at most `cap` bytes together.
    pub fn new(dir: PathBuf, ttl: Duration, cap: u64) -> ResultFiles {
        ResultFiles { dir, ttl, cap }
    }

    /// The folder they are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `text`, kept as `id`; its path. Makes room first; a text
    /// bigger than the whole cap is not written.
    pub fn write(&self, id: &str, text: &str) -> io::Result<PathBuf> {
        if text.len() as u64 > self.cap {
            return Err(io::Error::other(
                "the result is bigger than the results folder may hold",
            ));
        }
        std::fs::create_dir_all(&self.dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700));
        }
        self.prune(text.len() as u64);
        let path = self.dir.join(format!("{id}.txt"));
        replace_at(&path, Access::Private, |w| w.write_all(text.as_bytes()))?;
        Ok(path)
    }

    /// Removes files past the TTL, then the oldest while `incoming` more
    /// bytes would not fit.
    fn prune(&self, incoming: u64) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".txt"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        files.retain(|(at, _, path)| {
            let old = now.duration_since(*at).is_ok_and(|age| age >= self.ttl);
            if old {
                let _ = std::fs::remove_file(path);
            }
            !old
        });
        files.sort();
        let mut held: u64 = files.iter().map(|(_, len, _)| len).sum();
        for (_, len, path) in files {
            if held + incoming <= self.cap {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                held -= len;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Makes `file` look `secs` seconds old.
    fn age(file: &Path, secs: u64) {
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn files_are_private_and_the_folder_keeps_to_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let files = ResultFiles::new(dir.path().join("results"), Duration::from_secs(60), 100);
        let a = files.write("a", &"a".repeat(60)).unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "a".repeat(60));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&a).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Ages apart, so that "oldest" is plain.
        age(&a, 5);
        let b = files.write("b", &"b".repeat(60)).unwrap();
        assert!(!a.exists(), "the oldest went to make room");
        assert!(b.exists());
        assert!(files.write("c", &"c".repeat(101)).is_err(), "over the cap");
        assert!(b.exists(), "a refused file evicts nothing");
    }

    #[test]
    fn files_past_the_ttl_go() {
        let dir = tempfile::tempdir().unwrap();
        let files = ResultFiles::new(dir.path().to_path_buf(), Duration::from_secs(60), 1000);
        let old = files.write("old", "x").unwrap();
        age(&old, 61);
        files.write("new", "y").unwrap();
        assert!(!old.exists());
    }
}
