//! The versions of the `mcpw:plugin` contract the host speaks, one module
//! each over its folder `wit/since_vX.Y.Z/`. `latest` is the one the host's
//! roles are written against.
//!
//! A version that only adds to the one before it is a patch version (0.1.0 →
//! 0.1.1): wasmtime links a guest's `@0.1.0` imports and finds its `@0.1.0`
//! exports by their `@0.1.1` names, so older guests need no module of their
//! own. A version that changes something is a new minor version (0.2.0):
//! the module of the version before it maps its guests onto `latest`
//! (`since_v0_1_1`), and `plugin/exports.rs` calls a role in either.

pub(crate) mod since_v0_1_1;
pub(crate) mod since_v0_2_0;

pub(crate) use since_v0_2_0 as latest;

/// The interface name of `interface` in the latest version, e.g.
/// `mcpw:plugin/naming@0.2.0`.
pub(crate) fn interface_name(interface: &str) -> String {
    format!("mcpw:plugin/{interface}@{}", latest::VERSION)
}

/// The interface name of `interface` in 0.1.x, e.g. `mcpw:plugin/naming@0.1.1`.
pub(crate) fn older_interface_name(interface: &str) -> String {
    format!("mcpw:plugin/{interface}@{}", since_v0_1_1::VERSION)
}
