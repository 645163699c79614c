//! Testing policy guests from a plain `cargo test`.
//!
//! ```no_run
//! use mcpw_core::testing::{GuestUnderTest, tools};
//!
//! #[test]
//! fn my_ranker() {
//!     let wasm = mcpw_core::testing::build(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
//!     let guest = GuestUnderTest::from_file(&wasm).unwrap();
//!     assert!(guest.conformance().iter().all(|c| c.passed()));
//!     let catalog = tools(&[("github", "create_issue", "Create an issue"), ("slack", "send_message", "Send a message")]);
//!     assert_eq!(guest.rank(&catalog, "open a ticket", 1).unwrap(), ["github__create_issue"]);
//! }
//! ```
//!
//! Guests run exactly as in production: compiled by the same engine, under the
//! same sandbox and limits, their answers checked against the WIT contract.

use crate::bench::{self, BenchReport};
use crate::catalog::{Entry, Tool};
use crate::plugin::conformance::{self, Check};
use crate::plugin::{
    CompileCache, DirectOptions, DirectPolicy, Grants, GuestModule, IndexOptions, Limits,
    LoadOptions, NameOutcome, Namer, NamingOptions, PluginError, Policy, PolicyConfig, PrefixMode,
    Ranker, SearchOptions, StaticServices,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A guest loaded for testing.
pub struct GuestUnderTest {
    name: String,
    wasm: Vec<u8>,
    module: Arc<GuestModule>,
    limits: Limits,
}

/// Tools from `(server, name, description)` triples.
pub fn tools(spec: &[(&str, &str, &str)]) -> Vec<Tool> {
    spec.iter().map(|(s, n, d)| Tool::new(*s, *n, *d)).collect()
}

/// Options to load a guest under test with `limits`.
fn options(limits: Limits) -> LoadOptions {
    LoadOptions {
        limits,
        grants: Grants::none(),
        services: Arc::new(StaticServices::default()),
        // Kept between runs, so a rerun does not recompile (private to this user).
        cache: CompileCache::new(Some(std::env::temp_dir().join(format!(
            "mcpw-test-guests-{}",
            // SAFETY: geteuid has no preconditions.
            unsafe { libc::geteuid() }
        )))),
    }
}

/// Names tools with the default naming guest, as the host would.
fn default_entries(tools: &[Tool]) -> Result<Arc<[Entry]>, PluginError> {
    let policy = Policy::load(
        &PolicyConfig::default(),
        Arc::new(StaticServices::default()),
    )?;
    Ok(policy.entries(tools, &NamingOptions::default())?.into())
}

impl GuestUnderTest {
    /// Loads a guest component from a file.
    pub fn from_file(path: &Path) -> Result<GuestUnderTest, PluginError> {
        let wasm = std::fs::read(path).map_err(|source| PluginError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_bytes(&path.display().to_string(), wasm)
    }

    /// Loads a guest component from bytes; `name` appears in errors.
    pub fn from_bytes(name: &str, wasm: Vec<u8>) -> Result<GuestUnderTest, PluginError> {
        let limits = Limits::default();
        let module = GuestModule::load(name, &wasm, options(limits))?;
        Ok(GuestUnderTest {
            name: name.to_string(),
            wasm,
            module,
            limits,
        })
    }

    /// The same guest under other sandbox limits (the default is production's).
    pub fn with_limits(self, limits: Limits) -> Result<GuestUnderTest, PluginError> {
        let module = GuestModule::load(&self.name, &self.wasm, options(limits))?;
        Ok(GuestUnderTest {
            module,
            limits,
            ..self
        })
    }

    /// Runs the conformance suite of `mcpw plugin test` on every role the guest fills.
    pub fn conformance(&self) -> Vec<Check> {
        conformance::run(&self.name, &self.wasm, options(self.limits), None).unwrap_or_else(|e| {
            vec![Check {
                role: "guest".into(),
                name: "loads".into(),
                failure: Some(e.to_string()),
                ms: 0,
            }]
        })
    }

    /// Ranks `tools` (named by the default naming guest) for `query`: the
    /// agent-facing names of the top `limit` hits, best first.
    pub fn rank(
        &self,
        tools: &[Tool],
        query: &str,
        limit: u32,
    ) -> Result<Vec<String>, PluginError> {
        let entries = default_entries(tools)?;
        let index =
            Ranker::new(self.module.clone())?.index(entries.clone(), IndexOptions::default())?;
        let hits = index.search(
            query,
            &SearchOptions {
                limit,
                ..Default::default()
            },
        )?;
        Ok(hits
            .into_iter()
            .map(|h| entries[h.index].name.clone())
            .collect())
    }

    /// Names `tools` with this guest's naming role.
    pub fn names(
        &self,
        tools: &[Tool],
        prefix: PrefixMode,
    ) -> Result<Vec<NameOutcome>, PluginError> {
        Namer::new(self.module.clone())?.names(
            tools,
            &NamingOptions {
                prefix,
                reserved: vec!["mcp".into(), "ToolSearch".into()],
            },
        )
    }

    /// The agent-facing names this guest's direct-tools role picks.
    pub fn direct(
        &self,
        tools: &[Tool],
        options: &DirectOptions,
    ) -> Result<Vec<String>, PluginError> {
        let entries = default_entries(tools)?;
        let picked = DirectPolicy::new(self.module.clone())?.select(&entries, options)?;
        Ok(picked
            .into_iter()
            .map(|i| entries[i].name.clone())
            .collect())
    }

    /// `mcpw plugin bench` over a catalog file and a labelled file
    /// (queries or tasks).
    pub fn bench(
        &self,
        catalog: &Path,
        queries: &Path,
    ) -> Result<BenchReport, Box<dyn std::error::Error>> {
        let entries = default_entries(&crate::catalog::load_catalog(catalog)?)?;
        let labelled = bench::load_labelled(queries)?;
        Ok(bench::run(
            &Ranker::new(self.module.clone())?,
            entries,
            &labelled,
            IndexOptions::default(),
        )?)
    }
}

/// Builds the guest crate at `crate_dir` for wasm32-wasip2 (release) and
/// returns its component. Uses a target directory of its own
/// (`<crate>/target/mcpw-guest`), so it never waits on the `cargo test` that
/// runs it.
pub fn build(crate_dir: &Path) -> Result<PathBuf, String> {
    let target = crate_dir.join("target").join("mcpw-guest");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--message-format=json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(crate_dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo build failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .flat_map(|m| m["filenames"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .rfind(|f| f.extension().is_some_and(|e| e == "wasm"))
        .ok_or_else(|| "the build produced no .wasm (is the crate a cdylib?)".to_string())
}
