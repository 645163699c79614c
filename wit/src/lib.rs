//! Policy and script guests for mcpw in plain Rust.
//!
//! Implement a role's trait ([`Naming`], [`DirectTools`], [`Ranking`]) on a
//! type of yours and export it with the role's macro ([`naming!`],
//! [`direct_tools!`], [`ranking!`], or [`policy!`] for all three); build the
//! crate as a `cdylib` for `wasm32-wasip2`. The macros bind the contract this
//! crate ships (`mcpw:plugin@0.2.0`, in `since_v0.2.0/`), turn a panic into a
//! log record before the trap, and expand to nothing on other targets, so the
//! same crate runs its unit tests natively. The script role (code mode) is in
//! [`script`](mod@script) (contract 0.2.0) and the guard role in [`guard`](mod@guard) (0.1.1),
//! exported with [`script!`] and [`guard!`].
//!
//! ```text
//! struct Suffix;
//! impl mcpw_guest::Naming for Suffix {
//!     fn names(tools: Vec<Tool>, _: NamingOptions) -> Result<Vec<NameOutcome>, PluginError> { … }
//! }
//! mcpw_guest::naming!(Suffix);
//! ```

pub mod guard;
mod model;
pub mod script;
#[doc(hidden)]
pub mod worlds;

pub use model::*;
pub use worlds::host::mcpw::plugin::types::{
    ConnectionState, Entry, LifecycleMode, PluginError, PrefixMode, ServerStatus, Tool, ToolKind,
};

/// What the host offers every guest: `log` always, `catalog`, `lifecycle`
/// and `calls` as far as the config grants them to the guest's role (else
/// they answer [`PluginError::Denied`]). Callable only inside mcpw.
pub mod host {
    pub use crate::worlds::host::mcpw::plugin::{calls, catalog, lifecycle, log};
}

/// Text embeddings by the host's model (`mcpw:plugin/embed@0.2.0`), granted
/// to the ranking role by default. Outside mcpw (native unit tests) there is
/// no model.
pub mod embed {
    pub use crate::worlds::embedding::mcpw::plugin::embed::{
        EmbedError, ModelInfo, Progress, Urgency,
    };

    /// The host's model: none when no model is configured, or `embed` is
    /// not granted to this guest's role.
    pub fn model() -> Option<ModelInfo> {
        #[cfg(target_arch = "wasm32")]
        return crate::worlds::embedding::mcpw::plugin::embed::model();
        #[cfg(not(target_arch = "wasm32"))]
        None
    }

    /// One unit vector per text: `Urgency::Now` for a query (at most 64
    /// texts), `Urgency::Background` for a catalog (`EmbedError::Pending`
    /// until every text has its vector; the host then builds the index again).
    pub fn embed(texts: &[String], urgency: Urgency) -> Result<Vec<Vec<f32>>, EmbedError> {
        #[cfg(target_arch = "wasm32")]
        return crate::worlds::embedding::mcpw::plugin::embed::embed(texts, urgency);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = (texts, urgency);
            Err(EmbedError::NoModel)
        }
    }
}

/// The naming role: the agent-facing name of every tool.
pub trait Naming {
    /// One outcome per tool, in order: a name (`^[A-Za-z0-9_-]{1,64}$`,
    /// unique, not reserved), a duplicate of an earlier named tool, or
    /// reserved.
    fn names(tools: Vec<Tool>, options: NamingOptions) -> Result<Vec<NameOutcome>, PluginError>;
}

/// The direct-tools role: which tools are loaded directly.
pub trait DirectTools {
    /// Indices of the direct entries, strictly ascending.
    fn select(entries: Vec<Entry>, options: DirectOptions) -> Result<Vec<u32>, PluginError>;
}

/// The ranking role, on the search index type: built once per catalog, asked
/// many times.
pub trait Ranking: Sized + 'static {
    /// Builds the index of `entries`.
    fn build(entries: Vec<Entry>, options: IndexOptions) -> Result<Self, PluginError>;
    /// The best entries for `query`, best first, at most `options.limit`.
    fn search(&self, query: String, options: SearchOptions) -> Result<Vec<Hit>, PluginError>;
    /// [`Ranking::search`], each hit with the need of the query it answers
    /// (contract 0.2.0): what the host is given. By default, no needs.
    fn find(&self, query: String, options: SearchOptions) -> Result<Vec<Found>, PluginError> {
        Ok(self
            .search(query, options)?
            .into_iter()
            .map(Found::from)
            .collect())
    }
}

/// Writes a record into mcpw's log, attributed to this guest (stderr when
/// not running inside mcpw, as in native unit tests).
pub fn log(level: host::log::Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    host::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{level:?}: {message}");
}

/// Makes a panic a log record before the trap, so mcpw can say why the guest
/// failed. The export macros call it on every entry.
#[doc(hidden)]
pub fn panic_hook() {
    panics_to(|message| log(host::log::Level::Error, message));
}

/// Sends the message of any panic to `write`, from the first call on.
#[doc(hidden)]
pub fn panics_to(write: fn(&str)) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::panic::set_hook(Box::new(move |info| write(&info.to_string()))));
}

/// Exports `$glue` as the guest of `$world`: the one body behind the role
/// macros. wit-bindgen's export macro wants a type name, hence the alias.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_world {
    ($world:ident, $glue:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            type McpwExports = $glue;
    $crate::worlds::$world::export!(McpwExports with_types_in $crate::worlds::$world);
        };
    };
}

/// Exports `$t` ([`Naming`]) as a `namer` guest.
#[macro_export]
macro_rules! naming {
    ($t:ty) => {
        $crate::__export_world!(namer, $crate::worlds::Glue<$t, (), ()>);
    };
}

/// Exports `$t` ([`DirectTools`]) as a `direct-policy` guest.
#[macro_export]
macro_rules! direct_tools {
    ($t:ty) => {
        $crate::__export_world!(direct_policy, $crate::worlds::Glue<(), $t, ()>);
    };
}

/// Exports the index type `$t` ([`Ranking`]) as a `ranker` guest.
#[macro_export]
macro_rules! ranking {
    ($t:ty) => {
        $crate::__export_world!(ranker, $crate::worlds::Glue<(), (), $t>);
    };
}

/// Exports `$t` ([`script::Script`]) as a `scripter` guest (contract 0.2.0).
#[macro_export]
macro_rules! script {
    ($t:ty) => {
        $crate::__export_world!(scripter, $crate::script::ScriptGlue<$t>);
    };
}

/// Exports `$t` ([`guard::Guard`]) as a `guarder` guest (contract 0.1.1).
#[macro_export]
macro_rules! guard {
    ($t:ty) => {
        $crate::__export_world!(guarder, $crate::guard::GuardGlue<$t>);
    };
}

/// Exports all three roles, a `policy` guest:
/// `policy!(naming: N, direct_tools: D, ranking: R)`.
#[macro_export]
macro_rules! policy {
    (naming: $n:ty, direct_tools: $d:ty, ranking: $r:ty $(,)?) => {
        $crate::naming!($n);
        $crate::direct_tools!($d);
        $crate::ranking!($r);
    };
}
