//! `mcpw serve` in front of real servers, driven by real clients: the three
//! exposures, the protocol passed through, tasks, client tokens, operations,
//! the official conformance suite, logins, and the pi package.

mod app_host;
mod approval;
mod apps;
pub(crate) mod code;
mod conformance;
mod eras;
mod exposure;
mod guarded_results;
pub(crate) mod guards;
mod install;
mod oauth;
mod operations;
mod page;
mod pi;
mod protocol;
mod results;
pub(crate) mod serve;
mod skill_reads;
mod skill_search;
pub(crate) mod skills;
mod tasks;
pub(crate) mod tokens;
mod tool_globs;
mod traces;
