//! Builds the guests the host embeds beyond the default policy guest (that
//! one is `mcpw-core`'s): the default script guest (`guest-example/javascript/`)
//! and the example guard (`guest-example/guard/`, which `mcpw demo` runs), for
//! wasm32-wasip2, into OUT_DIR, where `include_bytes!` embeds them.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest
        .ancestors()
        .nth(2)
        .expect("host/host sits in the workspace")
        .to_path_buf();
    mcpw_guest_build::watch(&workspace.join("guest-example"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    for (package, file) in [
        ("mcpw-guest-javascript", "script-guest.wasm"),
        ("mcpw-guest-guard", "example-guard.wasm"),
    ] {
        let wasm = mcpw_guest_build::build(&workspace, package);
        std::fs::copy(&wasm, out.join(file)).expect("copy a guest into OUT_DIR");
    }
}
