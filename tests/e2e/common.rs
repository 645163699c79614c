//! Shared helpers: fixtures, the adversarial guest, guest loading.

use mcpw::catalog::{ConnectionState, Entry, ServerStatus, Tool};
use mcpw::config::Lifecycle;
use mcpw::plugin::{CompileCache, Grants, GuestModule, Limits, LoadOptions, StaticServices};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub(crate) use mcpw_test_support::workspace;

/// `tests/fixtures/<name>`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    workspace().join("tests/fixtures").join(name)
}

/// A compile cache shared by the tests, so each guest is compiled once per run.
pub(crate) fn cache() -> CompileCache {
    CompileCache::new(Some(
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compile-cache"),
    ))
}

/// A test guest of the workspace (`tests/guests/*`), built for wasm32-wasip2.
pub(crate) fn build_guest(package: &str) -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("guests");
    mcpw_guest_build::build_into(&workspace(), package, &target)
}

/// The adversarial guest (`tests/guests/adversarial`), built once per run.
pub(crate) fn adversarial_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build_guest("mcpw-guest-adversarial"))
}

pub(crate) fn adversarial() -> Vec<u8> {
    std::fs::read(adversarial_path()).unwrap()
}

/// A small catalog: two servers, five tools.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "github",
            "create_issue",
            "Create a new issue in a GitHub repository",
        ),
        Tool::new(
            "github",
            "list_issues",
            "List issues in a GitHub repository",
        ),
        Tool::new("git", "git_status", "Shows the working tree status"),
        Tool::new("git", "git_log", "Shows the commit logs"),
        Tool::new("loopback", "ping", "Answers a loop of pings"),
    ]
}

pub(crate) fn entries() -> Arc<[Entry]> {
    tools()
        .into_iter()
        .map(|t| Entry {
            name: format!("{}__{}", t.server, t.name),
            tool: t.into(),
        })
        .collect()
}

pub(crate) fn services() -> StaticServices {
    let status = |name: &str, n| ServerStatus {
        name: name.into(),
        state: ConnectionState::Cached,
        tool_count: n,
        lifecycle: Lifecycle::Lazy,
        last_error: None,
        protocol_version: None,
        listen: None,
    };
    StaticServices::new(
        vec![status("github", 2), status("git", 2), status("loopback", 1)],
        tools(),
    )
}

pub(crate) fn options(limits: Limits, grants: Grants) -> LoadOptions {
    LoadOptions {
        limits,
        grants,
        services: Arc::new(services()),
        cache: cache(),
    }
}

/// Loads a guest with these limits and grants.
pub(crate) fn load(name: &str, wasm: &[u8], limits: Limits, grants: Grants) -> Arc<GuestModule> {
    GuestModule::load(name, wasm, options(limits, grants)).unwrap()
}

/// Writes `text` to `dir/rel`, creating directories.
pub(crate) fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// Writes WAT text compiled to a binary at `dir/rel`.
pub(crate) fn write_wat(dir: &Path, rel: &str, wat: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::write(&path, ::wat::parse_str(wat).unwrap()).unwrap();
    path
}

/// A throwaway home and project directory for config tests.
pub(crate) struct ConfigDirs {
    pub root: tempfile::TempDir,
    pub env: mcpw::paths::Environment,
}

/// The environment an MCP client starts `mcpw` with, its home at `home`:
/// none of the variables that would point it at the developer's config,
/// caches or state, and a model hub that refuses at once (search by
/// meaning is on by default; no test reaches the public hub).
pub(crate) fn client_env(home: &Path) -> serde_json::Value {
    serde_json::json!({"HF_ENDPOINT": mcpw_test_support::OFFLINE_HUB, "HOME": home.display().to_string(),
                       "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": "", "XDG_STATE_HOME": "", "MCPW_CONFIG": ""})
}

/// [`client_env`] with the variables of `extra` (an object) too.
pub(crate) fn client_env_with(home: &Path, extra: serde_json::Value) -> serde_json::Value {
    let mut env = client_env(home);
    for (k, v) in extra.as_object().into_iter().flatten() {
        env[k] = v.clone();
    }
    env
}

impl ConfigDirs {
    pub(crate) fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("home")).unwrap();
        std::fs::create_dir_all(root.path().join("project")).unwrap();
        let env = mcpw::paths::Environment::from_pairs([
            ("HOME", root.path().join("home").display().to_string()),
            ("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB.to_string()),
        ]);
        ConfigDirs { root, env }
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    pub(crate) fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }

    /// Writes the default user config (`~/.config/mcpw/mcp.json`).
    pub(crate) fn user(&self, text: &str) -> PathBuf {
        write(&self.home(), ".config/mcpw/mcp.json", text)
    }

    /// Changes the default user config, as JSON, with `change`.
    pub(crate) fn edit_user(&self, change: impl FnOnce(&mut serde_json::Value)) {
        let file = self.home().join(".config/mcpw/mcp.json");
        let mut config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        change(&mut config);
        self.user(&config.to_string());
    }

    pub(crate) fn sources(&self) -> mcpw::config::ConfigSources {
        mcpw::config::ConfigSources {
            user_value: None,
            user_file: None,
            project_dir: Some(self.project()),
            env: self.env.clone(),
        }
    }

    pub(crate) fn load(&self) -> mcpw::config::Config {
        mcpw::config::load(&self.sources())
    }
}

/// The agent-facing names of every exposed tool of `host`.
pub(crate) async fn entry_names(host: &mcpw::host::Host) -> Vec<String> {
    host.entries()
        .await
        .unwrap()
        .iter()
        .map(|e| e.name.clone())
        .collect()
}

/// Starts a host over `servers` (the `mcpServers` object) with test-friendly
/// options: caches in the temp home, no background maintenance.
pub(crate) async fn host(
    dirs: &ConfigDirs,
    servers: serde_json::Value,
    tweak: impl FnOnce(&mut mcpw::host::HostOptions),
) -> mcpw::host::Host {
    dirs.user(&serde_json::json!({"mcpServers": servers}).to_string());
    host_with_config(dirs, tweak).await
}

/// Starts a host over the config files already written.
pub(crate) async fn host_with_config(
    dirs: &ConfigDirs,
    tweak: impl FnOnce(&mut mcpw::host::HostOptions),
) -> mcpw::host::Host {
    let cfg = dirs.load();
    assert!(!cfg.has_errors(), "{:?}", cfg.diagnostics);
    let mut options = mcpw::host::HostOptions::for_env(&dirs.env);
    options.compile_cache = cache();
    options.maintenance = false;
    tweak(&mut options);
    mcpw::host::Host::start(cfg, dirs.env.clone(), options)
        .await
        .unwrap()
}
