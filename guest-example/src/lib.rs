//! The default mcpw policy guest.
//!
//! The policy lives in plain Rust modules that know nothing of WebAssembly and are
//! unit-tested natively; `glue` (compiled only for wasm32) maps them onto the
//! `mcpw:plugin` WIT exports.

pub mod direct;
pub mod model;
pub mod naming;
pub mod ranking;

#[cfg(target_arch = "wasm32")]
mod glue;
