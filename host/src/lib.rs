#![warn(missing_docs)]
//! mcpw: an MCP gateway whose agent-side policy (tool naming, direct tools,
//! search ranking) runs in sandboxed WebAssembly components.
//!
//! - The floor is the `mcpw-core` crate, re-exported here: [`config`] loads
//!   and merges the server configuration from every source; [`catalog`] holds
//!   what is known of the servers' tools; [`plugin`] runs policy guests under
//!   wasmtime, with a sandbox and a fallback to the embedded default guest;
//!   [`bench`](mod@bench) measures search quality and speed the way the
//!   reference evaluation does.
//! - [`upstream`] connects to servers (stdio, Streamable HTTP, legacy SSE); [`lifecycle`]
//!   decides when; [`cache`] remembers what they offer.
//! - [`host`] ties it all together: [`host::Host`] is the API for embedding mcpw.
//! - [`gateway`] serves it all to an MCP client (`mcpw serve`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpw::host::HostError> {
//! let host = mcpw::host::Host::from_config_value(serde_json::json!({
//!     "mcpServers": {"time": {"command": "mcp-server-time"}}
//! }))
//! .await?;
//! for (entry, score) in host.search("current time", Default::default()).await? {
//!     println!("{score:>5} {}", entry.name);
//! }
//! let out = host.call("time__get_current_time", serde_json::json!({"timezone": "UTC"}).as_object().cloned()).await?;
//! println!("{:?}", out.content);
//! host.shutdown().await;
//! # Ok(()) }
//! ```

// The floor, as the rest of this crate and its users name it.
pub use mcpw_core::{
    apps, audit, bench, catalog, config, paths, plugin, present, testing, visible,
};
pub(crate) use mcpw_core::{file_lock, state_file};
// The connections to servers, and what reaches out of the process.
pub use mcpw_upstream::{
    auth, clock, components, processes, secrets, team_state, telemetry, upstream,
};
pub(crate) use mcpw_upstream::{log_level, net};

pub mod cache;
pub mod doctor;
pub mod embed;
#[cfg(test)]
mod function_length;
pub mod gateway;
pub mod guests;
pub mod host;
pub mod install;
pub mod kept;
pub mod lifecycle;
pub(crate) mod metrics;
#[cfg(test)]
mod module_graph;
pub mod pins;
pub mod rate_limit;
pub mod recent;
pub mod registry;
pub mod results;
pub mod stats;
#[cfg(test)]
mod workspace_code;
