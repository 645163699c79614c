//! `npx` servers run their package's real binary directly, instead of under an
//! npm parent process (~140 MB each): the package is found in npm's `_npx` cache
//! (populated with `npm exec` when missing) and remembered for 24 hours in
//! `$XDG_CACHE_HOME/mcpw/npx.json`. Anything unexpected falls back to the
//! original `npx` command.

use crate::paths::Environment;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a resolution is trusted.
pub const TTL: Duration = Duration::from_secs(24 * 3600);

/// What `npx ARGS` would run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpxRequest {
    /// The package to install (`-p`/`--package`, else the first positional).
    pub package: String,
    /// The binary to run (the first positional when `-p` was given).
    pub bin: Option<String>,
    /// Arguments after the package / binary.
    pub args: Vec<String>,
}

/// Parses `npx` arguments; `None` when they are not understood.
pub fn parse(args: &[String]) -> Option<NpxRequest> {
    let mut package = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-y" | "--yes" | "-q" | "--quiet" | "--no-install" | "--prefer-offline" => i += 1,
            "-p" | "--package" => {
                package = Some(args.get(i + 1)?.clone());
                i += 2;
            }
            _ if a.starts_with("--package=") => {
                package = Some(a["--package=".len()..].to_string());
                i += 1;
            }
            "--" => {
                i += 1;
                break;
            }
            _ if a.starts_with('-') => return None,
            _ => break,
        }
    }
    let first = args.get(i)?.clone();
    let rest = args[i + 1..].to_vec();
    Some(match package {
        Some(p) => NpxRequest {
            package: p,
            bin: Some(first),
            args: rest,
        },
        None => NpxRequest {
            package: first,
            bin: None,
            args: rest,
        },
    })
}

/// The package name of a spec (`@scope/name@1.2` → `@scope/name`).
pub fn package_name(spec: &str) -> &str {
    let search_from = usize::from(spec.starts_with('@'));
    match spec[search_from..].find('@') {
        Some(at) => &spec[..at + search_from],
        None => spec,
    }
}

/// A resolved binary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    /// The binary file (a real path inside the package).
    pub bin_path: PathBuf,
    /// Run it with `node` (a JS file or a node shebang).
    pub is_js: bool,
    /// When it was resolved (ms since the epoch).
    pub resolved_at: u64,
}

impl Resolution {
    /// The command and arguments that replace `npx ...`.
    pub fn command(&self, extra: &[String]) -> (String, Vec<String>) {
        if self.is_js {
            let mut args = vec![self.bin_path.display().to_string()];
            args.extend(extra.iter().cloned());
            ("node".into(), args)
        } else {
            (self.bin_path.display().to_string(), extra.to_vec())
        }
    }
}

fn npm_cache(env: &Environment) -> PathBuf {
    env.get("npm_config_cache")
        .or_else(|| env.get("NPM_CONFIG_CACHE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| env.home().join(".npm"))
}

/// Looks for the package in npm's `_npx` cache.
fn find_in_npm_cache(req: &NpxRequest, env: &Environment) -> Option<Resolution> {
    let root = npm_cache(env).join("_npx");
    for dir in std::fs::read_dir(root).ok()?.flatten() {
        let dir = dir.path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("package.json")) else {
            continue;
        };
        let Ok(manifest) = serde_json::from_str::<Value>(&manifest) else {
            continue;
        };
        let packages = manifest["_npx"]["packages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !packages.iter().any(|p| p.as_str() == Some(&req.package)) {
            continue;
        }
        if let Some(res) = bin_of(
            &dir.join("node_modules").join(package_name(&req.package)),
            req,
        ) {
            return Some(res);
        }
    }
    None
}

/// The binary a package declares (the one named like the package, or its only one).
fn bin_of(package_dir: &Path, req: &NpxRequest) -> Option<Resolution> {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(package_dir.join("package.json")).ok()?)
            .ok()?;
    let name = package_name(&req.package);
    let unscoped = name.rsplit('/').next().unwrap_or(name);
    let rel = match &manifest["bin"] {
        Value::String(s) => s.clone(),
        Value::Object(bins) => {
            let wanted = req.bin.as_deref().unwrap_or(unscoped);
            match bins
                .get(wanted)
                .or_else(|| (bins.len() == 1).then(|| bins.values().next()).flatten())
            {
                Some(Value::String(s)) => s.clone(),
                _ => return None,
            }
        }
        _ => return None,
    };
    let bin_path = package_dir.join(rel);
    let bin_path = bin_path.canonicalize().ok()?;
    let is_js = matches!(
        bin_path.extension().and_then(|e| e.to_str()),
        Some("js" | "mjs" | "cjs")
    ) || node_shebang(&bin_path);
    Some(Resolution {
        bin_path,
        is_js,
        resolved_at: crate::clock::now_ms(),
    })
}

fn node_shebang(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 128];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let line = String::from_utf8_lossy(&head[..n]);
    line.starts_with("#!") && line.lines().next().is_some_and(|l| l.contains("node"))
}

#[derive(Default, Serialize, Deserialize)]
struct CacheFile {
    #[serde(default)]
    entries: BTreeMap<String, Resolution>,
}

fn key(req: &NpxRequest) -> String {
    format!("{}|{}", req.package, req.bin.as_deref().unwrap_or(""))
}

/// How long a first `npx` install may take: a package and its dependencies
/// fetched from npm, on a slow network or a busy machine. The server's start
/// after it has its own `startupTimeoutMs`.
pub const INSTALL_LIMIT: Duration = Duration::from_secs(300);
/// How often a running install says it still runs.
const PROGRESS_EVERY: Duration = Duration::from_secs(15);

/// Resolves `npx args`: from mcpw's resolution cache, else npm's `_npx` cache,
/// else after `npm exec` populated it. `None` means: run `npx` as configured.
/// The file work runs on blocking threads; an install past
/// [`INSTALL_LIMIT`] is an error naming the package.
pub async fn resolve(
    args: &[String],
    env: &Environment,
    server: &str,
) -> Result<Option<(Resolution, Vec<String>)>, super::ConnectError> {
    let Some(req) = parse(args) else {
        return Ok(None);
    };
    let (r, e) = (req.clone(), env.clone());
    if let Some(hit) = off_thread(move || remembered(&r, &e)).await.flatten() {
        return Ok(Some((hit, req.args)));
    }
    let (r, e) = (req.clone(), env.clone());
    let found = match off_thread(move || find_in_npm_cache(&r, &e))
        .await
        .flatten()
    {
        Some(found) => Some(found),
        None => {
            install(&req, env, server).await?;
            let (r, e) = (req.clone(), env.clone());
            off_thread(move || find_in_npm_cache(&r, &e))
                .await
                .flatten()
        }
    };
    let Some(resolution) = found else {
        tracing::debug!("npx {}: not resolved; running npx itself", req.package);
        return Ok(None);
    };
    let (r, e, found) = (req.clone(), env.clone(), resolution.clone());
    off_thread(move || remember(&r, &e, found)).await;
    Ok(Some((resolution, req.args)))
}

/// [`populate`] within [`INSTALL_LIMIT`], saying on stderr what it does.
async fn install(
    req: &NpxRequest,
    env: &Environment,
    server: &str,
) -> Result<(), super::ConnectError> {
    let started = std::time::Instant::now();
    tracing::info!(
        target: "mcpw::progress",
        "server \"{server}\": installing {} from npm (first use; up to {} s)",
        req.package,
        INSTALL_LIMIT.as_secs()
    );
    let mut installing = std::pin::pin!(tokio::time::timeout(INSTALL_LIMIT, populate(req, env)));
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    loop {
        tokio::select! {
            done = &mut installing => {
                return match done {
                    Ok(()) => {
                        tracing::info!(
                            target: "mcpw::progress",
                            "server \"{server}\": {} installed in {:.1} s",
                            req.package,
                            started.elapsed().as_secs_f64()
                        );
                        Ok(())
                    }
                    Err(_) => Err(super::ConnectError::Spawn {
                        command: "npx".into(),
                        message: format!(
                            "installing {} from npm took over {} s; try `npm exec --yes --package {} -- node -e 0` to see why",
                            req.package,
                            INSTALL_LIMIT.as_secs(),
                            req.package
                        ),
                    }),
                };
            }
            _ = tick.tick() => tracing::info!(
                target: "mcpw::progress",
                "server \"{server}\": still installing {} ({} s)",
                req.package,
                started.elapsed().as_secs()
            ),
        }
    }
}

/// Runs file work on a blocking thread.
async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

fn cache_file(env: &Environment) -> (PathBuf, CacheFile) {
    let path = env.cache_dir().join("npx.json");
    let file = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    (path, file)
}

/// A resolution from mcpw's own cache, still fresh and still installed.
fn remembered(req: &NpxRequest, env: &Environment) -> Option<Resolution> {
    let (_, file) = cache_file(env);
    let now = crate::clock::now_ms();
    file.entries
        .get(&key(req))
        .filter(|hit| {
            now.saturating_sub(hit.resolved_at) < TTL.as_millis() as u64 && hit.bin_path.exists()
        })
        .cloned()
}

/// Adds a resolution to mcpw's cache; other processes may add theirs at once.
/// A cache that cannot be written only costs a resolution next time.
fn remember(req: &NpxRequest, env: &Environment, resolution: Resolution) {
    let path = env.cache_dir().join("npx.json");
    let read = |_: &Path| cache_file(env).1;
    let _ = crate::state_file::update(
        &path,
        crate::state_file::Access::Default,
        crate::file_lock::DEFAULT_WAIT,
        read,
        |file| file.entries.insert(key(req), resolution),
    );
}

/// Makes npm install the package into its `_npx` cache without starting it.
async fn populate(req: &NpxRequest, env: &Environment) {
    let registering = crate::processes::spawning();
    let result = tokio::process::Command::new("npm")
        .args([
            "exec",
            "--yes",
            "--package",
            &req.package,
            "--",
            "node",
            "-e",
            "0",
        ])
        .env_clear()
        .envs(env.vars())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        // Its own group, registered, so it dies with mcpw even on a signal.
        .process_group(0)
        .spawn();
    let result = match result {
        Ok(mut child) => {
            let _group = child.id().map(crate::processes::GroupGuard::new);
            drop(registering);
            child.wait().await
        }
        Err(e) => Err(e),
    };
    if !result.is_ok_and(|s| s.success()) {
        tracing::debug!("npm exec could not install {}", req.package);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_npx_arguments() {
        assert_eq!(
            parse(&v(&[
                "-y",
                "@modelcontextprotocol/server-everything@2026.8.31",
                "stdio"
            ])),
            Some(NpxRequest {
                package: "@modelcontextprotocol/server-everything@2026.8.31".into(),
                bin: None,
                args: v(&["stdio"])
            })
        );
        assert_eq!(
            parse(&v(&["--package", "pkg@1", "pkg-bin", "--flag"])),
            Some(NpxRequest {
                package: "pkg@1".into(),
                bin: Some("pkg-bin".into()),
                args: v(&["--flag"])
            })
        );
        assert_eq!(parse(&v(&["-p=x"])), None, "unknown flags fall back to npx");
        assert_eq!(
            parse(&v(&["--package=a", "b"])).unwrap().bin.as_deref(),
            Some("b")
        );
        assert_eq!(parse(&v(&["-y"])), None);
    }

    #[test]
    fn package_names_of_specs() {
        assert_eq!(package_name("@scope/name@1.2.3"), "@scope/name");
        assert_eq!(package_name("@scope/name"), "@scope/name");
        assert_eq!(package_name("name@latest"), "name");
        assert_eq!(package_name("name"), "name");
    }

    #[test]
    fn finds_a_package_in_the_npx_cache_and_detects_node() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".npm/_npx/abc123");
        let pkg = dir.join("node_modules/@scope/srv");
        std::fs::create_dir_all(pkg.join("bin")).unwrap();
        std::fs::write(
            dir.join("package.json"),
            r#"{"_npx": {"packages": ["@scope/srv@1.0.0"]}}"#,
        )
        .unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name": "@scope/srv", "bin": {"srv": "bin/run"}}"#,
        )
        .unwrap();
        std::fs::write(pkg.join("bin/run"), "#!/usr/bin/env node\nconsole.log(1)\n").unwrap();
        let env = Environment::from_pairs([("HOME", home.path().display().to_string())]);
        let req = parse(&v(&["-y", "@scope/srv@1.0.0", "--x"])).unwrap();
        let r = find_in_npm_cache(&req, &env).expect("found");
        assert!(r.is_js, "the node shebang makes it a JS binary");
        assert!(r.bin_path.ends_with("bin/run"));
        let (cmd, args) = r.command(&req.args);
        assert_eq!(cmd, "node");
        assert_eq!(args[1], "--x");
        let other = parse(&v(&["@scope/srv@2.0.0"])).unwrap();
        assert!(
            find_in_npm_cache(&other, &env).is_none(),
            "another version is another package"
        );
    }
}
