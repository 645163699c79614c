//! Used from build scripts to build a guest crate of this workspace into a
//! WebAssembly component, the way wasmtime's and Spin's test programs are built:
//! a nested `cargo build` with its own target directory, so that it never waits
//! on the outer build's lock.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target every guest is built for.
const TARGET: &str = "wasm32-wasip2";

/// Builds `package` (a member of the workspace at `workspace`) for wasm32-wasip2
/// with the `guest` profile and returns the path of the `.wasm` component.
///
/// Panics with a readable message on failure: this runs in build scripts.
pub fn build(workspace: &Path, package: &str) -> PathBuf {
    let wasm = build_into(workspace, package, &guest_target_dir());
    println!("cargo:rerun-if-changed={}", workspace.join("wit").display());
    wasm
}

/// Like [`build`], into an explicit target directory; usable outside build
/// scripts (tests build their guests this way).
pub fn build_into(workspace: &Path, package: &str, target_dir: &Path) -> PathBuf {
    let mut cmd = cargo_build(workspace, target_dir);
    cmd.args(["--package", package, "--profile", "guest"]);
    let file = format!("{}.wasm", package.replace('-', "_"));
    run(
        cmd,
        package,
        target_dir.join(TARGET).join("guest").join(file),
    )
}

/// Builds the binary `bin` of the crate at `dir` (a crate of its own, outside
/// the workspace: a component whose dependencies the host never builds) for
/// wasm32-wasip2 in release, into `target_dir`; returns the component's path.
pub fn build_crate_bin(dir: &Path, bin: &str, target_dir: &Path) -> PathBuf {
    let mut cmd = cargo_build(dir, target_dir);
    cmd.args(["--release", "--bin", bin]);
    let wasm = target_dir
        .join(TARGET)
        .join("release")
        .join(format!("{bin}.wasm"));
    run(cmd, bin, wasm)
}

/// Builds the library of the crate at `dir` (a `cdylib` named `lib`, a
/// component exporting what its world does: `wasi:http/proxy`, say) for
/// wasm32-wasip2 in release, into `target_dir`; returns the component's path.
pub fn build_crate_lib(dir: &Path, lib: &str, target_dir: &Path) -> PathBuf {
    let mut cmd = cargo_build(dir, target_dir);
    cmd.args(["--release", "--lib"]);
    let wasm = target_dir
        .join(TARGET)
        .join("release")
        .join(format!("{lib}.wasm"));
    run(cmd, lib, wasm)
}

/// [`build_crate_bin`] for this machine instead of WebAssembly (the same
/// server as a native process, for comparison).
pub fn build_crate_bin_native(dir: &Path, bin: &str, target_dir: &Path) -> PathBuf {
    let mut cmd = cargo(dir, target_dir);
    cmd.args(["--release", "--bin", bin]);
    run(cmd, bin, target_dir.join("release").join(bin))
}

/// `cargo build` for wasm32-wasip2 in `dir`, into `target_dir`.
fn cargo_build(dir: &Path, target_dir: &Path) -> Command {
    ensure_target();
    let mut cmd = cargo(dir, target_dir);
    cmd.args(["--target", TARGET]);
    cmd
}

/// `cargo build` in `dir`, into `target_dir`, with none of the outer build's flags.
fn cargo(dir: &Path, target_dir: &Path) -> Command {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(dir)
        .args(["build", "--quiet"])
        .arg("--target-dir")
        .arg(target_dir);
    // Flags meant for the outer (native) build must not leak into the wasm build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_MAKEFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_LLVM_COV",
        "LLVM_PROFILE_FILE",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs the build of `what` and returns `artifact`, which it must have made.
fn run(mut cmd: Command, what: &str, artifact: PathBuf) -> PathBuf {
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build {what}: {e}"));
    assert!(
        status.success(),
        "building {what} for {TARGET} failed ({status})"
    );
    assert!(
        artifact.exists(),
        "{what} was built but {} is missing",
        artifact.display()
    );
    artifact
}

/// Makes the build script re-run when anything under `dir` changes.
pub fn watch(dir: &Path) {
    println!("cargo:rerun-if-changed={}", dir.display());
}

/// Guests share one target directory beside the outer build's, so that debug,
/// release and test builds of the host reuse one guest build.
fn guest_target_dir() -> PathBuf {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set for build scripts"));
    // OUT_DIR = <target>/[<triple>/]<profile>/build/<pkg>-<hash>/out
    out.ancestors()
        .nth(4)
        .map(|t| t.join("guests"))
        .unwrap_or_else(|| out.join("guests"))
}

/// Installs the wasm32-wasip2 standard library with rustup when it is missing, so
/// that a fresh clone builds with one command.
fn ensure_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if sysroot.is_some_and(|s| s.join("lib/rustlib").join(TARGET).exists()) {
        return;
    }
    let mut cmd = Command::new("rustup");
    cmd.args(["target", "add", TARGET]);
    if let Ok(toolchain) = env::var("RUSTUP_TOOLCHAIN") {
        cmd.args(["--toolchain", &toolchain]);
    }
    eprintln!("installing the {TARGET} target with rustup (needed to build the guests)");
    let ok = cmd.status().map(|s| s.success()).unwrap_or(false);
    assert!(
        ok,
        "the {TARGET} target is not installed and `rustup target add {TARGET}` failed; install it and build again"
    );
}
