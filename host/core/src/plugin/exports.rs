//! A role's exports in whichever version of the contract the guest speaks,
//! called with the latest values: a 0.1.x guest's are converted on the way
//! in and out, so the roles are written once, against [`super::latest`].

use super::state::GuestState;
use super::wit::latest::exports::mcpw::plugin as new;
use super::wit::latest::mcpw::plugin::types as new_types;
use super::wit::since_v0_1_1::exports::mcpw::plugin as old;
use super::wit::since_v0_1_1::{convert, mcpw::plugin::types as old_types};
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre, ResourceAny};

type Answer<T, E = new_types::PluginError> = wasmtime::Result<Result<T, E>>;

macro_rules! indices {
    ($name:ident, $exports:ident, $role:ident) => {
        /// The indices of this role's export, in the guest's version.
        #[derive(Clone)]
        pub(crate) enum $name {
            /// The latest contract.
            Latest(new::$role::GuestIndices),
            /// 0.1.x, mapped onto the latest.
            Older(old::$role::GuestIndices),
        }

        /// This role's export of one instance, in the guest's version.
        pub(crate) enum $exports {
            /// The latest contract.
            Latest(new::$role::Guest),
            /// 0.1.x, mapped onto the latest.
            Older(old::$role::Guest),
        }

        impl $name {
            /// Finds the export in the latest version, else in 0.1.x.
            pub(crate) fn new(pre: &InstancePre<GuestState>) -> wasmtime::Result<$name> {
                match new::$role::GuestIndices::new(pre) {
                    Ok(latest) => Ok($name::Latest(latest)),
                    Err(e) => old::$role::GuestIndices::new(pre)
                        .map($name::Older)
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
                    $name::Latest(i) => $exports::Latest(i.load(store, instance)?),
                    $name::Older(i) => $exports::Older(i.load(store, instance)?),
                })
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
        matches!(self, RankingIndices::Older(_))
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
            Self::Latest(g) => g.call_names(store, tools, options),
            Self::Older(g) => {
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
            Self::Latest(g) => g.call_select(store, entries, options),
            Self::Older(g) => {
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
            Self::Latest(g) => g.index().call_build(store, entries, options),
            Self::Older(g) => {
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
            Self::Latest(g) => g.index().call_search(store, index, query, options),
            Self::Older(g) => {
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
            Self::Latest(g) => g.call_run(store, code),
            Self::Older(g) => g.call_run(store, code).map(convert::outcome),
        }
    }

    pub(crate) fn call_warm(&self, store: &mut Store<GuestState>) -> wasmtime::Result<()> {
        match self {
            Self::Latest(g) => g.call_warm(store),
            Self::Older(g) => g.call_warm(store),
        }
    }

    pub(crate) fn call_usage(&self, store: &mut Store<GuestState>) -> wasmtime::Result<String> {
        match self {
            Self::Latest(g) => g.call_usage(store),
            Self::Older(g) => g.call_usage(store),
        }
    }

    /// Each tool's declaration. Only tools are declared (a skill is read,
    /// not called), so every one has a 0.1.x form.
    pub(crate) fn call_declare(
        &self,
        store: &mut Store<GuestState>,
        tools: &[super::wit::latest::mcpw::plugin::toolbox::ToolInfo],
    ) -> wasmtime::Result<Vec<String>> {
        match self {
            Self::Latest(g) => g.call_declare(store, tools),
            Self::Older(g) => {
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
            Self::Latest(g) => g.call_select(store, expression, input),
            Self::Older(g) => Ok(g.call_select(store, expression, input)?.map_err(Into::into)),
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
            Self::Latest(g) => g.call_before(store, call),
            Self::Older(g) => {
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
            Self::Latest(g) => g.call_after(store, call, outcome),
            Self::Older(g) => {
                let answer = g.call_after(store, &convert::guard_call(call), outcome)?;
                Ok(answer.map(Into::into).map_err(Into::into))
            }
        }
    }
}
