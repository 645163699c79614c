#![warn(missing_docs)]
//! mcpw: an MCP gateway whose agent-side policy (tool naming, direct tools,
//! search ranking) runs in sandboxed WebAssembly components.
//!
//! - [`config`] loads and merges the server configuration from every source.
//! - [`catalog`] holds what is known of the servers' tools.
//! - [`plugin`] runs policy guests under wasmtime, with a sandbox and a fallback
//!   to the embedded default guest.
//! - [`bench`](mod@bench) measures search quality and speed the way the reference evaluation does.
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

// Without the `gateway` feature, the crate is the plugin runtime and its test
// kit: config, catalog, plugin, bench, testing.
pub mod apps;
pub mod audit;
#[cfg(feature = "gateway")]
pub mod auth;
pub mod bench;
#[cfg(feature = "gateway")]
pub mod cache;
pub mod catalog;
#[cfg(feature = "gateway")]
pub mod clock;
#[cfg(feature = "gateway")]
pub mod components;
pub mod config;
#[cfg(feature = "gateway")]
pub mod doctor;
#[cfg(feature = "gateway")]
pub mod embed;
#[cfg(feature = "gateway")]
pub(crate) mod file_lock;
#[cfg(test)]
mod function_length;
#[cfg(feature = "gateway")]
pub mod gateway;
#[cfg(feature = "gateway")]
pub mod host;
#[cfg(feature = "gateway")]
pub mod install;
#[cfg(feature = "gateway")]
pub mod kept;
#[cfg(feature = "gateway")]
pub mod lifecycle;
#[cfg(feature = "gateway")]
pub(crate) mod log_level;
#[cfg(feature = "gateway")]
pub(crate) mod metrics;
#[cfg(test)]
mod module_graph;
#[cfg(feature = "gateway")]
pub(crate) mod net;
pub mod paths;
#[cfg(feature = "gateway")]
pub mod pins;
pub mod plugin;
pub mod present;
pub(crate) mod private_fs;
#[cfg(feature = "gateway")]
pub mod processes;
#[cfg(feature = "gateway")]
pub mod rate_limit;
#[cfg(feature = "gateway")]
pub mod recent;
#[cfg(feature = "gateway")]
pub mod registry;
#[cfg(feature = "gateway")]
pub mod results;
#[cfg(feature = "gateway")]
pub mod secrets;
pub(crate) mod state_file;
#[cfg(feature = "gateway")]
pub mod stats;
#[cfg(feature = "gateway")]
pub mod team_state;
#[cfg(feature = "gateway")]
pub mod telemetry;
#[cfg(all(test, unix))]
mod test_fs;
#[cfg(test)]
mod test_props;
pub mod testing;
#[cfg(feature = "gateway")]
pub mod upstream;
/// Text put up for approval, its hidden characters written out.
pub mod visible;
#[cfg(test)]
mod workspace_code;
