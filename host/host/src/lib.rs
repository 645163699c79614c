#![warn(missing_docs)]
//! mcpw's host: the API for embedding mcpw ([`host::Host`]) and all it runs.
//!
//! - [`host`] is the front door, with the one call path every call takes
//!   ([`host::pipeline`]): scope, rate limits, guards, approval, the call,
//!   the guards on its result, the audit line.
//! - [`lifecycle`] decides when servers connect and stop; [`cache`]
//!   remembers what they offer; [`pins`] holds their tools to what the user
//!   approved.
//! - [`embed`] is search by meaning (the `embed` feature runs the models);
//!   [`results`] and [`kept`] keep big results; [`stats`], [`recent`] and
//!   [`metrics`] count calls; [`install`] and [`registry`] add servers;
//!   [`rate_limit`] counts calls against limits; [`guests`] are the guests
//!   it embeds beyond the default one.
//!
//! It builds on `mcpw-core` and `mcpw-upstream`. A connection's bare call
//! is reached only through the lifecycle, which hands no connection out:
//! whoever holds a `Host` calls along the pipeline.

// The floors, named as the modules here name them.
use mcpw_core::{
    apps, audit, catalog, config, file_lock, paths, plugin, present, state_file, visible,
};
use mcpw_upstream::{
    auth, clock, components, log_level, processes, team_state, telemetry, upstream,
};

pub mod cache;
pub mod embed;
pub mod guests;
pub mod host;
pub mod install;
pub mod kept;
pub mod lifecycle;
pub mod metrics;
pub mod pins;
pub mod rate_limit;
pub mod recent;
pub mod registry;
pub mod results;
pub mod stats;
