//! Builds the default policy guest (`guest-example/`) and, for the gateway, the
//! default script guest (`guest-example/javascript/`) and the example guard
//! (`guest-example/guard/`, which `mcpw demo` runs) for wasm32-wasip2 and puts
//! them in OUT_DIR, where `include_bytes!` embeds them in the `mcpw` binary.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest
        .parent()
        .expect("host/ sits in the workspace")
        .to_path_buf();
    mcpw_guest_build::watch(&workspace.join("guest-example"));
    let wasm = mcpw_guest_build::build(&workspace, "mcpw-guest-default");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("default-guest.wasm");
    std::fs::copy(&wasm, &out).expect("copy the default guest into OUT_DIR");
    // The test kit (no `gateway`) runs no scripts of agents: it is spared the
    // JavaScript engine's build.
    if std::env::var_os("CARGO_FEATURE_GATEWAY").is_some() {
        let wasm = mcpw_guest_build::build(&workspace, "mcpw-guest-javascript");
        let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("script-guest.wasm");
        std::fs::copy(&wasm, &out).expect("copy the script guest into OUT_DIR");
        // The example guard, for `mcpw demo` to show a guard at work.
        let wasm = mcpw_guest_build::build(&workspace, "mcpw-guest-guard");
        let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("example-guard.wasm");
        std::fs::copy(&wasm, &out).expect("copy the example guard into OUT_DIR");
    }
}
