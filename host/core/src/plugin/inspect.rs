//! What a guest component offers and asks for, without running it.

use super::Role;
use super::engine::PluginEngine;
use super::guest::GuestModule;

/// A guest's roles and imports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestReport {
    /// The roles it implements.
    pub roles: Vec<Role>,
    /// Every interface it imports, e.g. `mcpw:plugin/catalog@0.1.0`.
    pub imports: Vec<String>,
    /// Every interface it exports.
    pub exports: Vec<String>,
}

impl GuestReport {
    /// The report of a loaded guest.
    pub fn of(module: &GuestModule) -> GuestReport {
        let engine = PluginEngine::shared().engine();
        let ty = module.component().component_type();
        GuestReport {
            roles: module.roles(),
            imports: ty.imports(engine).map(|(n, _)| n.to_string()).collect(),
            exports: ty.exports(engine).map(|(n, _)| n.to_string()).collect(),
        }
    }
}
