//! `mcpw:plugin@0.1.0`, bound from `wit/since_v0.1.0/` (frozen).

/// The version this module binds.
pub const VERSION: &str = "0.1.0";

wasmtime::component::bindgen!({
    path: "../wit/since_v0.1.0",
    world: "policy",
});
