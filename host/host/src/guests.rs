//! The guests the `mcpw` binary embeds beyond the default policy guest
//! (which `mcpw-core` carries): built for wasm32-wasip2 by `build.rs`.

/// The default script guest (`guest-example/javascript/`): JavaScript in Boa.
pub const DEFAULT_SCRIPT_GUEST: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/script-guest.wasm"));

/// The example guard (`guest-example/guard/`), which `mcpw demo` runs: it
/// refuses calls that send a credential out and redacts them from results.
pub const EXAMPLE_GUARD: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/example-guard.wasm"));
