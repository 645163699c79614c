//! The versions of the `mcpw:plugin` contract the host speaks, one module
//! each over its frozen folder `wit/since_vX.Y.Z/`. `latest` is the one the
//! host's roles are written against; an older version's module maps its guests
//! onto it.

pub mod since_v0_1_0;

pub use since_v0_1_0 as latest;

/// The interface name of `interface` in the latest version, e.g.
/// `mcpw:plugin/naming@0.1.0`.
pub fn interface_name(interface: &str) -> String {
    format!("mcpw:plugin/{interface}@{}", latest::VERSION)
}
