//! pi and the mcpw pi package (`integrations/pi`), for the pi tests.

use super::{Servers, digest, install_once, run};
use crate::workspace;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// pi and the mcpw pi package.
pub struct Pi {
    /// The pi install of each line, with its node: 0.73 on Node 20, 1.x on Node 22.
    pub lines: Vec<PiLine>,
    /// The package: `integrations/pi` with its dependencies installed.
    pub package: PathBuf,
    /// The package's tests (`integrations/pi/test`, run from the source tree).
    pub tests: PathBuf,
}

/// One line of pi: its name, its install, the node it runs on.
pub struct PiLine {
    pub name: &'static str,
    pub dir: PathBuf,
    pub node: PathBuf,
}

impl Servers {
    /// Installs both pi lines (`integrations/pi/test/pi073`, `pi15`) and the
    /// package's own dependencies into `target/test-servers/pi`, once per
    /// lockfile; the package's sources are copied every run, so edits apply
    /// at once.
    pub fn pi(&self) -> &'static Pi {
        static PI: OnceLock<Pi> = OnceLock::new();
        PI.get_or_init(|| {
            let node22 = self.node22();
            let src = workspace().join("integrations/pi");
            let root = self.npm.parent().unwrap().join("pi");
            let npm_ci = |from: &Path, to: &Path| {
                std::fs::create_dir_all(to).unwrap();
                let files = [from.join("package.json"), from.join("package-lock.json")];
                install_once(to, &digest(&files), || {
                    for f in &files {
                        std::fs::copy(f, to.join(f.file_name().unwrap())).unwrap();
                    }
                    run(
                        Command::new("npm")
                            .args(["ci", "--no-audit", "--no-fund"])
                            .current_dir(to),
                        &format!("npm ci ({})", from.display()),
                    );
                });
            };
            let package = root.join("package");
            let (l073, l15) = (root.join("pi073"), root.join("pi15"));
            std::thread::scope(|s| {
                s.spawn(|| npm_ci(&src, &package));
                s.spawn(|| npm_ci(&src.join("test/pi073"), &l073));
                s.spawn(|| npm_ci(&src.join("test/pi15"), &l15));
            });
            crate::fs::copy_tree(&src.join("index.ts"), &package.join("index.ts"));
            crate::fs::copy_tree(&src.join("src"), &package.join("src"));
            crate::fs::copy_tree(&src.join("tsconfig.json"), &package.join("tsconfig.json"));
            Pi {
                lines: vec![
                    PiLine {
                        name: "0.73",
                        dir: l073,
                        node: PathBuf::from("node"),
                    },
                    PiLine {
                        name: "1.5",
                        dir: l15,
                        node: node22,
                    },
                ],
                package,
                tests: src.join("test"),
            }
        })
    }
}
