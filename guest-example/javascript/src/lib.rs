//! The default script guest of mcpw (code mode): runs the JavaScript an agent
//! writes in the Boa engine, inside the WebAssembly sandbox, with the session's
//! tools as `tools.<name>(args)` and `mcp.call`, `mcp.search`, `mcp.describe`;
//! and projects JSON with an agent's jq expression ([`select`], in jaq).
//!
//! The modules are plain Rust, tested natively; `glue` exports them as the
//! script role with the guest kit (`mcpw-guest`) when built for wasm.

pub mod declare;
pub mod engine;
pub mod select;
pub mod usage;

#[cfg(target_arch = "wasm32")]
mod glue;

#[cfg(test)]
mod tests;
