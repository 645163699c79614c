//! One typed handle per role, over a guest instance. Every answer a guest gives
//! is checked against the WIT contract before the host uses it.

use super::exports::{DirectIndices, NamingIndices, RankingIndices};
use super::guest::{GuestInstance, GuestModule};
use super::state::wit_tool;
use super::wit::latest::exports::mcpw::plugin::{
    direct_tools as wit_direct, naming as wit_naming, ranking as wit_ranking,
};
use super::wit::latest::mcpw::plugin::types as wit;
use super::{GuestError, PluginError, PrefixMode, Role};
use crate::catalog::{Entry, Tool};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use wasmtime::component::ResourceAny;

/// Options of the naming role, in the config's terms (its `PrefixMode`,
/// with the settings' parsing); made into the contract's at the call.
#[derive(Clone, Debug, Default)]
pub struct NamingOptions {
    /// Prefix mode.
    pub prefix: PrefixMode,
    /// Names the host keeps for itself.
    pub reserved: Vec<String>,
}

/// What became of one tool, checked against the tools named (a duplicate's
/// index in range and earlier); the guest's own answer is the contract's
/// `NameOutcome`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameOutcome {
    /// Exposed under this name.
    Named(String),
    /// Hidden: same name as the tool at this index.
    DuplicateOf(usize),
    /// Hidden: the name is reserved.
    Reserved(String),
}

// The direct-tools role's input, as the contract crate defines it.
pub use mcpw_guest::{DirectOptions, ServerDirect};

// The ranking role's options, as the contract crate defines them: one
// copy for the host and the guests.
pub use mcpw_guest::{IndexOptions, QueryMode, SearchOptions};

/// One search hit, checked against the entries it indexes (in range, once
/// each); the guest's own answer is the contract's `Hit`.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// Index into the entries the index was built from.
    pub index: usize,
    /// The guest's score.
    pub score: f32,
    /// The part of the query it answers, when the guest read the query as
    /// several needs (none from a 0.1.x guest).
    pub need: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn guest_error(guest: &str, e: wit::PluginError) -> PluginError {
    let error = match e {
        wit::PluginError::InvalidInput(m) => GuestError::InvalidInput(m),
        wit::PluginError::InvalidPattern(m) => GuestError::InvalidPattern(m),
        wit::PluginError::Denied(m) => GuestError::Denied(m),
        wit::PluginError::NotFound(m) => GuestError::NotFound(m),
        wit::PluginError::Unavailable(m) => GuestError::Unavailable(m),
        wit::PluginError::Failed(m) => GuestError::Failed(m),
    };
    PluginError::Guest {
        guest: guest.to_string(),
        error,
    }
}

fn contract(guest: &str, role: Role, message: String) -> PluginError {
    PluginError::BadOutput {
        guest: guest.to_string(),
        role,
        message,
    }
}

fn wit_entry(e: &Entry) -> wit::Entry {
    wit::Entry {
        name: e.name.clone(),
        tool: wit_tool(&e.tool),
    }
}

/// Is `name` acceptable to every major LLM API?
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The naming role of one guest.
pub struct Namer {
    instance: Mutex<GuestInstance>,
    indices: NamingIndices,
}

impl Namer {
    /// Fails unless the guest exports the naming role.
    pub fn new(module: Arc<GuestModule>) -> Result<Namer, PluginError> {
        module.require(Role::Naming)?;
        let indices = NamingIndices::new(&module.pre).map_err(|e| PluginError::Load {
            guest: module.name().to_string(),
            message: format!("{e:#}"),
        })?;
        Ok(Namer {
            instance: Mutex::new(GuestInstance::new(module)),
            indices,
        })
    }

    /// Names every tool; the answer is checked (one outcome per tool, valid and
    /// unique names, duplicates pointing at an earlier named tool).
    pub fn names<T: std::borrow::Borrow<Tool>>(
        &self,
        tools: &[T],
        options: &NamingOptions,
    ) -> Result<Vec<NameOutcome>, PluginError> {
        let input: Vec<wit::Tool> = tools.iter().map(|t| wit_tool(t.borrow())).collect();
        let opts = wit::PrefixMode::from(options.prefix);
        let opts = wit_naming::NamingOptions {
            prefix: opts,
            reserved: options.reserved.clone(),
        };
        let mut instance = lock(&self.instance);
        let guest = instance.module().name().to_string();
        let answer = instance.run("names", |store, inst| {
            self.indices
                .load(&mut *store, inst)?
                .call_names(store, &input, &opts)
        })?;
        let answer = answer.map_err(|e| guest_error(&guest, e))?;
        check_names(&guest, tools.len(), &options.reserved, answer)
    }
}

impl Namer {
    /// Frees the instance's memory (it grows with the catalog it named); the
    /// next call instantiates the guest again.
    pub fn release(&self) {
        lock(&self.instance).release();
    }
}

impl From<PrefixMode> for wit::PrefixMode {
    fn from(p: PrefixMode) -> Self {
        match p {
            PrefixMode::Server => wit::PrefixMode::Server,
            PrefixMode::Short => wit::PrefixMode::Short,
            PrefixMode::None => wit::PrefixMode::None,
        }
    }
}

fn check_names(
    guest: &str,
    count: usize,
    reserved: &[String],
    answer: Vec<wit_naming::NameOutcome>,
) -> Result<Vec<NameOutcome>, PluginError> {
    let bad = |m: String| contract(guest, Role::Naming, m);
    if answer.len() != count {
        return Err(bad(format!("{} outcomes for {count} tools", answer.len())));
    }
    let mut seen: HashSet<&str> = HashSet::with_capacity(count);
    for (i, outcome) in answer.iter().enumerate() {
        match outcome {
            wit_naming::NameOutcome::Named(name) => {
                if !is_valid_tool_name(name) {
                    return Err(bad(format!(
                        "tool {i}: name {name:?} does not match ^[A-Za-z0-9_-]{{1,64}}$"
                    )));
                }
                if !seen.insert(name) {
                    return Err(bad(format!("tool {i}: name {name:?} is given twice")));
                }
                if reserved.iter().any(|r| r == name) {
                    return Err(bad(format!("tool {i}: name {name:?} is reserved")));
                }
            }
            wit_naming::NameOutcome::DuplicateOf(j) => {
                let j = *j as usize;
                if j >= i || !matches!(answer[j], wit_naming::NameOutcome::Named(_)) {
                    return Err(bad(format!(
                        "tool {i}: duplicate-of({j}) must point at an earlier named tool"
                    )));
                }
            }
            wit_naming::NameOutcome::Reserved(_) => {}
        }
    }
    Ok(answer
        .into_iter()
        .map(|o| match o {
            wit_naming::NameOutcome::Named(n) => NameOutcome::Named(n),
            wit_naming::NameOutcome::DuplicateOf(j) => NameOutcome::DuplicateOf(j as usize),
            wit_naming::NameOutcome::Reserved(n) => NameOutcome::Reserved(n),
        })
        .collect())
}

/// The direct-tools role of one guest.
pub struct DirectPolicy {
    instance: Mutex<GuestInstance>,
    indices: DirectIndices,
}

impl DirectPolicy {
    /// Fails unless the guest exports the direct-tools role.
    pub fn new(module: Arc<GuestModule>) -> Result<DirectPolicy, PluginError> {
        module.require(Role::DirectTools)?;
        let indices = DirectIndices::new(&module.pre).map_err(|e| PluginError::Load {
            guest: module.name().to_string(),
            message: format!("{e:#}"),
        })?;
        Ok(DirectPolicy {
            instance: Mutex::new(GuestInstance::new(module)),
            indices,
        })
    }

    /// Frees the instance's memory; the next call instantiates the guest again.
    pub fn release(&self) {
        lock(&self.instance).release();
    }

    /// Indices of the direct entries, checked to be in range and strictly ascending.
    pub fn select(
        &self,
        entries: &[Entry],
        options: &DirectOptions,
    ) -> Result<Vec<usize>, PluginError> {
        let input: Vec<wit::Entry> = entries.iter().map(wit_entry).collect();
        let opts = wit_direct::DirectOptions {
            env_override: options.env_override.clone(),
            servers: options
                .servers
                .iter()
                .map(|(server, d)| wit_direct::ServerSetting {
                    server: server.clone(),
                    direct: match d {
                        ServerDirect::All => wit_direct::ServerDirect::All,
                        ServerDirect::None => wit_direct::ServerDirect::None,
                        ServerDirect::Only(list) => wit_direct::ServerDirect::Only(list.clone()),
                    },
                })
                .collect(),
        };
        let mut instance = lock(&self.instance);
        let guest = instance.module().name().to_string();
        let answer = instance.run("select", |store, inst| {
            self.indices
                .load(&mut *store, inst)?
                .call_select(store, &input, &opts)
        })?;
        let answer = answer.map_err(|e| guest_error(&guest, e))?;
        let mut previous: Option<u32> = None;
        for &i in &answer {
            if i as usize >= entries.len() {
                return Err(contract(
                    &guest,
                    Role::DirectTools,
                    format!("index {i} is out of range ({} tools)", entries.len()),
                ));
            }
            if previous.is_some_and(|p| p >= i) {
                return Err(contract(
                    &guest,
                    Role::DirectTools,
                    "indices must be strictly ascending".into(),
                ));
            }
            previous = Some(i);
        }
        Ok(answer.into_iter().map(|i| i as usize).collect())
    }
}

struct RankerState {
    instance: GuestInstance,
    /// Live guest-side indexes: id -> (resource, instance generation it lives in).
    built: HashMap<u64, (ResourceAny, u64)>,
}

impl RankerState {
    /// Frees the guest-side indexes of dropped [`RankIndex`]es that were left
    /// to this instance (pool slot `slot`) while it was busy.
    fn drop_stale(&mut self, slot: usize, stale: &Mutex<Vec<(u64, usize)>>) {
        let ids: Vec<u64> = {
            let mut stale = lock(stale);
            let mine = stale
                .iter()
                .filter(|(_, s)| *s == slot)
                .map(|(id, _)| *id)
                .collect();
            stale.retain(|(_, s)| *s != slot);
            mine
        };
        for id in ids {
            self.forget(id);
        }
    }

    fn forget(&mut self, id: u64) {
        if let Some((resource, generation)) = self.built.remove(&id)
            && generation == self.instance.generation()
        {
            // Frees the guest's memory for this index; a failure only means the
            // instance is gone already.
            let _ = self
                .instance
                .run("drop", |store, _| resource.resource_drop(store));
        }
    }
}

/// Instances of one ranking guest. A wasm store runs one call at a time, so
/// searches from many sessions run in parallel on separate instances, each
/// holding its own copy of an index (built there on first need).
fn pool_size() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4)
}

/// The ranking role of one guest.
pub struct Ranker {
    pool: Vec<Mutex<RankerState>>,
    /// Indexes dropped while the instance holding them was busy: (index id, pool slot).
    stale: Mutex<Vec<(u64, usize)>>,
    next_id: AtomicU64,
    indices: RankingIndices,
}

/// A search index built by a ranking guest over one catalog.
pub struct RankIndex {
    ranker: Arc<Ranker>,
    id: u64,
    entries: Arc<[Entry]>,
    /// For a 0.1.x guest, which is given no skills: the position in
    /// `entries` of each entry it was given.
    older_view: Option<Vec<usize>>,
    options: IndexOptions,
    /// Bit i set: instance i has (or had) this index built.
    built_on: AtomicU64,
}

impl Ranker {
    /// Fails unless the guest exports the ranking role.
    pub fn new(module: Arc<GuestModule>) -> Result<Arc<Ranker>, PluginError> {
        module.require(Role::Ranking)?;
        let indices = RankingIndices::new(&module.pre).map_err(|e| PluginError::Load {
            guest: module.name().to_string(),
            message: format!("{e:#}"),
        })?;
        let pool = (0..pool_size())
            .map(|_| {
                Mutex::new(RankerState {
                    instance: GuestInstance::new(module.clone()),
                    built: HashMap::new(),
                })
            })
            .collect();
        Ok(Arc::new(Ranker {
            pool,
            stale: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            indices,
        }))
    }

    /// Whether the guest is given skills (it speaks contract 0.2.0 or later).
    pub fn sees_skills(&self) -> bool {
        !self.indices.older()
    }

    /// Builds an index over `entries` now (so that build errors surface here).
    pub fn index(
        self: &Arc<Self>,
        entries: Arc<[Entry]>,
        options: IndexOptions,
    ) -> Result<RankIndex, PluginError> {
        let older_view = self.indices.older().then(|| {
            let skill = |e: &Entry| e.tool.kind == crate::catalog::ToolKind::Skill;
            (0..entries.len())
                .filter(|&i| !skill(&entries[i]))
                .collect()
        });
        let index = RankIndex {
            ranker: self.clone(),
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            entries,
            older_view,
            options,
            built_on: AtomicU64::new(0),
        };
        let (slot, mut state) = self.any_instance();
        let built = self.build(&mut state, slot, &index);
        // Release the lock before `index` can be dropped: its Drop takes it.
        drop(state);
        built.map(|_| index)
    }

    /// A free instance if there is one, else waits for the first.
    fn any_instance(&self) -> (usize, MutexGuard<'_, RankerState>) {
        for (i, m) in self.pool.iter().enumerate() {
            if let Ok(state) = m.try_lock() {
                return (i, state);
            }
        }
        (0, lock(&self.pool[0]))
    }

    fn build(
        &self,
        state: &mut RankerState,
        slot: usize,
        index: &RankIndex,
    ) -> Result<ResourceAny, PluginError> {
        state.drop_stale(slot, &self.stale);
        let input: Vec<wit::Entry> = index.entries.iter().map(wit_entry).collect();
        let opts = wit_ranking::IndexOptions {
            server_keywords: index
                .options
                .server_keywords
                .iter()
                .map(|(server, keywords)| wit_ranking::ServerKeywords {
                    server: server.clone(),
                    keywords: keywords.clone(),
                })
                .collect(),
            profile: index.options.profile.clone(),
        };
        let guest = state.instance.module().name().to_string();
        let answer = state.instance.run("build", |store, inst| {
            self.indices
                .load(&mut *store, inst)?
                .call_build(store, &input, &opts)
        })?;
        let resource = answer.map_err(|e| guest_error(&guest, e))?;
        state
            .built
            .insert(index.id, (resource, state.instance.generation()));
        index.built_on.fetch_or(1 << slot, Ordering::AcqRel);
        Ok(resource)
    }
}

impl RankIndex {
    /// The entries the index was built from.
    pub fn entries(&self) -> &Arc<[Entry]> {
        &self.entries
    }

    /// An instance to search on: a free one holding this index; else a free
    /// one (the index is built there); else waits for one holding it.
    fn instance(&self) -> (usize, MutexGuard<'_, RankerState>) {
        let pool = &self.ranker.pool;
        let built = self.built_on.load(Ordering::Acquire);
        let holds = |i: usize| built & (1 << i) != 0;
        let free = |i: usize| pool[i].try_lock().ok().map(|s| (i, s));
        if let Some(found) = (0..pool.len()).filter(|&i| holds(i)).find_map(free) {
            return found;
        }
        if let Some(found) = (0..pool.len()).filter(|&i| !holds(i)).find_map(free) {
            return found;
        }
        let i = (0..pool.len()).find(|&i| holds(i)).unwrap_or(0);
        (i, lock(&pool[i]))
    }

    /// Answers a query; hits are checked (in range, within the limit, no index
    /// twice, finite scores, best first). An instance that does not hold the
    /// index (new, or replaced since) gets it built first.
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<Vec<Hit>, PluginError> {
        let ranker = &self.ranker;
        let (slot, mut state) = self.instance();
        let resource = match state.built.get(&self.id) {
            Some((r, generation)) if *generation == state.instance.generation() => *r,
            _ => ranker.build(&mut state, slot, self)?,
        };
        let opts = wit_ranking::SearchOptions {
            limit: options.limit,
            mode: match options.mode {
                QueryMode::Keyword => wit_ranking::QueryMode::Keyword,
                QueryMode::Regex => wit_ranking::QueryMode::Regex,
            },
            server: options.server.clone(),
        };
        let guest = state.instance.module().name().to_string();
        let answer = state.instance.run("search", |store, inst| {
            ranker
                .indices
                .load(&mut *store, inst)?
                .call_search(store, resource, query, &opts)
        })?;
        let hits = answer.map_err(|e| guest_error(&guest, e))?;
        let seen = Seen {
            entries: &self.entries,
            view: self.older_view.as_deref(),
        };
        check_hits(&guest, seen, query, options, hits)
    }
}

impl Drop for RankIndex {
    fn drop(&mut self) {
        let built = self.built_on.load(Ordering::Acquire);
        for (i, m) in self.ranker.pool.iter().enumerate() {
            if built & (1 << i) == 0 {
                continue;
            }
            // Never wait here (this may run on an async thread): an instance
            // busy with a search frees the index on its next use instead.
            match m.try_lock() {
                Ok(mut state) => state.forget(self.id),
                Err(_) => lock(&self.ranker.stale).push((self.id, i)),
            }
        }
    }
}

/// The entries a guest's index was built from: `entries`, or for a 0.1.x
/// guest the positions in it of those it was given.
#[derive(Clone, Copy)]
struct Seen<'a> {
    entries: &'a [Entry],
    view: Option<&'a [usize]>,
}

impl Seen<'_> {
    fn count(&self) -> usize {
        self.view.map_or(self.entries.len(), <[usize]>::len)
    }

    /// The position in `entries` of the guest's entry `i`.
    fn position(&self, i: u32) -> Option<usize> {
        let i = i as usize;
        match self.view {
            Some(view) => view.get(i).copied(),
            None => (i < self.entries.len()).then_some(i),
        }
    }
}

fn check_hits(
    guest: &str,
    seen_by_guest: Seen<'_>,
    query: &str,
    options: &SearchOptions,
    hits: Vec<wit_ranking::Hit>,
) -> Result<Vec<Hit>, PluginError> {
    let (count, limit) = (seen_by_guest.count(), options.limit);
    let bad = |m: String| contract(guest, Role::Ranking, m);
    if hits.len() > limit as usize {
        return Err(bad(format!("{} hits for a limit of {limit}", hits.len())));
    }
    let mut seen = HashSet::with_capacity(hits.len());
    let mut previous = f32::INFINITY;
    let mut checked = Vec::with_capacity(hits.len());
    for h in hits {
        let Some(at) = seen_by_guest.position(h.index) else {
            return Err(bad(format!(
                "hit index {} is out of range ({count} entries)",
                h.index
            )));
        };
        if !seen.insert(h.index) {
            return Err(bad(format!("hit index {} is given twice", h.index)));
        }
        // A need is a part of the query: never longer than twice the query
        // (its words, cased or spaced otherwise).
        let need = h.need.filter(|n| !n.trim().is_empty());
        if need
            .as_ref()
            .is_some_and(|n| n.chars().count() > 2 * query.chars().count())
        {
            return Err(bad(format!(
                "hit {}: its need is longer than the query",
                h.index
            )));
        }
        // A search of one server answers with that server's tools only.
        let server = &seen_by_guest.entries[at].tool.server;
        if options.server.as_ref().is_some_and(|only| only != server) {
            return Err(bad(format!(
                "hit {} is of server \"{server}\", in a search of server \"{}\" only",
                h.index,
                options.server.as_deref().unwrap_or_default()
            )));
        }
        if !h.score.is_finite() {
            return Err(bad(format!("hit {} has a score of {}", h.index, h.score)));
        }
        if h.score > previous {
            return Err(bad(
                "hits must come best first (scores not increasing)".into()
            ));
        }
        previous = h.score;
        checked.push(Hit {
            index: at,
            score: h.score,
            need,
        });
    }
    Ok(checked)
}

#[cfg(test)]
mod properties;
