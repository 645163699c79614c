//! A PyPI package run as a server: installed by pip, at its exact version,
//! into a virtual environment of its own under mcpw's cache (nothing goes
//! into the user's Python), and run by its console script.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `package==version` is installed.
fn venv_dir(cache_dir: &Path, package: &str, version: &str) -> PathBuf {
    cache_dir
        .join("packages")
        .join("pypi")
        .join(format!("{package}-{version}"))
}

/// Installs `package==version` (once) and returns its console script: the
/// one named as the package, else its only one.
pub fn install(cache_dir: &Path, package: &str, version: &str) -> Result<PathBuf, String> {
    let venv = venv_dir(cache_dir, package, version);
    let bin = venv.join("bin");
    if !bin.join("python").exists() {
        run(
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
            "create a virtual environment",
        )?;
    }
    run(
        Command::new(bin.join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(format!("{package}=={version}")),
        &format!("install {package}=={version}"),
    )?;
    let listed = Command::new(bin.join("python"))
        .arg("-c")
        .arg(SCRIPTS)
        .arg(package)
        .output()
        .map_err(|e| format!("list the scripts of {package}: {e}"))?;
    let names = String::from_utf8_lossy(&listed.stdout);
    let names: Vec<&str> = names.lines().filter(|l| !l.is_empty()).collect();
    let script = names
        .iter()
        .find(|n| n.eq_ignore_ascii_case(package))
        .or(match names.as_slice() {
            [one] => Some(one),
            _ => None,
        })
        .ok_or_else(|| format!("{package} has no one console script to run (it has: {names:?})"))?;
    Ok(bin.join(script))
}

/// Prints the package's console scripts, one a line.
const SCRIPTS: &str = "import sys, importlib.metadata as m\n\
for e in m.distribution(sys.argv[1]).entry_points:\n    \
if e.group == 'console_scripts': print(e.name)\n";

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("could not {what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!("could not {what}: {}", tail.join(" / ")))
}
