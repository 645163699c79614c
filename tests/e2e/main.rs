//! End-to-end tests of mcpw: real guests under wasmtime, real config files, the
//! real binary. One test binary, so that wasmtime is linked once.

mod cache_and_processes;
mod cli;
mod common;
mod conformance;
mod connections;
mod default_guest;
mod fallback;
mod gateway;
mod guest_kit;
mod lifecycle;
mod listen;
mod loading;
mod misbehaving;
mod oauth;
mod operations;
mod pi;
mod protocol;
mod ranking_quality;
mod sandbox;
mod servers;
mod snapshot;
mod tasks;
mod team;
mod tokens;
