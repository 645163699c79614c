#![warn(missing_docs)]
//! mcpw's connections to MCP servers, and what they need: everything that
//! reaches out of the process.
//!
//! - [`upstream`] connects to servers (stdio, Streamable HTTP, legacy SSE,
//!   a component in the process): one [`upstream::Connection`] per server,
//!   its calls, reads, tasks, progress and the server's own requests.
//! - [`components`] runs MCP servers that are WebAssembly components, in
//!   the sandbox their permissions make.
//! - [`auth`] logs in to servers (OAuth) and keeps the credentials.
//! - [`processes`], [`secrets`]: the processes mcpw starts, and values from
//!   commands.
//! - [`team_state`]: the state replicas share in Redis.
//! - [`telemetry`]: traces over OTLP; [`clock`], [`net`], [`log_level`]:
//!   small utilities.
//!
//! It builds on `mcpw-core` and knows nothing of the host above it: no
//! lifecycle, cache, pipeline or gateway.

// The floor, named as the modules here name it.
use mcpw_core::{apps, catalog, config, file_lock, paths, plugin, present, private_fs, state_file};

pub mod auth;
pub mod clock;
pub mod components;
pub mod log_level;
pub mod net;
pub mod processes;
pub mod secrets;
pub mod team_state;
pub mod telemetry;
pub mod upstream;
