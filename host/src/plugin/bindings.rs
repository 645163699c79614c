//! Host-side bindings generated from the `mcpw:plugin` WIT package.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "policy",
});
