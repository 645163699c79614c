//! Writes into a folder granted read-only, seen and logged. WASI refuses
//! them itself (`not-permitted`) and tells its host nothing, so mcpw links
//! the functions that write into a folder over WASI's own: an open that
//! writes, creates or truncates; creating, removing, renaming or linking a
//! file or folder; setting its times.
//! Each attempt in a read-only grant is logged as any refusal, then WASI
//! answers it as before.

use super::sandbox::refused;
use std::os::fd::AsRawFd;
use wasmtime::component::{Linker, LinkerInstance, Resource};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView, WasiFilesystemView};
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, Host, HostDescriptor, NewTimestamp, OpenFlags, PathFlags,
};

/// The interface as WASI links it (a component importing an earlier 0.2
/// release is served by it too).
const TYPES: &str = "wasi:filesystem/types@0.2.12";

/// A descriptor and a path in it: what the folder functions take.
type At = (Resource<Descriptor>, String);
type OpenAt = (
    Resource<Descriptor>,
    PathFlags,
    String,
    OpenFlags,
    DescriptorFlags,
);
type SetTimesAt = (
    Resource<Descriptor>,
    PathFlags,
    String,
    NewTimestamp,
    NewTimestamp,
);
type RenameAt = (Resource<Descriptor>, String, Resource<Descriptor>, String);
type LinkAt = (
    Resource<Descriptor>,
    PathFlags,
    String,
    Resource<Descriptor>,
    String,
);
type SymlinkAt = (Resource<Descriptor>, String, String);

/// Links the watched functions over WASI's own (the linker must allow
/// shadowing).
pub(crate) fn add_to_linker<T: WasiView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    let mut types = linker.instance(TYPES)?;
    opens(&mut types)?;
    types.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store, (fd, path): At| {
            Box::new(async move {
                let mut view = store.data_mut().filesystem();
                note(&view, &fd, &path);
                let made = view.create_directory_at(fd, path).await;
                Ok((answer(&mut view, made)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.unlink-file-at",
        |mut store, (fd, path): At| {
            Box::new(async move {
                let mut view = store.data_mut().filesystem();
                note(&view, &fd, &path);
                let removed = view.unlink_file_at(fd, path).await;
                Ok((answer(&mut view, removed)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.remove-directory-at",
        |mut store, (fd, path): At| {
            Box::new(async move {
                let mut view = store.data_mut().filesystem();
                note(&view, &fd, &path);
                let removed = view.remove_directory_at(fd, path).await;
                Ok((answer(&mut view, removed)?,))
            })
        },
    )?;
    moves(&mut types)
}

/// `open-at` that writes, creates or truncates; `set-times-at`.
fn opens<T: WasiView + 'static>(types: &mut LinkerInstance<'_, T>) -> wasmtime::Result<()> {
    types.func_wrap_async("[method]descriptor.open-at", |mut store, args: OpenAt| {
        Box::new(async move {
            let (fd, path_flags, path, oflags, flags) = args;
            let mut view = store.data_mut().filesystem();
            let writes = oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE)
                || flags.contains(DescriptorFlags::WRITE);
            if writes {
                note(&view, &fd, &path);
            }
            let opened = view.open_at(fd, path_flags, path, oflags, flags).await;
            Ok((answer(&mut view, opened)?,))
        })
    })?;
    types.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut store, args: SetTimesAt| {
            Box::new(async move {
                let (fd, path_flags, path, atim, mtim) = args;
                let mut view = store.data_mut().filesystem();
                note(&view, &fd, &path);
                let set = view.set_times_at(fd, path_flags, path, atim, mtim).await;
                Ok((answer(&mut view, set)?,))
            })
        },
    )?;
    Ok(())
}

/// `rename-at`, `link-at` and `symlink-at`: a name made (or taken away) in a folder.
fn moves<T: WasiView + 'static>(types: &mut LinkerInstance<'_, T>) -> wasmtime::Result<()> {
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store, args: RenameAt| {
            Box::new(async move {
                let (fd, old_path, new_fd, new_path) = args;
                let mut view = store.data_mut().filesystem();
                note(&view, &fd, &old_path);
                note(&view, &new_fd, &new_path);
                let renamed = view.rename_at(fd, old_path, new_fd, new_path).await;
                Ok((answer(&mut view, renamed)?,))
            })
        },
    )?;
    types.func_wrap_async("[method]descriptor.link-at", |mut store, args: LinkAt| {
        Box::new(async move {
            let (fd, old_flags, old_path, new_fd, new_path) = args;
            let mut view = store.data_mut().filesystem();
            note(&view, &new_fd, &new_path);
            let linked = view
                .link_at(fd, old_flags, old_path, new_fd, new_path)
                .await;
            Ok((answer(&mut view, linked)?,))
        })
    })?;
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, args: SymlinkAt| {
            Box::new(async move {
                let (fd, target, path) = args;
                let mut view = store.data_mut().filesystem();
                note(&view, &fd, &path);
                let linked = view.symlink_at(fd, target, path).await;
                Ok((answer(&mut view, linked)?,))
            })
        },
    )?;
    Ok(())
}

/// WASI's answer as the component receives it.
fn answer<T>(
    view: &mut WasiFilesystemCtxView<'_>,
    result: FsResult<T>,
) -> wasmtime::Result<Result<T, ErrorCode>> {
    match result {
        Ok(v) => Ok(Ok(v)),
        Err(e) => Ok(Err(view.convert_error_code(e)?)),
    }
}

/// Logs a write at `path` under `fd` when `fd` is a folder granted read-only.
fn note(view: &WasiFilesystemCtxView<'_>, fd: &Resource<Descriptor>, path: &str) {
    let Ok(Descriptor::Dir(dir)) = view.table.get(fd) else {
        return;
    };
    if !dir.perms.write_not_permitted() {
        return;
    }
    // The folder's own path, as the kernel has it (the descriptor keeps none).
    let folder = std::fs::read_link(format!("/proc/self/fd/{}", dir.dir.as_raw_fd()));
    let at = match folder {
        Ok(folder) => folder.join(path).display().to_string(),
        Err(_) => path.to_string(),
    };
    refused(format!(
        "a write into {at:?}, in a folder granted read-only"
    ));
}
