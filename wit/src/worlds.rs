//! The contract's worlds as wit-bindgen generates them, and the glue from
//! the policy worlds' exports to the plain traits (the script and guard
//! worlds' glue is beside their traits, in [`crate::script`](mod@crate::script) and
//! [`crate::guard`](mod@crate::guard)). The imports (and the `types`
//! they share) are generated once, in [`host`], so every world uses the same
//! `Tool`, `Entry` and `PluginError`.

use crate::{
    DirectOptions, DirectTools, Found, Hit, IndexOptions, NameOutcome, Naming, NamingOptions,
    QueryMode, Ranking, SearchOptions, ServerDirect, panic_hook,
};
use std::marker::PhantomData;

/// The imports every guest may use.
pub mod host {
    wit_bindgen::generate!({
        path: "since_v0.2.0",
        world: "host",
    });
}

/// The `embed` import, which the `host` world includes.
pub mod embedding {
    pub use super::host::*;
}

/// Generates one world's bindings whose export macro a guest crate calls.
macro_rules! world {
    ($module:ident, $world:literal, $path:literal) => {
        #[allow(missing_docs)]
        pub mod $module {
            wit_bindgen::generate!({
                path: "since_v0.2.0",
                world: $world,
                pub_export_macro: true,
                default_bindings_module: $path,
                with: {
                    "mcpw:plugin/types@0.2.0": crate::worlds::host::mcpw::plugin::types,
                    "mcpw:plugin/log@0.2.0": crate::worlds::host::mcpw::plugin::log,
                    "mcpw:plugin/catalog@0.2.0": crate::worlds::host::mcpw::plugin::catalog,
                    "mcpw:plugin/lifecycle@0.2.0": crate::worlds::host::mcpw::plugin::lifecycle,
                    "mcpw:plugin/calls@0.2.0": crate::worlds::host::mcpw::plugin::calls,
                    "mcpw:plugin/embed@0.2.0": crate::worlds::host::mcpw::plugin::embed,
                },
            });
        }
    };
}

world!(namer, "namer", "mcpw_guest::worlds::namer");
world!(
    direct_policy,
    "direct-policy",
    "mcpw_guest::worlds::direct_policy"
);
world!(ranker, "ranker", "mcpw_guest::worlds::ranker");
// No `policy` world: its exports would clash with these worlds' export macros.
// A guest that exports all three roles calls all three macros, and the
// component gets the union of their worlds, which is `policy`.

/// What a guest exports: `N` names, `D` picks direct tools, `R` is the
/// search index (`()` for a role the guest does not fill).
pub struct Glue<N, D, R>(PhantomData<(N, D, R)>);

/// A search index handed to the host as the WIT resource.
pub struct IndexGlue<R>(R);

/// The naming export of a world, over [`Naming`].
macro_rules! naming_glue {
    ($world:ident) => {
        impl<N: Naming, D, R> $world::exports::mcpw::plugin::naming::Guest for Glue<N, D, R> {
            fn names(
                tools: Vec<crate::Tool>,
                options: $world::exports::mcpw::plugin::naming::NamingOptions,
            ) -> Result<Vec<$world::exports::mcpw::plugin::naming::NameOutcome>, crate::PluginError>
            {
                use $world::exports::mcpw::plugin::naming::NameOutcome as Wit;
                panic_hook();
                let options = NamingOptions {
                    prefix: options.prefix,
                    reserved: options.reserved,
                };
                Ok(N::names(tools, options)?
                    .into_iter()
                    .map(|o| match o {
                        NameOutcome::Named(n) => Wit::Named(n),
                        NameOutcome::DuplicateOf(i) => Wit::DuplicateOf(i),
                        NameOutcome::Reserved(n) => Wit::Reserved(n),
                    })
                    .collect())
            }
        }
    };
}

/// The direct-tools export of a world, over [`DirectTools`].
macro_rules! direct_glue {
    ($world:ident) => {
        impl<N, D: DirectTools, R> $world::exports::mcpw::plugin::direct_tools::Guest
            for Glue<N, D, R>
        {
            fn select(
                entries: Vec<crate::Entry>,
                options: $world::exports::mcpw::plugin::direct_tools::DirectOptions,
            ) -> Result<Vec<u32>, crate::PluginError> {
                use $world::exports::mcpw::plugin::direct_tools::ServerDirect as Wit;
                panic_hook();
                let servers = options.servers.into_iter().map(|s| {
                    let direct = match s.direct {
                        Wit::All => ServerDirect::All,
                        Wit::None => ServerDirect::None,
                        Wit::Only(list) => ServerDirect::Only(list),
                    };
                    (s.server, direct)
                });
                let options = DirectOptions {
                    env_override: options.env_override,
                    servers: servers.collect(),
                };
                D::select(entries, options)
            }
        }
    };
}

/// The ranking export of a world, over [`Ranking`].
macro_rules! ranking_glue {
    ($world:ident) => {
        impl<N, D, R: Ranking> $world::exports::mcpw::plugin::ranking::Guest for Glue<N, D, R> {
            type Index = IndexGlue<R>;
        }

        impl<R: Ranking> $world::exports::mcpw::plugin::ranking::GuestIndex for IndexGlue<R> {
            fn build(
                entries: Vec<crate::Entry>,
                options: $world::exports::mcpw::plugin::ranking::IndexOptions,
            ) -> Result<$world::exports::mcpw::plugin::ranking::Index, crate::PluginError> {
                panic_hook();
                let options = IndexOptions {
                    server_keywords: options
                        .server_keywords
                        .into_iter()
                        .map(|k| (k.server, k.keywords))
                        .collect(),
                    profile: options.profile,
                };
                let index = R::build(entries, options)?;
                Ok($world::exports::mcpw::plugin::ranking::Index::new(
                    IndexGlue(index),
                ))
            }

            fn search(
                &self,
                query: String,
                options: $world::exports::mcpw::plugin::ranking::SearchOptions,
            ) -> Result<Vec<$world::exports::mcpw::plugin::ranking::Hit>, crate::PluginError> {
                use $world::exports::mcpw::plugin::ranking::{Hit as Wit, QueryMode as Mode};
                panic_hook();
                let options = SearchOptions {
                    limit: options.limit,
                    mode: match options.mode {
                        Mode::Keyword => QueryMode::Keyword,
                        Mode::Regex => QueryMode::Regex,
                    },
                    server: options.server,
                };
                Ok(self
                    .0
                    .find(query, options)?
                    .into_iter()
                    .map(
                        |Found {
                             hit: Hit { index, score },
                             need,
                         }| Wit { index, score, need },
                    )
                    .collect())
            }
        }
    };
}

naming_glue!(namer);
direct_glue!(direct_policy);
ranking_glue!(ranker);

/// The `scripter` world of contract 0.2.0, with its own imports.
#[allow(missing_docs)]
pub mod scripter {
    wit_bindgen::generate!({
        path: "since_v0.2.0",
        world: "scripter",
        pub_export_macro: true,
        default_bindings_module: "mcpw_guest::worlds::scripter",
    });
}

/// The `guarder` world of contract 0.1.1: 0.2.0 changed nothing a guard
/// uses, so a guard stays on 0.1.1 and loads in any mcpw since 0.1.1.
#[allow(missing_docs)]
pub mod guarder {
    wit_bindgen::generate!({
        path: "since_v0.1.1",
        world: "guarder",
        pub_export_macro: true,
        default_bindings_module: "mcpw_guest::worlds::guarder",
    });
}
