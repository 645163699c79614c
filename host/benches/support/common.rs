//! What `tests/e2e/servers.rs` needs from the tests' `common` module, for the
//! benches that include it.

pub fn workspace() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives inside the workspace")
        .to_path_buf()
}
