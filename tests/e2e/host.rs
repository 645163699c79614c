//! The host and its command line against real servers and processes: the
//! lifecycle's real-process cases, the metadata cache and process groups,
//! transports and misbehaving servers, change streams, loading, and the CLI.

mod cache_and_processes;
mod call_path;
pub(crate) mod cli;
mod connections;
mod doctor;
pub(crate) mod embed;
pub(crate) mod install;
mod lifecycle;
mod listen;
mod loading;
mod misbehaving;
mod scripts;
mod shell;
mod trust;
