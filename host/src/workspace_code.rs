//! All the Rust of the repository, as the compiler sees it, for the checks
//! on the code's shape ([`function_length`](crate::function_length) and
//! [`module_graph`](crate::module_graph)):
//! every crate (the workspace's members, and the crates outside it: the fuzz
//! targets, the test servers built as components) and every target of each
//! (library, binaries, build script, benches, examples, tests), read from
//! `cargo metadata`, each walked from its root file through its `mod`
//! declarations (`#[path]` ones included). A directory walk would mix crates
//! that share a folder (`src/lib.rs` and `src/main.rs`, the benches) and miss
//! files shared through `#[path]`.

pub(crate) mod lexing;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One target of a package: a crate, with its module tree.
pub(crate) struct Crate {
    /// The package's name (`mcpw`, `mcpw-guest`).
    pub(crate) package: String,
    /// The target's kinds (`lib`, `bin`, `bench`, `test`, `custom-build`…).
    pub(crate) kinds: Vec<String>,
    pub(crate) modules: Vec<Module>,
}

/// A module that has a file of its own.
pub(crate) struct Module {
    /// Its path in its crate: `["cache", "writer"]`, empty for the root.
    pub(crate) path: Vec<String>,
    pub(crate) file: PathBuf,
    /// Test code: a test target, a `tests` module, or under `#[cfg(test)]`.
    pub(crate) test: bool,
    /// Its children that have files of their own.
    pub(crate) children: BTreeSet<String>,
}

/// The repository's root.
pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// Every crate of the repository (read once per test run).
pub(crate) fn crates() -> &'static [Crate] {
    static CRATES: OnceLock<Vec<Crate>> = OnceLock::new();
    CRATES.get_or_init(|| {
        let mut manifests = vec![root().join("Cargo.toml")];
        let mut seen = BTreeSet::new();
        let mut found = Vec::new();
        // The workspace's own manifest first: it names its members; then any
        // manifest it does not cover (excluded or separate workspaces).
        manifests_under(root(), &mut manifests);
        for manifest in manifests {
            if !seen.contains(&manifest.canonicalize().unwrap()) {
                for (package, kinds, src, path) in targets(&manifest) {
                    seen.insert(path);
                    let test = kinds.iter().any(|k| k == "test");
                    let mut modules = Vec::new();
                    walk(&src, Vec::new(), true, test, &mut modules);
                    found.push(Crate {
                        package: package.clone(),
                        kinds,
                        modules,
                    });
                }
            }
        }
        found
    })
}

/// Every `Cargo.toml` below `dir`, build output and dependencies left out.
fn manifests_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                manifests_under(&path, out);
            }
        } else if name == "Cargo.toml" && dir != root() {
            out.push(path);
        }
    }
}

/// The targets of the packages `manifest` defines (a workspace's: all its
/// members'): (package, kinds, root file, the package's manifest).
fn targets(manifest: &Path) -> Vec<(String, Vec<String>, PathBuf, PathBuf)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--no-deps",
        ])
        .arg("--manifest-path")
        .arg(manifest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata for {manifest:?}: {out:?}"
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = |v: &serde_json::Value| v.as_str().unwrap().to_string();
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        let manifest = PathBuf::from(text(&package["manifest_path"]));
        for target in package["targets"].as_array().unwrap() {
            let kinds = target["kind"].as_array().unwrap().iter().map(text);
            let src = PathBuf::from(text(&target["src_path"])).canonicalize();
            let package = text(&package["name"]);
            let manifest = manifest.canonicalize().unwrap();
            found.push((package, kinds.collect(), src.unwrap(), manifest));
        }
    }
    found
}

/// Adds the module in `file` and its descendants to `out`. `owns_dir`: its
/// children's files are beside it (a crate root, a `mod.rs`, a `#[path]`
/// file) rather than in a folder named after it.
fn walk(file: &Path, path: Vec<String>, owns_dir: bool, test: bool, out: &mut Vec<Module>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    let here = file.parent().unwrap();
    let dir = match owns_dir || file.ends_with("mod.rs") {
        true => here.to_path_buf(),
        false => here.join(file.file_stem().unwrap()),
    };
    let mut children = BTreeSet::new();
    for child in declarations(&text) {
        let file = match &child.path {
            Some(relative) => here.join(relative),
            None => [
                format!("{}.rs", child.name),
                format!("{}/mod.rs", child.name),
            ]
            .iter()
            .map(|f| dir.join(f))
            .find(|f| f.is_file())
            .unwrap_or_else(|| panic!("{file:?}: no file for `mod {};`", child.name)),
        };
        let mut under = path.clone();
        under.push(child.name.clone());
        let test = test || child.test || child.name == "tests";
        walk(&file, under, child.path.is_some(), test, out);
        children.insert(child.name);
    }
    out.push(Module {
        path,
        file: file.canonicalize().unwrap(),
        test,
        children,
    });
}

/// A `mod name;` declaration.
struct Declaration {
    name: String,
    /// Its `#[path = "…"]`, if any.
    path: Option<String>,
    /// Under `#[cfg(test)]` (or `#[cfg(all(test, …))]`).
    test: bool,
}

/// The `mod name;` declarations of a file's text.
fn declarations(text: &str) -> Vec<Declaration> {
    let code = lexing::blanked(text);
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("mod ") {
        let start = from + at;
        from = start + 4;
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = code[from..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || !code[from + name.len()..].trim_start().starts_with(';') {
            continue;
        }
        // Its attributes: what lies between the previous item and it.
        let item = code[..start].rfind([';', '}', '{']).map_or(0, |i| i + 1);
        let attributes = &code[item..start];
        let path = attributes.find("#[path").map(|a| {
            let quoted = &text[item + a..start];
            quoted.split('"').nth(1).unwrap().to_string()
        });
        let test = attributes.contains("#[cfg(test)]") || attributes.contains("#[cfg(all(test");
        found.push(Declaration { name, path, test });
    }
    found
}

#[test]
fn the_walk_finds_declared_modules_and_their_attributes() {
    let text = "mod a;\n/// `mod doc;`\n#[cfg(test)]\nmod tests;\n#[path = \"x/y.rs\"]\npub(crate) mod b;\nmod inline { }\nconst S: &str = \"mod s;\";";
    let found: Vec<(String, Option<String>, bool)> = declarations(text)
        .into_iter()
        .map(|d| (d.name, d.path, d.test))
        .collect();
    assert_eq!(
        found,
        [
            ("a".into(), None, false),
            ("tests".into(), None, true),
            ("b".into(), Some("x/y.rs".into()), false)
        ]
    );
}

#[test]
fn every_kind_of_target_is_read() {
    let kinds: BTreeSet<&str> = crates()
        .iter()
        .flat_map(|c| c.kinds.iter().map(String::as_str))
        .collect();
    for kind in [
        "lib",
        "bin",
        "bench",
        "example",
        "test",
        "custom-build",
        "cdylib",
    ] {
        assert!(kinds.contains(kind), "no {kind} target among {kinds:?}");
    }
    let files: BTreeSet<PathBuf> = crates()
        .iter()
        .flat_map(|c| c.modules.iter().map(|m| m.file.clone()))
        .collect();
    for file in [
        "host/benches/gateway/team.rs",
        "host/fuzz/fuzz_targets/interpolate.rs",
    ] {
        let file = root().join(file).canonicalize().unwrap();
        assert!(files.contains(&file), "{file:?} is not read");
    }
}
