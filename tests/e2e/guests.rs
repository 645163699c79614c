//! Guests under wasmtime: the sandbox, the default guest and its fallback,
//! the guest author's kit, search quality, and the catalog snapshot the
//! guests name and rank.

mod default_guest;
mod fallback;
mod guest_kit;
mod ranking_quality;
mod sandbox;
mod snapshot;
