//! Directories that must stay private to this user (the compile cache, the
//! credential store), reached through handles (cap-std) so that a symlink is
//! never followed.

#[cfg(unix)]
use cap_std::fs::DirBuilderExt;
use cap_std::fs::{Dir, DirBuilder, Metadata};
use std::io;
use std::path::Path;

/// What `symlink_metadata` (which does not follow a symlink) sees at `name`
/// in `parent`. When nothing is there: if `create`, a directory is made with
/// mode 0700 (or another process's, made meanwhile, is taken) and seen;
/// otherwise `None`. The caller checks the type, opens, and checks that the
/// handle is the object seen.
pub fn child_dir_seen(parent: &Dir, name: &Path, create: bool) -> io::Result<Option<Metadata>> {
    match parent.symlink_metadata(name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
            let mut builder = DirBuilder::new();
            #[cfg(unix)]
            builder.mode(0o700);
            match parent.create_dir_with(name, &builder) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
                _ => parent.symlink_metadata(name).map(Some),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        other => other.map(Some),
    }
}
