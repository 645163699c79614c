//! Values of the latest contract as 0.1.x has them, and back. A value 0.1.x
//! cannot express (a skill) has no 0.1.x form: `None`.

use super as old;
use super::super::since_v0_2_0 as new;
use new::exports::mcpw::plugin as new_x;
use new::mcpw::plugin as new_i;
use old::exports::mcpw::plugin as old_x;
use old::mcpw::plugin as old_i;

/// Maps an enum or a variant of one version onto the same cases of the other.
macro_rules! same_cases {
    ($from:ty => $to:ident { $($case:ident $(($($field:ident),+))?),+ $(,)? }) => {
        impl From<$from> for $to {
            fn from(v: $from) -> $to {
                type From = $from;
                match v { $(From::$case $(($($field),+))? => $to::$case $(($($field.into()),+))?,)+ }
            }
        }
    };
}

// Each direction gets an alias, so the macro's target is one identifier.
type OldError = old_i::types::PluginError;
type NewError = new_i::types::PluginError;
same_cases!(NewError => OldError { InvalidInput(m), InvalidPattern(m), Denied(m), NotFound(m), Unavailable(m), Failed(m) });
same_cases!(OldError => NewError { InvalidInput(m), InvalidPattern(m), Denied(m), NotFound(m), Unavailable(m), Failed(m) });

type OldState = old_i::types::ConnectionState;
same_cases!(new_i::types::ConnectionState => OldState { Connected, Cached, NotConnected, Failed, NeedsAuth, Disabled });
type OldLifecycle = old_i::types::LifecycleMode;
same_cases!(new_i::types::LifecycleMode => OldLifecycle { Lazy, Eager, KeepAlive });
type OldPrefix = old_i::types::PrefixMode;
same_cases!(new_i::types::PrefixMode => OldPrefix { Server, Short, None });
type NewLevel = new_i::log::Level;
same_cases!(old_i::log::Level => NewLevel { Trace, Debug, Info, Warn, Error });
type NewUrgency = new_i::embed::Urgency;
same_cases!(old_i::embed::Urgency => NewUrgency { Now, Background });
type OldQuery = old_x::ranking::QueryMode;
same_cases!(new_x::ranking::QueryMode => OldQuery { Keyword, Regex });
type NewOutcome = new_x::naming::NameOutcome;
same_cases!(old_x::naming::NameOutcome => NewOutcome { Named(n), DuplicateOf(i), Reserved(n) });
type OldDirect = old_x::direct_tools::ServerDirect;
same_cases!(new_x::direct_tools::ServerDirect => OldDirect { All, None, Only(l) });
type NewScriptError = new_x::script::ScriptError;
same_cases!(old_x::script::ScriptError => NewScriptError { Syntax(m), Thrown(m), Stalled(m), InvalidValue(m) });
type NewSelectError = new_x::script::SelectError;
same_cases!(old_x::script::SelectError => NewSelectError { Syntax(m), Runtime(m), Unsupported(m) });
type NewVerdict = new_x::guard::Verdict;
same_cases!(old_x::guard::Verdict => NewVerdict { Allow, Deny(m), Ask(m), Rewrite(m) });
type NewResultVerdict = new_x::guard::ResultVerdict;
same_cases!(old_x::guard::ResultVerdict => NewResultVerdict { Keep, Replace(m), Deny(m) });
type NewGuardError = new_x::guard::GuardError;
same_cases!(old_x::guard::GuardError => NewGuardError { InvalidInput(m), Failed(m) });

type NewEmbedError = new_i::embed::EmbedError;
type OldEmbedError = old_i::embed::EmbedError;
impl From<NewEmbedError> for OldEmbedError {
    fn from(e: NewEmbedError) -> Self {
        match e {
            NewEmbedError::NoModel => OldEmbedError::NoModel,
            NewEmbedError::Denied(m) => OldEmbedError::Denied(m),
            NewEmbedError::Pending(p) => OldEmbedError::Pending(old_i::embed::Progress {
                done: p.done,
                total: p.total,
            }),
            NewEmbedError::InvalidInput(m) => OldEmbedError::InvalidInput(m),
            NewEmbedError::Failed(m) => OldEmbedError::Failed(m),
        }
    }
}

/// A tool as 0.1.x has it; `None` for a skill, which 0.1.x cannot express.
pub(crate) fn tool(t: new_i::types::Tool) -> Option<old_i::types::Tool> {
    use new_i::types::ToolKind as K;
    let kind = match t.kind {
        K::Tool => old_i::types::ToolKind::Tool,
        K::Resource => old_i::types::ToolKind::Resource,
        K::Skill => return None,
    };
    Some(old_i::types::Tool {
        server: t.server,
        name: t.name,
        title: t.title,
        description: t.description,
        input_schema: t.input_schema,
        annotations: t.annotations,
        kind,
        resource_uri: t.resource_uri,
    })
}

/// An entry as 0.1.x has it; `None` for a skill.
pub(crate) fn entry(e: &new_i::types::Entry) -> Option<old_i::types::Entry> {
    Some(old_i::types::Entry {
        name: e.name.clone(),
        tool: tool(e.tool.clone())?,
    })
}

pub(crate) fn status(s: new_i::types::ServerStatus) -> old_i::types::ServerStatus {
    old_i::types::ServerStatus {
        name: s.name,
        state: s.state.into(),
        tool_count: s.tool_count,
        lifecycle: s.lifecycle.into(),
        last_error: s.last_error,
    }
}

/// A toolbox tool as 0.1.x has it; `None` for a skill, which a 0.1.x
/// script cannot read.
pub(crate) fn tool_info(t: new_i::toolbox::ToolInfo) -> Option<old_i::toolbox::ToolInfo> {
    if t.kind == new_i::types::ToolKind::Skill {
        return None;
    }
    Some(old_i::toolbox::ToolInfo {
        name: t.name,
        server: t.server,
        original_name: t.original_name,
        title: t.title,
        description: t.description,
        input_schema: t.input_schema,
        output_schema: t.output_schema,
        annotations: t.annotations,
    })
}

pub(crate) fn call_outcome(o: new_i::toolbox::CallOutcome) -> old_i::toolbox::CallOutcome {
    old_i::toolbox::CallOutcome {
        content: o.content,
        structured_content: o.structured_content,
        is_error: o.is_error,
    }
}

pub(crate) fn naming_options(o: &new_x::naming::NamingOptions) -> old_x::naming::NamingOptions {
    old_x::naming::NamingOptions {
        prefix: o.prefix.into(),
        reserved: o.reserved.clone(),
    }
}

pub(crate) fn direct_options(
    o: &new_x::direct_tools::DirectOptions,
) -> old_x::direct_tools::DirectOptions {
    old_x::direct_tools::DirectOptions {
        env_override: o.env_override.clone(),
        servers: o
            .servers
            .iter()
            .map(|s| old_x::direct_tools::ServerSetting {
                server: s.server.clone(),
                direct: s.direct.clone().into(),
            })
            .collect(),
    }
}

pub(crate) fn index_options(o: &new_x::ranking::IndexOptions) -> old_x::ranking::IndexOptions {
    old_x::ranking::IndexOptions {
        server_keywords: o
            .server_keywords
            .iter()
            .map(|k| old_x::ranking::ServerKeywords {
                server: k.server.clone(),
                keywords: k.keywords.clone(),
            })
            .collect(),
        profile: o.profile.clone(),
    }
}

pub(crate) fn search_options(o: &new_x::ranking::SearchOptions) -> old_x::ranking::SearchOptions {
    old_x::ranking::SearchOptions {
        limit: o.limit,
        mode: o.mode.into(),
        server: o.server.clone(),
    }
}

pub(crate) fn outcome(o: old_x::script::Outcome) -> new_x::script::Outcome {
    new_x::script::Outcome {
        value: o.value.map_err(Into::into),
        logs: o.logs,
    }
}

pub(crate) fn guard_call(c: &new_x::guard::Call) -> old_x::guard::Call {
    old_x::guard::Call {
        server: c.server.clone(),
        tool: c.tool.clone(),
        name: c.name.clone(),
        arguments: c.arguments.clone(),
        annotations: c.annotations.clone(),
        caller: old_x::guard::Caller {
            client: c.caller.client.clone(),
            session: c.caller.session,
        },
    }
}
