#![warn(missing_docs)]
//! mcpw's host: the API for embedding mcpw ([`host::Host`]) and all it runs.
//!
//! - [`host`] is the front door, with the one call path every call takes
//!   ([`host::pipeline`]): scope, rate limits, guards, approval, the call,
//!   the guards on its result, the audit line.
//! - [`servers`] are the servers it runs (its lifecycle, private, decides
//!   when they connect and stop); [`cache`]
//!   remembers what they offer; [`pins`] holds their tools to what the user
//!   approved.
//! - [`embed`] is search by meaning (the `embed` feature runs the models);
//!   [`results`] and [`kept`] keep big results; [`stats`], [`recent`] and
//!   [`metrics`] count calls; [`install`] and [`registry`] add servers;
//!   [`rate_limit`] counts calls against limits; [`guests`] are the guests
//!   it embeds beyond the default one.
//!
//! It builds on `mcpw-core` and `mcpw-upstream`. The lifecycle is private:
//! [`servers::Servers`] speaks for it, and hands no connection out, so a
//! connection's bare call is reached only along the pipeline. Whoever holds
//! a `Host` connects servers and calls their tools:
//!
//! ```no_run
//! # async fn along(host: &mcpw_host::host::Host) -> Result<(), mcpw_host::host::HostError> {
//! host.servers().connect("time", false).await?;
//! host.call("time__get_current_time", None).await?;
//! # Ok(()) }
//! ```
//!
//! Around the pipeline does not compile: connecting gives no connection,
//!
//! ```compile_fail
//! # async fn around(host: &mcpw_host::host::Host) {
//! let connection = host.servers().connect("time", false).await.unwrap();
//! let timeout = std::time::Duration::from_secs(5);
//! let options = mcpw_upstream::upstream::CallOptions::default();
//! let _ = connection.call_tool("get_current_time", None, timeout, options).await;
//! # }
//! ```
//!
//! the lifecycle's manager, which holds the connections, is the host's own,
//!
//! ```compile_fail
//! # async fn around(host: &mcpw_host::host::Host) {
//! let timeout = std::time::Duration::from_secs(5);
//! let options = mcpw_upstream::upstream::CallOptions::default();
//! let _ = host
//!     .manager()
//!     .with_connection("time", |c| async move {
//!         c.call_tool("get_current_time", None, timeout, options).await
//!     })
//!     .await;
//! # }
//! ```
//!
//! and so is the lifecycle itself.
//!
//! ```compile_fail
//! fn manager(_: &mcpw_host::lifecycle::Manager) {}
//! ```
//!
//! What the gateway and other users need of the crates below comes from
//! here: [`servers`] (their state, events and errors), [`downstream`] (the
//! clients servers' own requests go back to), and the utility modules
//! re-exported below.

// The floors, named as the modules here name them.
use mcpw_core::{
    apps, audit, catalog, config, file_lock, paths, plugin, present, state_file, visible,
};
use mcpw_upstream::{auth, components, processes, upstream};

// What a gateway or an embedder uses of the floors beneath: time, listening
// sockets, log levels, secrets in settings, the state replicas share, and
// tracing.
pub use mcpw_upstream::{clock, log_level, net, secrets, team_state, telemetry};

pub mod cache;
pub mod downstream;
pub mod embed;
pub mod guests;
pub mod host;
pub mod install;
pub mod kept;
pub(crate) mod lifecycle;
pub mod metrics;
pub mod pins;
pub mod rate_limit;
pub mod recent;
pub mod registry;
pub mod results;
pub mod servers;
pub mod stats;
