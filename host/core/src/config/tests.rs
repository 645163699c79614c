//! Loading real config files from a temporary home and project directory:
//! imports, merge order and validation.

mod imports;
mod merge;
mod trust;
mod validation;

use super::{Config, ConfigSources, Transport};
use crate::paths::Environment;
use std::path::{Path, PathBuf};

/// Writes `text` to `dir/rel`, creating directories.
fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// A throwaway home and project directory.
struct ConfigDirs {
    root: tempfile::TempDir,
    env: Environment,
}

impl ConfigDirs {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("home")).unwrap();
        std::fs::create_dir_all(root.path().join("project")).unwrap();
        let env =
            Environment::from_pairs([("HOME", root.path().join("home").display().to_string())]);
        ConfigDirs { root, env }
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }

    /// Writes the default user config (`~/.config/mcpw/mcp.json`).
    fn user(&self, text: &str) -> PathBuf {
        write(&self.home(), ".config/mcpw/mcp.json", text)
    }

    fn sources(&self) -> ConfigSources {
        ConfigSources {
            user_value: None,
            user_file: None,
            project_dir: Some(self.project()),
            env: self.env.clone(),
        }
    }

    fn load(&self) -> Config {
        super::load(&self.sources())
    }
}

/// `(name, origin)` of every server, the origin being the source kind or
/// `import:KIND`.
fn server_origins(cfg: &Config) -> Vec<(String, String)> {
    cfg.servers
        .iter()
        .map(|s| {
            let from = match &s.origin.import {
                Some(i) => format!("import:{i}"),
                None => s.origin.kind.to_string(),
            };
            (s.name.clone(), from)
        })
        .collect()
}

/// The stdio command of a server (the URL of an HTTP one).
fn command(cfg: &Config, name: &str) -> String {
    match &cfg
        .server(name)
        .unwrap_or_else(|| panic!("no server {name}"))
        .config
        .transport
    {
        Transport::Stdio { command, .. } => command.clone(),
        Transport::Http { url, .. } => url.clone(),
        Transport::Component { component, .. } => component.clone(),
    }
}
