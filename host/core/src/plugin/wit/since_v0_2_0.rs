//! `mcpw:plugin@0.2.0`, bound from `wit/since_v0.2.0/`: skills as a kind of
//! entry, the need a search hit answers, and the `toolbox` read of a skill's
//! files. It changes types of 0.1.x, so a 0.1.x guest is linked against
//! [`super::since_v0_1_1`] instead, and mapped onto this version there.

/// The version this module binds.
pub(crate) const VERSION: &str = "0.2.0";

wasmtime::component::bindgen!({
    path: "../../wit/since_v0.2.0",
    world: "all",
    // The host ends a script run from these (a limit, a cancellation).
    imports: {
        "mcpw:plugin/toolbox.start-call": trappable,
        "mcpw:plugin/toolbox.next-finished": trappable,
    },
});
