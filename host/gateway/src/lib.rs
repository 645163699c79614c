#![warn(missing_docs)]
//! mcpw's gateway: a [`Host`](mcpw_host::host::Host) served to MCP clients
//! (`mcpw serve`) over stdio and Streamable HTTP, in each exposure (direct,
//! ToolSearch, the `mcp` proxy tool, code mode, auto), with client tokens,
//! replicas sharing sessions, the live page and the host of MCP Apps' views.
//!
//! It builds on `mcpw-host`, and reaches the servers only through it: their
//! state and events through [`mcpw_host::servers`], the requests
//! they make of a session's client through
//! [`mcpw_host::downstream`], whose trait the sessions here
//! implement. It may not name the connections or the lifecycle:
//!
//! ```no_run
//! # async fn through(host: &mcpw_host::host::Host) {
//! let servers: mcpw_host::servers::Servers = host.servers();
//! let _ = servers.connect("time", false).await;
//! # }
//! ```
//!
//! ```compile_fail
//! fn around(_: &mcpw_upstream::upstream::Connection) {}
//! ```
//!
//! ```compile_fail
//! fn around(_: &mcpw_host::lifecycle::Manager) {}
//! ```

// The crates below, named as the modules here name them.
use mcpw_core::{apps, audit, catalog, config, paths, plugin, present, visible};
use mcpw_host::{clock, log_level, net, secrets, team_state, telemetry};
use mcpw_host::{downstream, host, install, kept, registry, results, servers};

pub mod gateway;
