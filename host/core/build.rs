//! Builds the default policy guest (`guest-example/`) for wasm32-wasip2 and
//! puts it in OUT_DIR, where `include_bytes!` embeds it: the fallback of
//! every policy role, so the runtime always has one.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest
        .ancestors()
        .nth(2)
        .expect("host/core sits in the workspace")
        .to_path_buf();
    mcpw_guest_build::watch(&workspace.join("guest-example"));
    let wasm = mcpw_guest_build::build(&workspace, "mcpw-guest-default");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("default-guest.wasm");
    std::fs::copy(&wasm, &out).expect("copy the default guest into OUT_DIR");
}
