//! `mcpw:plugin@0.1.1`, bound from `wit/since_v0.1.1/`: 0.1.0 and the script
//! role (`script`, `toolbox`). It only adds to 0.1.0, so a 0.1.0 guest links
//! against it unchanged (wasmtime matches `@0.1.0` names to `@0.1.1` ones).
//!
//! The host is written against the latest version; a guest of 0.1.x is
//! mapped onto it: [`convert`] turns values of one version into the other's,
//! its imports answer what the latest ones answer in 0.1.x terms
//! (`plugin/state/older.rs`: skills left out, no kind on a toolbox tool), and
//! its exports are called with the latest values (`plugin/exports.rs`).

pub(crate) mod convert;

/// The version this module binds.
pub(crate) const VERSION: &str = "0.1.1";

wasmtime::component::bindgen!({
    path: "../../wit/since_v0.1.1",
    world: "all",
    // The host ends a script run from these (a limit, a cancellation).
    imports: {
        "mcpw:plugin/toolbox.start-call": trappable,
        "mcpw:plugin/toolbox.next-finished": trappable,
    },
});
