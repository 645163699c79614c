//! The catalog snapshot: everything derived from the servers' tools for one
//! catalog version, built in one place and then only read.
//!
//! A build runs the policy guests in one blocking step: naming (which also
//! decides what `excludeTools` / `includeTools` / `directTools` select, and
//! which server a name belongs to) → direct tools → prompt names. The search
//! index of the snapshot is built once, when first needed. Readers load the
//! published snapshot without locks; requests for a newer version than the
//! published one share one build.

use super::resources::ResourceMap;
use crate::catalog::{Entry, ServerStatus, Tool};
use crate::config::{Config, DirectTools};
use crate::plugin::policy::exposed;
use crate::plugin::{
    DirectOptions, IndexOptions, NameOutcome, NamingOptions, PluginError, Policy, PrefixMode,
    SearchIndex, ServerDirect,
};
use arc_swap::ArcSwap;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// An upstream prompt as the host exposes it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PromptEntry {
    /// The exposed name, given by the naming guest (`<server>__<prompt>` by default).
    pub name: String,
    /// The server.
    pub server: String,
    /// The server's own name for it.
    pub original: String,
    /// The MCP prompt (name, description, arguments).
    pub prompt: Value,
}

/// One immutable view of the catalog.
pub struct Snapshot {
    version: u64,
    entries: Arc<[Entry]>,
    /// What search ranks: `entries`, then every skill (kind `skill`), so a
    /// search hit below `entries.len()` is the tool at that index.
    searchable: Arc<[Entry]>,
    /// Tools only an MCP App may call (`_meta.ui.visibility` without
    /// `"model"`): named, never listed, searched or described for the agent.
    app_only: Arc<[Entry]>,
    by_name: HashMap<String, usize>,
    /// Names with hyphens read as underscores, for forgiving lookups.
    by_loose: HashMap<String, usize>,
    direct: Vec<bool>,
    /// A name `head…tail` belongs to the server (from the naming guest).
    owners: Vec<Owner>,
    counts: HashMap<String, u32>,
    prompts: Vec<PromptEntry>,
    prompt_by_name: HashMap<String, usize>,
    resources: ResourceMap,
    skills: super::skills::SkillMap,
    pub(super) index_options: IndexOptions,
    index: tokio::sync::Mutex<Option<BuiltIndex>>,
}

/// A search index, and whether it ranks by words only while vectors are
/// computed: then it is built again once they are.
#[derive(Clone)]
struct BuiltIndex {
    index: Arc<SearchIndex>,
    /// The background run of embeddings under way when the build was told
    /// "pending", by its generation.
    lexical_while: Option<u64>,
}

impl BuiltIndex {
    /// A run that ended without vectors (offline, say) leaves the index
    /// as it is: built again, it would rank by words all the same.
    fn stale(&self, embeddings: Option<&crate::embed::Embeddings>) -> bool {
        match (self.lexical_while, embeddings) {
            (Some(generation), Some(e)) => {
                let status = e.status().borrow().clone();
                status.generation > generation && status.error.is_none()
            }
            _ => false,
        }
    }
}

struct Owner {
    head: String,
    tail: String,
    server: String,
}

fn loose(name: &str) -> String {
    name.replace('-', "_")
}

impl Snapshot {
    /// The empty catalog a host starts from.
    pub(crate) fn empty() -> Snapshot {
        Snapshot {
            version: 0,
            entries: Arc::from(Vec::new()),
            searchable: Arc::from(Vec::new()),
            app_only: Arc::from(Vec::new()),
            by_name: HashMap::new(),
            by_loose: HashMap::new(),
            direct: Vec::new(),
            owners: Vec::new(),
            counts: HashMap::new(),
            prompts: Vec::new(),
            prompt_by_name: HashMap::new(),
            resources: ResourceMap::default(),
            skills: Default::default(),
            index_options: IndexOptions::default(),
            index: tokio::sync::Mutex::new(None),
        }
    }

    /// The catalog version it was built from.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Every exposed tool with its agent-facing name, in config order.
    pub fn entries(&self) -> &Arc<[Entry]> {
        &self.entries
    }

    /// What search ranks: every exposed tool (as in [`Snapshot::entries`],
    /// at the same indices), then every skill, as an entry of kind `skill`.
    pub fn searchable(&self) -> &Arc<[Entry]> {
        &self.searchable
    }

    /// The tools only an app may call (see [`crate::apps::for_model`]).
    pub fn app_only(&self) -> &Arc<[Entry]> {
        &self.app_only
    }

    /// The entry named `name`: exactly, else with hyphens and underscores equal.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.position(name).map(|i| &self.entries[i])
    }

    /// Where [`Snapshot::get`] finds `name` in [`Snapshot::entries`].
    pub fn position(&self, name: &str) -> Option<usize> {
        self.by_name
            .get(name)
            .or_else(|| self.by_loose.get(&loose(name)))
            .copied()
    }

    /// The direct entries, in catalog order.
    pub fn direct_entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .zip(&self.direct)
            .filter(|(_, d)| **d)
            .map(|(e, _)| e)
    }

    /// Is `name` a direct tool's name?
    pub fn is_direct_name(&self, name: &str) -> bool {
        self.by_name.get(name).is_some_and(|&i| self.direct[i])
    }

    /// The server an agent-facing name belongs to by the naming guest's rule,
    /// whether or not such a tool is known (to connect only that server).
    pub fn owner(&self, name: &str) -> Option<&str> {
        self.owners
            .iter()
            .filter(|o| {
                name.len() > o.head.len() + o.tail.len()
                    && name.starts_with(&o.head)
                    && name.ends_with(&o.tail)
            })
            .max_by_key(|o| o.head.len() + o.tail.len())
            .map(|o| o.server.as_str())
    }

    /// The entries of one server.
    pub fn server_entries<'a>(&'a self, server: &'a str) -> impl Iterator<Item = &'a Entry> {
        self.entries.iter().filter(move |e| e.tool.server == server)
    }

    /// Exposed tools of a server.
    pub fn tool_count(&self, server: &str) -> Option<u32> {
        self.counts.get(server).copied()
    }

    /// Replaces listed counts with exposed ones, when this snapshot is of
    /// `catalog_version` (an older one may count tools since removed).
    pub(crate) fn count_exposed(&self, catalog_version: u64, statuses: &mut [ServerStatus]) {
        if self.version != catalog_version {
            return;
        }
        for s in statuses {
            if let Some(n) = self.tool_count(&s.name) {
                s.tool_count = n;
            }
        }
    }

    /// Replaces every count with the number of this snapshot's entries
    /// that `sees` admits (a client limited to some tools): a count never
    /// tells of tools the client cannot see, even while the snapshot is
    /// behind the listings.
    pub(crate) fn count_seen(&self, sees: impl Fn(&Tool) -> bool, statuses: &mut [ServerStatus]) {
        for s in statuses {
            s.tool_count = self
                .server_entries(&s.name)
                .filter(|e| sees(&e.tool))
                .count() as u32;
        }
    }

    /// Every upstream prompt under its exposed name, in config order.
    pub fn prompts(&self) -> &[PromptEntry] {
        &self.prompts
    }

    /// Every server's skills, under the URIs clients use.
    pub fn skills(&self) -> &super::skills::SkillMap {
        &self.skills
    }

    /// Every server's resources and templates, under the URIs clients use.
    pub fn resources(&self) -> &ResourceMap {
        &self.resources
    }

    /// The prompt exposed as `name`.
    pub fn prompt(&self, name: &str) -> Option<&PromptEntry> {
        self.prompt_by_name.get(name).map(|&i| &self.prompts[i])
    }

    /// The search index, built by the ranking guest on first need: once per
    /// snapshot, and again when it ranked by words only while the tool
    /// vectors were computed and they are now ready.
    pub(crate) async fn index(
        &self,
        policy: &Arc<Policy>,
        builds: &AtomicU64,
        embeddings: Option<&Arc<crate::embed::Embeddings>>,
    ) -> Result<Arc<SearchIndex>, super::HostError> {
        let mut slot = self.index.lock().await;
        if let Some(built) = slot.as_ref().filter(|b| !b.stale(embeddings.map(|e| &**e))) {
            return Ok(built.index.clone());
        }
        let (policy, entries) = (policy.clone(), self.searchable.clone());
        let options = self.index_options.clone();
        builds.fetch_add(1, Ordering::Relaxed);
        let before = embeddings.map(|e| e.status().borrow().clone());
        let built = tokio::task::spawn_blocking(move || policy.index(entries, options)).await;
        let index = Arc::new(super::joined(built)??);
        // Told "pending" during the build: ranked by words until the run ends.
        let lexical_while = embeddings.zip(before).and_then(|(e, before)| {
            let now = e.status().borrow().clone();
            (now.pendings > before.pendings).then_some(before.generation)
        });
        *slot = Some(BuiltIndex {
            index: index.clone(),
            lexical_while,
        });
        Ok(index)
    }

    /// Whether the built index ranks by words only while tool vectors are
    /// computed (`None` when it is not built yet).
    pub(crate) fn ranks_by_words_while_embedding(&self) -> Option<bool> {
        let slot = self.index.try_lock().ok()?;
        slot.as_ref().map(|b| b.lexical_while.is_some())
    }
}

/// What one build reads.
pub(crate) struct BuildInput {
    pub version: u64,
    /// Each enabled server's tools, in config order.
    pub tools: Vec<Arc<[Arc<Tool>]>>,
    /// What each enabled server offers besides tools, in config order.
    pub offers: Vec<(String, crate::lifecycle::Offers)>,
    pub config: Arc<Config>,
    /// `MCP_DIRECT_TOOLS`.
    pub env_override: Option<String>,
    pub naming: NamingOptions,
    /// Tools of pinned servers whose definitions changed, or that are new:
    /// (server, [`crate::pins::item_key`]), withheld until the user
    /// approves them.
    pub withheld: std::collections::BTreeSet<(String, String)>,
}

/// A name for every tool as the naming guest gives it in `mode`, taken or not
/// (a duplicate gets the name it would have had).
fn names_in<T: std::borrow::Borrow<Tool>>(
    policy: &Policy,
    tools: &[T],
    mode: PrefixMode,
) -> Result<Vec<String>, PluginError> {
    let outcomes = policy.names(
        tools,
        &NamingOptions {
            prefix: mode,
            reserved: Vec::new(),
        },
    )?;
    let mut names: Vec<String> = Vec::with_capacity(outcomes.len());
    for outcome in outcomes {
        let name = match outcome {
            NameOutcome::Named(n) | NameOutcome::Reserved(n) => n,
            NameOutcome::DuplicateOf(j) => names[j].clone(),
        };
        names.push(name);
    }
    Ok(names)
}

/// The names a config list may use for each tool: its original name and its
/// names in every prefix mode, by the naming guest (hyphens read as underscores).
fn aliases(policy: &Policy, tools: &[Arc<Tool>]) -> Result<Vec<Vec<String>>, PluginError> {
    let mut out: Vec<Vec<String>> = tools.iter().map(|t| vec![loose(&t.name)]).collect();
    if tools.is_empty() {
        return Ok(out);
    }
    for mode in [PrefixMode::None, PrefixMode::Server, PrefixMode::Short] {
        for (aliases, name) in out.iter_mut().zip(names_in(policy, tools, mode)?) {
            aliases.push(loose(&name));
        }
    }
    Ok(out)
}

fn selects(list: &[String], aliases: &[String]) -> bool {
    list.iter().any(|s| aliases.contains(&loose(s.trim())))
}

/// A tool name no server uses, to learn how the naming guest prefixes a server.
const PROBE: &str = "mcpw_probe_7f3a";

/// Builds a snapshot. Blocking: runs the naming and direct-tools guests.
pub(crate) fn build(policy: &Policy, input: BuildInput) -> Result<Snapshot, PluginError> {
    let BuildInput {
        version,
        tools,
        offers,
        config,
        env_override,
        naming,
        withheld,
    } = input;
    let tools: Vec<&Arc<Tool>> = tools
        .iter()
        .flat_map(|t| t.iter())
        .filter(|t| !withheld.contains(&(t.server.clone(), crate::pins::item_key(t))))
        .collect();
    let (kept, mut alias_of) = selected(policy, &tools, &config)?;
    let (entries, entry_aliases) = named(policy, &kept, &mut alias_of, &naming)?;
    let (entries, entry_aliases, app_only) = apart(entries, entry_aliases);
    let direct = direct_flags(policy, &entries, &entry_aliases, &config, env_override)?;
    let owners = owners(policy, &config, naming.prefix)?;
    let resources = ResourceMap::build(&offers);
    let skills = super::skills::SkillMap::build(&offers, &withheld);
    let prompts = named_prompts(policy, offers, naming.prefix)?;
    let by_name: HashMap<String, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.clone(), i))
        .collect();
    let mut by_loose = HashMap::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        by_loose.entry(loose(&e.name)).or_insert(i);
    }
    let mut counts: HashMap<String, u32> =
        config.servers.iter().map(|s| (s.name.clone(), 0)).collect();
    for e in &entries {
        *counts.entry(e.tool.server.clone()).or_default() += 1;
    }
    let prompt_by_name = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), i))
        .collect();
    let entries: Arc<[Entry]> = entries.into();
    // Without skills, search ranks the tools themselves: no copy of them.
    let searchable = match skills.entries() {
        none if none.is_empty() => entries.clone(),
        skill_entries => entries.iter().cloned().chain(skill_entries).collect(),
    };
    Ok(Snapshot {
        version,
        entries,
        searchable,
        app_only: app_only.into(),
        by_name,
        by_loose,
        direct,
        owners,
        counts,
        prompts,
        prompt_by_name,
        resources,
        skills,
        index_options: index_options(&config),
        index: tokio::sync::Mutex::new(None),
    })
}

/// The entries the agent may see (and their aliases), apart from those only
/// an MCP App may call: named like the others, so that a name does not
/// change with a tool's visibility.
fn apart(
    entries: Vec<Entry>,
    aliases: Vec<Vec<String>>,
) -> (Vec<Entry>, Vec<Vec<String>>, Vec<Entry>) {
    let (mut seen, mut seen_aliases, mut app_only) = (Vec::new(), Vec::new(), Vec::new());
    for (entry, aliases) in entries.into_iter().zip(aliases) {
        if crate::apps::for_model(entry.tool.meta.as_ref()) {
            seen.push(entry);
            seen_aliases.push(aliases);
        } else {
            app_only.push(entry);
        }
    }
    (seen, seen_aliases, app_only)
}

/// Tools let through, by their index in the catalog, and the names each
/// listed tool goes by.
type Selected = (Vec<(usize, Arc<Tool>)>, HashMap<usize, Vec<String>>);

/// The tools the servers' `excludeTools` and `includeTools` let through (in
/// catalog order, shared with the listings, not copied), and the names each
/// listed tool goes by, by its index among them: config lists select tools
/// by any name the naming guest would give them.
fn selected(
    policy: &Policy,
    tools: &[&Arc<Tool>],
    config: &Config,
) -> Result<Selected, PluginError> {
    let by_server: HashMap<&str, &crate::config::ServerConfig> = config
        .servers
        .iter()
        .map(|s| (s.name.as_str(), &s.config))
        .collect();
    let lists = |server: &str| by_server.get(server).copied();
    let has_lists = |server: &str| {
        lists(server).is_some_and(|c| {
            !c.exclude_tools.is_empty()
                || !c.include_tools.is_empty()
                || matches!(&c.direct_tools, DirectTools::Only(l) if !l.is_empty())
        })
    };
    let listed: Vec<usize> = (0..tools.len())
        .filter(|&i| has_lists(&tools[i].server))
        .collect();
    let listed_tools: Vec<Arc<Tool>> = listed.iter().map(|&i| tools[i].clone()).collect();
    let alias_of: HashMap<usize, Vec<String>> = listed
        .iter()
        .copied()
        .zip(aliases(policy, &listed_tools)?)
        .collect();
    let keep = |i: usize| {
        let (Some(c), Some(a)) = (lists(&tools[i].server), alias_of.get(&i)) else {
            return true;
        };
        !selects(&c.exclude_tools, a)
            && (c.include_tools.is_empty() || selects(&c.include_tools, a))
    };
    let kept = (0..tools.len())
        .filter(|&i| keep(i))
        .map(|i| (i, tools[i].clone()))
        .collect();
    Ok((kept, alias_of))
}

/// The exposed entries as the naming guest names them, each with every name
/// config lists may select it by.
fn named(
    policy: &Policy,
    kept: &[(usize, Arc<Tool>)],
    alias_of: &mut HashMap<usize, Vec<String>>,
    naming: &NamingOptions,
) -> Result<(Vec<Entry>, Vec<Vec<String>>), PluginError> {
    let tools: Vec<Arc<Tool>> = kept.iter().map(|(_, t)| t.clone()).collect();
    let outcomes = policy.names(&tools, naming)?;
    let mut entries = Vec::with_capacity(kept.len());
    let mut entry_aliases = Vec::with_capacity(kept.len());
    for (i, entry) in exposed(&tools, outcomes) {
        let mut a = alias_of.remove(&kept[i].0).unwrap_or_default();
        a.push(loose(&entry.name));
        entry_aliases.push(a);
        entries.push(entry);
    }
    Ok((entries, entry_aliases))
}

/// Which entries are direct, as the direct-tools guest picks them.
/// `directTools` lists reach it as the original names of the tools they
/// select, matched as the exclusion lists are.
fn direct_flags(
    policy: &Policy,
    entries: &[Entry],
    entry_aliases: &[Vec<String>],
    config: &Config,
    env_override: Option<String>,
) -> Result<Vec<bool>, PluginError> {
    let servers = config
        .servers
        .iter()
        .map(|s| {
            let d = match &s.config.direct_tools {
                DirectTools::All => ServerDirect::All,
                DirectTools::None => ServerDirect::None,
                DirectTools::Only(list) => ServerDirect::Only(
                    entries
                        .iter()
                        .zip(entry_aliases)
                        .filter(|(e, a)| e.tool.server == s.name && selects(list, a))
                        .map(|(e, _)| e.tool.name.clone())
                        .collect(),
                ),
            };
            (s.name.clone(), d)
        })
        .collect();
    let options = DirectOptions {
        env_override,
        servers,
    };
    let mut direct = vec![false; entries.len()];
    for i in policy.direct(entries, &options)? {
        direct[i] = true;
    }
    Ok(direct)
}

/// How the naming guest names a tool of each server, so that a name can be
/// traced to its server before that server's tools are known.
fn owners(policy: &Policy, config: &Config, prefix: PrefixMode) -> Result<Vec<Owner>, PluginError> {
    let probes: Vec<Tool> = config
        .servers
        .iter()
        .filter(|s| s.config.enabled)
        .map(|s| Tool::new(s.name.clone(), PROBE, ""))
        .collect();
    Ok(names_in(policy, &probes, prefix)?
        .into_iter()
        .zip(&probes)
        .filter_map(|(name, probe)| {
            let at = name.find(PROBE)?;
            let (head, tail) = (&name[..at], &name[at + PROBE.len()..]);
            (!head.is_empty() || !tail.is_empty()).then(|| Owner {
                head: head.to_string(),
                tail: tail.to_string(),
                server: probe.server.clone(),
            })
        })
        .collect())
}

/// The servers' prompts, named by the same rule as tools, in a namespace of
/// their own; a prompt whose name collides is hidden.
fn named_prompts(
    policy: &Policy,
    offers: Vec<(String, crate::lifecycle::Offers)>,
    prefix: PrefixMode,
) -> Result<Vec<PromptEntry>, PluginError> {
    let prompts: Vec<(Tool, Value)> = offers
        .into_iter()
        .flat_map(|(server, o)| o.prompts.into_iter().map(move |p| (server.clone(), p)))
        .filter_map(|(server, p)| {
            let name = p.get("name")?.as_str()?.to_string();
            Some((Tool::new(server, name, ""), p))
        })
        .collect();
    let prompt_tools: Vec<&Tool> = prompts.iter().map(|(t, _)| t).collect();
    let options = NamingOptions {
        prefix,
        reserved: Vec::new(),
    };
    let outcomes = policy.names(&prompt_tools, &options)?;
    let mut exposed = Vec::new();
    for ((tool, prompt), outcome) in prompts.into_iter().zip(outcomes) {
        match outcome {
            NameOutcome::Named(name) => exposed.push(PromptEntry {
                name,
                server: tool.server,
                original: tool.name,
                prompt,
            }),
            _ => tracing::warn!("prompt {} is hidden: its name collides", tool.id()),
        }
    }
    Ok(exposed)
}

/// What the search index is built with: each server's `searchKeywords`, and
/// the scoring profile.
fn index_options(config: &Config) -> IndexOptions {
    IndexOptions {
        server_keywords: config
            .servers
            .iter()
            .filter(|s| !s.config.search_keywords.is_empty())
            .map(|s| (s.name.clone(), s.config.search_keywords.clone()))
            .collect(),
        profile: config.settings.search_profile.clone(),
    }
}

/// Why a build gave no snapshot.
#[derive(Clone, Debug)]
pub(crate) enum BuildError {
    /// The naming or direct-tools role failed.
    Policy(Arc<PluginError>),
    /// The runtime went away under it.
    ShuttingDown,
}

type PendingBuild = Shared<BoxFuture<'static, Result<Arc<Snapshot>, BuildError>>>;

/// Where the current snapshot is published, and the build under way.
pub(crate) struct Publisher {
    current: ArcSwap<Snapshot>,
    pending: Mutex<Option<(u64, PendingBuild)>>,
    /// Snapshots built so far.
    pub(crate) builds: AtomicU64,
    /// Search indexes built so far.
    pub(crate) index_builds: AtomicU64,
}

impl Publisher {
    pub(crate) fn new() -> Arc<Publisher> {
        Arc::new(Publisher {
            current: ArcSwap::from_pointee(Snapshot::empty()),
            pending: Mutex::new(None),
            builds: AtomicU64::new(0),
            index_builds: AtomicU64::new(0),
        })
    }

    /// The latest published snapshot, however old.
    pub(crate) fn latest(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// A snapshot of at least `version`: the published one when it is recent
    /// enough, else the build under way for it, else a new build. The build runs
    /// as a task of its own, so a caller that gives up does not waste it.
    pub(crate) async fn at_least(
        self: &Arc<Self>,
        version: u64,
        input: impl FnOnce() -> BuildInput + Send + 'static,
        policy: &Arc<Policy>,
    ) -> Result<Arc<Snapshot>, BuildError> {
        let current = self.current.load_full();
        if current.version >= version {
            return Ok(current);
        }
        let build = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            // Looked at again under the lock: a build is published before it
            // stops being pending, so one that finished meanwhile is seen here.
            let current = self.current.load_full();
            if current.version >= version {
                return Ok(current);
            }
            match &*pending {
                Some((v, build)) if *v >= version => build.clone(),
                _ => {
                    let build = self.spawn_build(input, policy.clone());
                    *pending = Some((version, build.clone()));
                    build
                }
            }
        };
        let built = build.clone().await;
        // Done: drop the finished build, so that it keeps no old snapshot alive
        // and a failed one is tried again by the next request.
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending
            .as_ref()
            .is_some_and(|(_, b)| Shared::ptr_eq(b, &build))
        {
            *pending = None;
        }
        drop(pending);
        built
    }

    fn spawn_build(
        self: &Arc<Self>,
        input: impl FnOnce() -> BuildInput + Send + 'static,
        policy: Arc<Policy>,
    ) -> PendingBuild {
        let publisher = self.clone();
        let task = tokio::task::spawn_blocking(move || {
            let built = build(&policy, input());
            policy.release_idle();
            super::release_free_memory();
            let snapshot = Arc::new(built?);
            publisher.builds.fetch_add(1, Ordering::Relaxed);
            // A slower build of an older version never replaces a newer one.
            publisher.current.rcu(|current| {
                if current.version >= snapshot.version {
                    current.clone()
                } else {
                    snapshot.clone()
                }
            });
            Ok(snapshot)
        });
        async move {
            match super::joined(task.await) {
                Ok(built) => built.map_err(|e| BuildError::Policy(Arc::new(e))),
                Err(_) => Err(BuildError::ShuttingDown),
            }
        }
        .boxed()
        .shared()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_belongs_to_the_server_with_the_longest_matching_affix() {
        let mut s = Snapshot::empty();
        s.owners = vec![
            Owner {
                head: "git__".into(),
                tail: String::new(),
                server: "git".into(),
            },
            Owner {
                head: "git__hub__".into(),
                tail: String::new(),
                server: "git--hub".into(),
            },
        ];
        assert_eq!(s.owner("git__log"), Some("git"));
        assert_eq!(s.owner("git__hub__create"), Some("git--hub"));
        assert_eq!(s.owner("git__"), None, "a bare prefix names no tool");
        assert_eq!(s.owner("slack__send"), None);
    }
}
