//! mcpw: an MCP gateway whose agent-side policy (tool naming, direct tools,
//! search ranking) runs in sandboxed WebAssembly components.
//!
//! - [`config`] loads and merges the server configuration from every source.
//! - [`catalog`] holds what is known of the servers' tools.
//! - [`plugin`] runs policy guests under wasmtime, with a sandbox and a fallback
//!   to the embedded default guest.
//! - [`bench`] measures search quality and speed the way the reference evaluation does.

pub mod bench;
pub mod cache;
pub mod catalog;
pub mod config;
pub mod gateway;
pub mod host;
pub mod lifecycle;
pub mod paths;
pub mod plugin;
pub mod present;
pub mod upstream;
