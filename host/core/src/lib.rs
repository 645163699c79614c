#![warn(missing_docs)]
//! mcpw's floor: what every other part of mcpw builds on, and all a guest
//! author's tests need.
//!
//! - [`config`] loads and merges the server configuration from every source.
//! - [`catalog`] holds what is known of the servers' tools.
//! - [`plugin`] runs policy guests under wasmtime, with a sandbox and a fallback
//!   to the embedded default guest; [`testing`] is its test kit.
//! - [`bench`](mod@bench) measures search quality and speed the way the reference evaluation does.
//! - [`present`], [`apps`], [`audit`] and [`visible`]: how results, views,
//!   audit lines and text put up for approval are made.
//! - [`paths`], [`state_file`], [`file_lock`] and [`private_fs`]: where mcpw
//!   keeps its files, and how it writes them.
//!
//! It may not touch the network, start processes or run an async runtime:
//! it depends on neither tokio nor rmcp (a test of the guest kit checks).
//! Connections, the host and the gateway build on it in the `mcpw` crate.

pub mod apps;
pub mod audit;
pub mod bench;
pub mod catalog;
pub mod config;
pub mod file_lock;
pub mod observe;
pub mod paths;
pub mod plugin;
pub mod present;
pub mod private_fs;
pub mod state_file;
#[cfg(test)]
mod test_props;
pub mod testing;
/// Text put up for approval, its hidden characters written out.
pub mod visible;
