//! The WebAssembly plugin runtime: policy guests (naming, direct tools, ranking)
//! run as components under wasmtime, sandboxed, with the embedded default guest
//! as the fallback for every role.

pub mod compile_cache;
pub mod conformance;
pub mod engine;
mod exports;
pub mod guard;
pub mod guest;
pub mod inspect;
pub mod limits;
pub mod policy;
pub mod roles;
pub mod script;
pub mod services;
mod state;
pub mod ticker;
mod wit;

pub use crate::config::{Capability, Grants, PrefixMode, Role};
pub use compile_cache::{CompileCache, Compiled};
pub use guest::{GuestModule, LoadOptions};
pub use limits::{LimitHit, Limits};
pub use policy::{BrokenGuest, Policy, PolicyConfig, SearchIndex};
pub use roles::{
    DirectOptions, DirectPolicy, Hit, IndexOptions, NameOutcome, Namer, NamingOptions, QueryMode,
    RankIndex, Ranker, SearchOptions, ServerDirect, is_valid_tool_name,
};
pub use services::{
    CallOutcome, EmbedError, EmbedModel, HostServices, ServiceError, StaticServices, Urgency,
};

use std::path::PathBuf;

/// The default policy guest (`guest-example/`), built for wasm32-wasip2 and embedded.
pub const DEFAULT_GUEST: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/default-guest.wasm"));

impl Role {
    /// The WIT export that fills the role in the latest contract, e.g.
    /// `mcpw:plugin/naming@0.2.0`.
    pub fn export_name(self) -> String {
        wit::interface_name(&self.to_string())
    }

    /// The WIT exports that fill the role in every version the host speaks,
    /// latest first (a 0.1.0 export is found by its 0.1.1 name).
    pub fn export_names(self) -> [String; 2] {
        [
            self.export_name(),
            wit::older_interface_name(&self.to_string()),
        ]
    }
}

/// An error a guest returned as a value (WIT `plugin-error`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GuestError {
    /// An argument could not be used.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A regular expression did not compile.
    #[error("invalid pattern: {0}")]
    InvalidPattern(String),
    /// The host denied a capability (passed on by the guest).
    #[error("denied: {0}")]
    Denied(String),
    /// Not found.
    #[error("not found: {0}")]
    NotFound(String),
    /// Unavailable.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Anything else.
    #[error("{0}")]
    Failed(String),
}

/// Everything that can go wrong with a guest.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The guest file could not be read.
    #[error("cannot read guest {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The guest could not be compiled or linked.
    #[error("guest {guest}: {message}")]
    Load {
        /// The guest.
        guest: String,
        /// What is wrong.
        message: String,
    },
    /// The guest does not export the role it was given.
    #[error("guest {guest} does not implement the {role} role: it must export `{}` (or, of contract 0.1, `{}`), and it exports {}", .role.export_name(), .role.export_names()[1], list(.exports))]
    MissingRole {
        /// The guest.
        guest: String,
        /// The role.
        role: Role,
        /// What it exports instead.
        exports: Vec<String>,
    },
    /// A sandbox limit stopped the call.
    #[error("guest {guest} was stopped: it exceeded its {hit}")]
    Limit {
        /// The guest.
        guest: String,
        /// The limit.
        hit: LimitHit,
    },
    /// The guest trapped (a bug in the guest).
    #[error("guest {guest} trapped: {message}")]
    Trap {
        /// The guest.
        guest: String,
        /// The trap.
        message: String,
    },
    /// The guest's answer breaks the WIT contract.
    #[error("guest {guest} broke the {role} contract: {message}")]
    BadOutput {
        /// The guest.
        guest: String,
        /// The role.
        role: Role,
        /// How.
        message: String,
    },
    /// The guest answered with an error value.
    #[error("guest {guest}: {error}")]
    Guest {
        /// The guest.
        guest: String,
        /// Its error.
        error: GuestError,
    },
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".into()
    } else {
        items
            .iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl PluginError {
    /// True for an error value the guest returned on purpose: an answer to pass
    /// on, not a failure to recover from.
    pub fn is_answer(&self) -> bool {
        matches!(self, PluginError::Guest { .. })
    }
}
