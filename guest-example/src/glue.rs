//! The thin layer over `mcpw-guest`: converts the contract's values to and
//! from the pure modules.

use crate::model::{Entry, Kind, PolicyError, Tool};
use crate::{direct, naming, ranking};
use mcpw_guest as wit;

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
            wit::ToolKind::Skill => Kind::Skill,
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

/// The naming and direct-tools roles.
pub struct Policy;

impl wit::Naming for Policy {
    fn names(
        tools: Vec<wit::Tool>,
        options: wit::NamingOptions,
    ) -> Result<Vec<wit::NameOutcome>, wit::PluginError> {
        let mode = match options.prefix {
            wit::PrefixMode::Server => naming::PrefixMode::Server,
            wit::PrefixMode::Short => naming::PrefixMode::Short,
            wit::PrefixMode::None => naming::PrefixMode::None,
        };
        let tools: Vec<Tool> = tools.into_iter().map(tool).collect();
        Ok(naming::names(&tools, mode, &options.reserved)
            .into_iter()
            .map(|o| match o {
                naming::Outcome::Named(n) => wit::NameOutcome::Named(n),
                naming::Outcome::DuplicateOf(i) => wit::NameOutcome::DuplicateOf(i),
                naming::Outcome::Reserved(n) => wit::NameOutcome::Reserved(n),
            })
            .collect())
    }
}

impl wit::DirectTools for Policy {
    fn select(
        entries: Vec<wit::Entry>,
        options: wit::DirectOptions,
    ) -> Result<Vec<u32>, wit::PluginError> {
        let entries: Vec<Entry> = entries.into_iter().map(entry).collect();
        let servers: Vec<(String, direct::ServerDirect)> = options
            .servers
            .into_iter()
            .map(|(server, d)| {
                let d = match d {
                    wit::ServerDirect::All => direct::ServerDirect::All,
                    wit::ServerDirect::None => direct::ServerDirect::None,
                    wit::ServerDirect::Only(list) => direct::ServerDirect::Only(list),
                };
                (server, d)
            })
            .collect();
        Ok(direct::select(
            &entries,
            options.env_override.as_deref(),
            &servers,
        ))
    }
}

/// The ranking role's index.
pub struct Index(ranking::Index);

impl wit::Ranking for Index {
    fn build(
        entries: Vec<wit::Entry>,
        options: wit::IndexOptions,
    ) -> Result<Index, wit::PluginError> {
        let mut index = ranking::Index::build(entries.into_iter().map(entry).collect(), options)
            .map_err(error)?;
        if let Some(texts) = index.texts_to_embed() {
            use wit::embed::{EmbedError, Urgency};
            match wit::embed::embed(&texts, Urgency::Background) {
                Ok(rows) => {
                    if !index.set_vectors(rows) {
                        wit::log(
                            wit::host::log::Level::Warn,
                            "the host's vectors do not fit the catalog; ranking by words",
                        );
                    }
                }
                // No model, or not granted: words alone, exactly as without `embed`.
                Err(EmbedError::NoModel | EmbedError::Denied(_)) => {}
                Err(EmbedError::Pending(p)) => wit::log(
                    wit::host::log::Level::Debug,
                    &format!(
                        "ranking by words while {} of {} tool vectors are ready",
                        p.done, p.total
                    ),
                ),
                Err(e) => wit::log(
                    wit::host::log::Level::Warn,
                    &format!("ranking by words: {e:?}"),
                ),
            }
        }
        Ok(Index(index))
    }

    fn search(
        &self,
        query: String,
        options: wit::SearchOptions,
    ) -> Result<Vec<wit::Hit>, wit::PluginError> {
        Ok(self
            .find(query, options)?
            .into_iter()
            .map(|f| f.hit)
            .collect())
    }

    fn find(
        &self,
        query: String,
        options: wit::SearchOptions,
    ) -> Result<Vec<wit::Found>, wit::PluginError> {
        let vector = self
            .0
            .wants_query_vector(&query, &options)
            .then(|| wit::embed::embed(std::slice::from_ref(&query), wit::embed::Urgency::Now))
            .and_then(|r| r.ok())
            .and_then(|mut v| v.pop());
        let hits = self
            .0
            .explain(&query, &options, vector.as_deref())
            .map_err(error)?;
        // The query is read as needs again only when a hit answers one.
        let needs = match hits.iter().any(|e| e.need.is_some()) {
            true => ranking::Index::needs(&query),
            false => Vec::new(),
        };
        Ok(hits
            .into_iter()
            .map(|e| wit::Found {
                hit: wit::Hit {
                    index: e.hit.index,
                    score: e.hit.score,
                },
                need: e.need.and_then(|i| needs.get(i).cloned()),
            })
            .collect())
    }
}

mcpw_guest::policy!(naming: Policy, direct_tools: Policy, ranking: Index);
