#![warn(missing_docs)]
//! mcpw's gateway: a [`Host`](mcpw_host::host::Host) served to MCP clients
//! (`mcpw serve`) over stdio and Streamable HTTP, in each exposure (direct,
//! ToolSearch, the `mcp` proxy tool, code mode, auto), with client tokens,
//! replicas sharing sessions, the live page and the host of MCP Apps' views.
//!
//! It builds on `mcpw-host`. It still names the lifecycle's and the
//! connections' types where a session meets its servers (their events, the
//! sessions that servers' own requests go back to); those seams are to
//! become the host's.

// The crates below, named as the modules here name them.
use mcpw_core::{apps, audit, catalog, config, paths, plugin, present, visible};
use mcpw_host::{host, install, kept, lifecycle, registry, results};
use mcpw_upstream::{clock, log_level, net, secrets, team_state, telemetry, upstream};

pub mod gateway;
