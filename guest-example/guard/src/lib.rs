//! An example guard guest for mcpw: it redacts credentials from every
//! result (known token formats, private keys, and long random strings next
//! to words like "key", "secret" or "token"), and refuses calls of
//! shell-like tools whose arguments match a deny list of destructive
//! commands.
//!
//! The modules are plain Rust, tested natively; `glue` exports them as the
//! guard role with the guest kit when built for wasm.

pub mod redact;
pub mod shell;

#[cfg(target_arch = "wasm32")]
mod glue;
