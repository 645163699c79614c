//! A role's exports in whichever version of the contract the guest speaks,
//! called with the latest values: a 0.1.x guest's are converted on the way
//! in and out, so the roles are written once, against [`super::latest`].

use super::latest::exports::mcpw::plugin as new;
use super::latest::mcpw::plugin::types as new_types;
use super::since_v0_1_1::exports::mcpw::plugin as old;
use super::since_v0_1_1::{convert, mcpw::plugin::types as old_types};
use crate::plugin::state::GuestState;
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre, ResourceAny};

type Answer<T, E = new_types::PluginError> = wasmtime::Result<Result<T, E>>;

/// One role's export indices, in the guest's version.
pub(crate) enum Versioned<L, O> {
    /// The latest contract.
    Latest(L),
    /// 0.1.x, mapped onto the latest.
    Older(O),
}

macro_rules! indices {
    ($name:ident, $exports:ident, $role:ident) => {
        /// The indices of this role's export, in the guest's version.
        pub(crate) type $name = Versioned<new::$role::GuestIndices, old::$role::GuestIndices>;
        /// This role's export of one instance, in the guest's version.
        pub(crate) type $exports = Versioned<new::$role::Guest, old::$role::Guest>;

        impl $name {
            /// Finds the export in the latest version, else in 0.1.x.
            pub(crate) fn new(pre: &InstancePre<GuestState>) -> wasmtime::Result<$name> {
                match new::$role::GuestIndices::new(pre) {
                    Ok(latest) => Ok(Versioned::Latest(latest)),
                    Err(e) => old::$role::GuestIndices::new(pre)
                        .map(Versioned::Older)
                        .map_err(|_| e),
                }
            }

            /// The export of `instance`.
            pub(crate) fn load(
                &self,
                store: &mut Store<GuestState>,
                instance: &Instance,
            ) -> wasmtime::Result<$exports> {
                Ok(match self {
                    Versioned::Latest(i) => Versioned::Latest(i.load(store, instance)?),
                    Versioned::Older(i) => Versioned::Older(i.load(store, instance)?),
                })
            }
        }

        impl Clone for $name {
            fn clone(&self) -> Self {
                match self {
                    Versioned::Latest(i) => Versioned::Latest(i.clone()),
                    Versioned::Older(i) => Versioned::Older(i.clone()),
                }
            }
        }
    };
}

indices!(NamingIndices, NamingExports, naming);
indices!(DirectIndices, DirectExports, direct_tools);
indices!(RankingIndices, RankingExports, ranking);
indices!(ScriptIndices, ScriptExports, script);
indices!(GuardIndices, GuardExports, guard);

impl RankingIndices {
    /// Whether the guest speaks 0.1.x (and is given no skills).
    pub(crate) fn older(&self) -> bool {
        matches!(self, Versioned::Older(_))
    }
}

fn error<T>(answer: Result<T, old_types::PluginError>) -> Result<T, new_types::PluginError> {
    answer.map_err(Into::into)
}

impl NamingExports {
    pub(crate) fn call_names(
        &self,
        store: &mut Store<GuestState>,
        tools: &[new_types::Tool],
        options: &new::naming::NamingOptions,
    ) -> Answer<Vec<new::naming::NameOutcome>> {
        match self {
            Versioned::Latest(g) => g.call_names(store, tools, options),
            Versioned::Older(g) => {
                // The host names tools and resources only: each has a 0.1.x form.
                let tools: Vec<_> = tools.iter().cloned().filter_map(convert::tool).collect();
                let answer = g.call_names(store, &tools, &convert::naming_options(options))?;
                Ok(error(answer).map(|o| o.into_iter().map(Into::into).collect()))
            }
        }
    }
}

impl DirectExports {
    pub(crate) fn call_select(
        &self,
        store: &mut Store<GuestState>,
        entries: &[new_types::Entry],
        options: &new::direct_tools::DirectOptions,
    ) -> Answer<Vec<u32>> {
        match self {
            Versioned::Latest(g) => g.call_select(store, entries, options),
            Versioned::Older(g) => {
                let entries: Vec<_> = entries.iter().filter_map(convert::entry).collect();
                let answer = g.call_select(store, &entries, &convert::direct_options(options))?;
                Ok(error(answer))
            }
        }
    }
}

impl RankingExports {
    /// Builds an index. A 0.1.x guest is given the entries it can express
    /// (no skills): its hits index into those.
    pub(crate) fn call_build(
        &self,
        store: &mut Store<GuestState>,
        entries: &[new_types::Entry],
        options: &new::ranking::IndexOptions,
    ) -> Answer<ResourceAny> {
        match self {
            Versioned::Latest(g) => g.index().call_build(store, entries, options),
            Versioned::Older(g) => {
                let entries: Vec<_> = entries.iter().filter_map(convert::entry).collect();
                let options = convert::index_options(options);
                Ok(error(g.index().call_build(store, &entries, &options)?))
            }
        }
    }

    pub(crate) fn call_search(
        &self,
        store: &mut Store<GuestState>,
        index: ResourceAny,
        query: &str,
        options: &new::ranking::SearchOptions,
    ) -> Answer<Vec<new::ranking::Hit>> {
        match self {
            Versioned::Latest(g) => g.index().call_search(store, index, query, options),
            Versioned::Older(g) => {
                let options = convert::search_options(options);
                let answer = g.index().call_search(store, index, query, &options)?;
                Ok(error(answer).map(|hits| {
                    hits.into_iter()
                        .map(|h| new::ranking::Hit {
                            index: h.index,
                            score: h.score,
                            need: None,
                        })
                        .collect()
                }))
            }
        }
    }
}

impl ScriptExports {
    pub(crate) fn call_run(
        &self,
        store: &mut Store<GuestState>,
        code: &str,
    ) -> wasmtime::Result<new::script::Outcome> {
        match self {
            Versioned::Latest(g) => g.call_run(store, code),
            Versioned::Older(g) => g.call_run(store, code).map(convert::outcome),
        }
    }

    pub(crate) fn call_warm(&self, store: &mut Store<GuestState>) -> wasmtime::Result<()> {
        match self {
            Versioned::Latest(g) => g.call_warm(store),
            Versioned::Older(g) => g.call_warm(store),
        }
    }

    pub(crate) fn call_usage(&self, store: &mut Store<GuestState>) -> wasmtime::Result<String> {
        match self {
            Versioned::Latest(g) => g.call_usage(store),
            Versioned::Older(g) => g.call_usage(store),
        }
    }

    /// Each tool's declaration. Only tools are declared (a skill is read,
    /// not called), so every one has a 0.1.x form.
    pub(crate) fn call_declare(
        &self,
        store: &mut Store<GuestState>,
        tools: &[super::latest::mcpw::plugin::toolbox::ToolInfo],
    ) -> wasmtime::Result<Vec<String>> {
        match self {
            Versioned::Latest(g) => g.call_declare(store, tools),
            Versioned::Older(g) => {
                let tools: Vec<_> = tools
                    .iter()
                    .cloned()
                    .filter_map(convert::tool_info)
                    .collect();
                g.call_declare(store, &tools)
            }
        }
    }

    pub(crate) fn call_select(
        &self,
        store: &mut Store<GuestState>,
        expression: &str,
        input: &str,
    ) -> Answer<String, new::script::SelectError> {
        match self {
            Versioned::Latest(g) => g.call_select(store, expression, input),
            Versioned::Older(g) => Ok(g.call_select(store, expression, input)?.map_err(Into::into)),
        }
    }
}

impl GuardExports {
    pub(crate) fn call_before(
        &self,
        store: &mut Store<GuestState>,
        call: &new::guard::Call,
    ) -> Answer<new::guard::Verdict, new::guard::GuardError> {
        match self {
            Versioned::Latest(g) => g.call_before(store, call),
            Versioned::Older(g) => {
                let answer = g.call_before(store, &convert::guard_call(call))?;
                Ok(answer.map(Into::into).map_err(Into::into))
            }
        }
    }

    pub(crate) fn call_after(
        &self,
        store: &mut Store<GuestState>,
        call: &new::guard::Call,
        outcome: &str,
    ) -> Answer<new::guard::ResultVerdict, new::guard::GuardError> {
        match self {
            Versioned::Latest(g) => g.call_after(store, call, outcome),
            Versioned::Older(g) => {
                let answer = g.call_after(store, &convert::guard_call(call), outcome)?;
                Ok(answer.map(Into::into).map_err(Into::into))
            }
        }
    }
}
