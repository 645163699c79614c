#![warn(missing_docs)]
//! mcpw: an MCP gateway whose agent-side policy (tool naming, direct tools,
//! search ranking) runs in sandboxed WebAssembly components.
//!
//! mcpw is five crates, each building on those before it:
//!
//! - `mcpw-core`, the floor: [`config`] loads and merges the server
//!   configuration from every source; [`catalog`] holds what is known of the
//!   servers' tools; [`plugin`] runs policy guests under wasmtime, with a
//!   sandbox and a fallback to the embedded default guest; [`testing`] is
//!   the guest kit; [`bench`](mod@bench) measures search quality.
//! - `mcpw-upstream`: [`upstream`] connects to servers (stdio, Streamable
//!   HTTP, legacy SSE, components), with [`auth`], [`team_state`] and the
//!   processes mcpw starts.
//! - `mcpw-host`: [`host::Host`] is the API for embedding mcpw, with the one
//!   call path; [`servers`] are the servers it runs (its lifecycle, which
//!   decides when they connect, is its own); [`cache`] remembers what they
//!   offer.
//! - `mcpw-gateway`: [`gateway`] serves it all to an MCP client (`mcpw serve`).
//! - this crate: the `mcpw` binary ([`doctor`] and the CLI). It re-exports
//!   the modules of the others under the names they had in one crate.
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
// The connections to servers, and what reaches out of the process.
pub use mcpw_upstream::{
    auth, clock, components, processes, secrets, team_state, telemetry, upstream,
};
// The host: the embedding API, the call path, the servers' lifecycle.
pub use mcpw_host::{
    cache, downstream, embed, guests, host, install, kept, pins, rate_limit, recent, registry,
    results, servers, stats,
};

// The gateway: `mcpw serve`.
pub use mcpw_gateway::gateway;

#[cfg(test)]
mod crate_layers;
pub mod doctor;
#[cfg(test)]
mod function_length;
#[cfg(test)]
mod module_graph;
#[cfg(test)]
mod unused_pub;
#[cfg(test)]
mod workspace_code;
