//! The default mcpw policy guest.
//!
//! The policy lives in plain Rust modules that know nothing of WebAssembly and are
//! unit-tested natively; `glue` maps them onto the roles of `mcpw-guest`,
//! whose export macro binds them to the `mcpw:plugin` contract on wasm32.

pub mod direct;
pub mod model;
pub mod naming;
pub mod ranking;

pub mod glue;
