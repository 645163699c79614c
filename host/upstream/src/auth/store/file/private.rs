//! Opening the file store's directories and files: through handles, never
//! following a symlink, and only if private to this user.
//!
//! On non-Unix platforms the mode and owner checks are skipped: there is no
//! mode to check, and the per-user profile directory already carries ACLs.

use std::io;
use std::path::Path;

use cap_std::fs::{Dir, File, Metadata, OpenOptions};
#[cfg(unix)]
use cap_std::fs::{MetadataExt, OpenOptionsExt};

use super::io_error;
use crate::auth::store::StoreError;

/// The config directory, created (with ordinary permissions) if `create`.
/// The only path opened with ambient authority; everything below goes through
/// handles.
pub(super) fn open_config_dir(config_dir: &Path, create: bool) -> Result<Dir, StoreError> {
    if create {
        std::fs::create_dir_all(config_dir).map_err(io_error(config_dir))?;
    }
    Dir::open_ambient_dir(config_dir, cap_std::ambient_authority()).map_err(io_error(config_dir))
}

/// Opens the private (0700, ours, not a symlink) directory `path`, a child of
/// `parent`, creating it if missing and `create`; `None` if missing otherwise.
pub(super) fn open_private_dir(
    parent: &Dir,
    path: &Path,
    create: bool,
) -> Result<Option<Dir>, StoreError> {
    let name = path.file_name().expect("a child path");
    let seen = crate::private_fs::child_dir_seen(parent, Path::new(name), create);
    let Some(seen) = seen.map_err(io_error(path))? else {
        return Ok(None);
    };
    check_type(&seen, path, true)?;
    let dir = parent.open_dir(name).map_err(io_error(path))?;
    check_private(
        &dir.dir_metadata().map_err(io_error(path))?,
        &seen,
        path,
        true,
    )?;
    Ok(Some(dir))
}

/// Opens the private (0600, ours, not a symlink) file `path` in `dir`: for
/// reading, or read-write and created if missing when `create` (lock files).
pub(super) fn open_private_file(
    dir: &Dir,
    path: &Path,
    create: bool,
) -> Result<Option<std::fs::File>, StoreError> {
    let name = path.file_name().expect("a child path");
    let mut options = OpenOptions::new();
    options.read(true).write(create);
    let seen = match dir.symlink_metadata(name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
            let mut fresh = options.clone();
            fresh.create_new(true);
            #[cfg(unix)]
            fresh.mode(0o600);
            match dir.open_with(name, &fresh) {
                // create_new never follows a symlink, so this file is ours.
                Ok(file) => return Ok(Some(file.into_std())),
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                    return Err(io_error(path)(e));
                }
                Err(_) => dir.symlink_metadata(name).map_err(io_error(path))?,
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        other => other.map_err(io_error(path))?,
    };
    check_type(&seen, path, false)?;
    let file: File = dir.open_with(name, &options).map_err(io_error(path))?;
    check_private(
        &file.metadata().map_err(io_error(path))?,
        &seen,
        path,
        false,
    )?;
    Ok(Some(file.into_std()))
}

/// Checks what `symlink_metadata` saw: the expected type, and no symlink.
fn check_type(seen: &Metadata, path: &Path, dir: bool) -> Result<(), StoreError> {
    let expected = if dir { "directory" } else { "file" };
    if seen.file_type().is_symlink() {
        return Err(StoreError::Symlink {
            path: path.to_owned(),
            expected,
        });
    }
    if (dir && !seen.is_dir()) || (!dir && !seen.is_file()) {
        return Err(StoreError::WrongType {
            path: path.to_owned(),
            expected,
        });
    }
    Ok(())
}

/// Checks what was actually opened: the same object that was inspected (no
/// swap in between), owned by us and closed to group and others.
#[cfg(unix)]
fn check_private(
    opened: &Metadata,
    seen: &Metadata,
    path: &Path,
    dir: bool,
) -> Result<(), StoreError> {
    if (opened.dev(), opened.ino()) != (seen.dev(), seen.ino()) {
        let source = io::Error::other("it was replaced while being opened");
        return Err(io_error(path)(source));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if opened.uid() != euid {
        return Err(StoreError::Owner {
            path: path.to_owned(),
            uid: opened.uid(),
        });
    }
    let mode = opened.mode() & 0o7777;
    if mode & 0o077 != 0 {
        let want = if dir { "700" } else { "600" };
        return Err(StoreError::Permissions {
            path: path.to_owned(),
            mode,
            fix: format!("chmod {want} {}", path.display()),
        });
    }
    Ok(())
}

/// No modes or owners to check off Unix (see the module docs).
#[cfg(not(unix))]
fn check_private(_: &Metadata, _: &Metadata, _: &Path, _: bool) -> Result<(), StoreError> {
    Ok(())
}
