//! End-to-end tests of mcpw: real guests under wasmtime, real config files, the
//! real binary. One test binary, so that wasmtime is linked once; a folder per
//! layer (guests, host, gateway, team), with the helpers they share beside
//! them. Pure config tests are unit tests of the config module.

mod bounds;
mod common;
mod components;
mod docs;
mod gateway;
mod guests;
mod host;
mod servers;
mod team;
