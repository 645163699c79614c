//! The thin wit-bindgen layer: converts WIT values to and from the pure modules.

use crate::model::{Entry, Kind, PolicyError, Tool};
use crate::{direct, naming, ranking};

wit_bindgen::generate!({
    world: "policy",
    path: "../wit",
});

use exports::mcpw::plugin::direct_tools::{self, DirectOptions, ServerDirect};
use exports::mcpw::plugin::naming::{NameOutcome, NamingOptions};
use exports::mcpw::plugin::ranking::{self as wit_ranking, IndexOptions, QueryMode, SearchOptions};
use mcpw::plugin::log::{Level, log};
use mcpw::plugin::types as wit;

struct Policy;

/// Panics become a log record before the trap, so the host can say why the guest failed.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::panic::set_hook(Box::new(|info| log(Level::Error, &info.to_string()))));
}

fn tool(t: wit::Tool) -> Tool {
    Tool {
        server: t.server,
        name: t.name,
        title: t.title,
        description: t.description,
        input_schema: t.input_schema,
        kind: match t.kind {
            wit::ToolKind::Tool => Kind::Tool,
            wit::ToolKind::Resource => Kind::Resource,
        },
        resource_uri: t.resource_uri,
    }
}

fn entry(e: wit::Entry) -> Entry {
    Entry {
        name: e.name,
        tool: tool(e.tool),
    }
}

fn error(e: PolicyError) -> wit::PluginError {
    match e {
        PolicyError::InvalidInput(m) => wit::PluginError::InvalidInput(m),
        PolicyError::InvalidPattern(m) => wit::PluginError::InvalidPattern(m),
    }
}

impl exports::mcpw::plugin::naming::Guest for Policy {
    fn names(
        tools: Vec<wit::Tool>,
        options: NamingOptions,
    ) -> Result<Vec<NameOutcome>, wit::PluginError> {
        install_panic_hook();
        let mode = match options.prefix {
            wit::PrefixMode::Server => naming::PrefixMode::Server,
            wit::PrefixMode::Short => naming::PrefixMode::Short,
            wit::PrefixMode::None => naming::PrefixMode::None,
        };
        let tools: Vec<Tool> = tools.into_iter().map(tool).collect();
        Ok(naming::names(&tools, mode, &options.reserved)
            .into_iter()
            .map(|o| match o {
                naming::Outcome::Named(n) => NameOutcome::Named(n),
                naming::Outcome::DuplicateOf(i) => NameOutcome::DuplicateOf(i),
                naming::Outcome::Reserved(n) => NameOutcome::Reserved(n),
            })
            .collect())
    }
}

impl direct_tools::Guest for Policy {
    fn select(
        tools: Vec<wit::Entry>,
        options: DirectOptions,
    ) -> Result<Vec<u32>, wit::PluginError> {
        install_panic_hook();
        let entries: Vec<Entry> = tools.into_iter().map(entry).collect();
        let servers: Vec<(String, direct::ServerDirect)> = options
            .servers
            .into_iter()
            .map(|s| {
                let d = match s.direct {
                    ServerDirect::All => direct::ServerDirect::All,
                    ServerDirect::None => direct::ServerDirect::None,
                    ServerDirect::Only(list) => direct::ServerDirect::Only(list),
                };
                (s.server, d)
            })
            .collect();
        Ok(direct::select(
            &entries,
            options.env_override.as_deref(),
            &servers,
        ))
    }
}

/// The guest side of the WIT resource `index`.
pub struct Index(ranking::Index);

impl wit_ranking::Guest for Policy {
    type Index = Index;
}

impl wit_ranking::GuestIndex for Index {
    fn build(
        entries: Vec<wit::Entry>,
        options: IndexOptions,
    ) -> Result<wit_ranking::Index, wit::PluginError> {
        install_panic_hook();
        let options = ranking::IndexOptions {
            server_keywords: options
                .server_keywords
                .into_iter()
                .map(|k| (k.server, k.keywords))
                .collect(),
            profile: options.profile,
        };
        let index = ranking::Index::build(entries.into_iter().map(entry).collect(), options)
            .map_err(error)?;
        Ok(wit_ranking::Index::new(Index(index)))
    }

    fn search(
        &self,
        query: String,
        options: SearchOptions,
    ) -> Result<Vec<wit_ranking::Hit>, wit::PluginError> {
        let options = ranking::SearchOptions {
            limit: options.limit,
            mode: match options.mode {
                QueryMode::Keyword => ranking::Mode::Keyword,
                QueryMode::Regex => ranking::Mode::Regex,
            },
            server: options.server,
        };
        let hits = self.0.search(&query, &options).map_err(error)?;
        Ok(hits
            .into_iter()
            .map(|h| wit_ranking::Hit {
                index: h.index,
                score: h.score,
            })
            .collect())
    }
}

export!(Policy);
