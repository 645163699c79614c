//! The three policy roles as the rest of the host uses them: each answered by the
//! user's guest when one is configured, else by the embedded default guest.
//!
//! When a user guest traps, hits a limit or breaks the contract, the call is
//! answered by the default guest instead and a warning names the guest and the
//! limit. A guest that fails [`MAX_STRIKES`] calls in a row is set aside for the
//! rest of the process. Error values a guest returns on purpose (an invalid
//! pattern, say) are answers, not failures, and are passed on.

use super::compile_cache::CompileCache;
use super::guest::{GuestModule, LoadOptions};
use super::limits::Limits;
use super::roles::{
    DirectOptions, DirectPolicy, Hit, IndexOptions, NameOutcome, Namer, NamingOptions, RankIndex,
    Ranker, SearchOptions,
};
use super::services::HostServices;
use super::{DEFAULT_GUEST, PluginError, Role};
use crate::catalog::{Entry, Tool};
use crate::config::Grants;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Consecutive failures after which a user guest is no longer called.
pub const MAX_STRIKES: u32 = 3;

/// Which guests fill which role, with what grants and limits (`settings.plugins`).
#[derive(Clone, Debug, Default)]
pub struct PolicyConfig {
    /// User guest per role; roles absent use the default guest.
    pub guests: BTreeMap<Role, PathBuf>,
    /// Capabilities granted per role.
    pub grants: BTreeMap<Role, Grants>,
    /// Sandbox limits for every guest.
    pub limits: Limits,
    /// Where compiled guests are cached.
    pub cache: CompileCache,
}

impl PolicyConfig {
    /// The runtime's view of a config's `settings.plugins`.
    pub fn of(config: &crate::config::Config, cache: CompileCache) -> PolicyConfig {
        let p = &config.settings.plugins;
        PolicyConfig {
            guests: p.guests.clone(),
            grants: p.grants.clone(),
            limits: p.limits,
            cache,
        }
    }
}

struct UserGuest<T> {
    guest: T,
    name: String,
    strikes: AtomicU32,
}

impl<T> UserGuest<T> {
    fn active(&self) -> bool {
        self.strikes.load(Ordering::Relaxed) < MAX_STRIKES
    }

    fn strike(&self, role: Role, error: &PluginError) {
        let strikes = self.strikes.fetch_add(1, Ordering::Relaxed) + 1;
        if strikes >= MAX_STRIKES {
            tracing::warn!(
                "{error}; the {role} role falls back to the default guest (guest {} failed {strikes} calls in a row and is set aside)",
                self.name
            );
        } else {
            tracing::warn!(
                "{error}; the {role} role falls back to the default guest for this call"
            );
        }
    }
}

/// A value made on first use; a failure is returned and the next use tries
/// again.
struct Lazily<T> {
    made: OnceLock<T>,
    making: Mutex<()>,
    make: Box<dyn Fn() -> Result<T, PluginError> + Send + Sync>,
}

impl<T> Lazily<T> {
    fn new(make: impl Fn() -> Result<T, PluginError> + Send + Sync + 'static) -> Lazily<T> {
        Lazily {
            made: OnceLock::new(),
            making: Mutex::new(()),
            make: Box::new(make),
        }
    }

    fn get(&self) -> Result<&T, PluginError> {
        if let Some(made) = self.made.get() {
            return Ok(made);
        }
        // One maker at a time: two callers must not both load the guest.
        let _one = self.making.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(made) = self.made.get() {
            return Ok(made);
        }
        let made = (self.make)()?;
        Ok(self.made.get_or_init(|| made))
    }

    /// The value, if it was made.
    fn made(&self) -> Option<&T> {
        self.made.get()
    }
}

struct Slot<T> {
    role: Role,
    /// The default guest's handle, made on the role's first call.
    default: Lazily<T>,
    user: Option<UserGuest<T>>,
}

impl<T> Slot<T> {
    fn new(
        role: Role,
        default: Lazily<T>,
        user: Option<(Arc<GuestModule>, String)>,
        new: impl Fn(Arc<GuestModule>) -> Result<T, PluginError>,
    ) -> Result<Slot<T>, PluginError> {
        let user = match user {
            Some((module, name)) => Some(UserGuest {
                guest: new(module)?,
                name,
                strikes: AtomicU32::new(0),
            }),
            None => None,
        };
        Ok(Slot {
            role,
            default,
            user,
        })
    }

    fn user_name(&self) -> Option<&str> {
        self.user
            .as_ref()
            .filter(|u| u.active())
            .map(|u| u.name.as_str())
    }

    /// Runs `f` on the user guest, falling back to the default guest on failure.
    fn call<R>(&self, f: impl Fn(&T) -> Result<R, PluginError>) -> Result<R, PluginError> {
        if let Some(user) = self.user.as_ref().filter(|u| u.active()) {
            match f(&user.guest) {
                Ok(r) => {
                    user.strikes.store(0, Ordering::Relaxed);
                    return Ok(r);
                }
                Err(e) if e.is_answer() => return Err(e),
                Err(e) => user.strike(self.role, &e),
            }
        }
        f(self.default.get()?)
    }
}

/// A user guest that could not be loaded, and whose role the default guest fills.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BrokenGuest {
    /// Its role.
    #[serde(serialize_with = "role_key")]
    pub role: Role,
    /// Its file.
    pub path: PathBuf,
    /// Why it cannot be used.
    pub error: String,
}

fn role_key<S: serde::Serializer>(role: &Role, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(role.config_key())
}

/// The naming, direct-tools and ranking policies of a host.
pub struct Policy {
    naming: Slot<Namer>,
    direct: Slot<DirectPolicy>,
    ranking: Arc<Slot<Arc<Ranker>>>,
}

impl Policy {
    /// Loads the default guest and every user guest the config names. A user guest
    /// that cannot be read, compiled or linked, or that does not implement its
    /// role, is an error.
    pub fn load(
        config: &PolicyConfig,
        services: Arc<dyn HostServices>,
    ) -> Result<Policy, PluginError> {
        Self::load_with(config, services, false).map(|(policy, _)| policy)
    }

    /// [`Policy::load`], except that a user guest that cannot be loaded is left
    /// out: its role is filled by the default guest, and the guest is returned
    /// with why, to be reported. What serves agents uses this: one broken file
    /// must not stop every server.
    pub fn load_lenient(
        config: &PolicyConfig,
        services: Arc<dyn HostServices>,
    ) -> Result<(Policy, Vec<BrokenGuest>), PluginError> {
        Self::load_with(config, services, true)
    }

    fn load_with(
        config: &PolicyConfig,
        services: Arc<dyn HostServices>,
        lenient: bool,
    ) -> Result<(Policy, Vec<BrokenGuest>), PluginError> {
        let default = default_guest(config, &services);
        let mut broken = Vec::new();
        let mut user = |role: Role, made: &dyn Fn(Arc<GuestModule>) -> Result<(), PluginError>| {
            load_user_guest(config, &services, role, made, lenient, &mut broken)
        };
        let naming = user(Role::Naming, &|m| Namer::new(m).map(drop))?;
        let direct = user(Role::DirectTools, &|m| DirectPolicy::new(m).map(drop))?;
        let ranking = user(Role::Ranking, &|m| Ranker::new(m).map(drop))?;
        let policy = Policy::assemble(default, naming, direct, ranking)?;
        Ok((policy, broken))
    }

    /// Puts each role's default guest and user guest (if any) into its slot.
    fn assemble(
        default: Arc<Lazily<Arc<GuestModule>>>,
        naming: Option<UserModule>,
        direct: Option<UserModule>,
        ranking: Option<UserModule>,
    ) -> Result<Policy, PluginError> {
        Ok(Policy {
            naming: Slot::new(
                Role::Naming,
                of_default(&default, Namer::new),
                naming,
                Namer::new,
            )?,
            direct: Slot::new(
                Role::DirectTools,
                of_default(&default, DirectPolicy::new),
                direct,
                DirectPolicy::new,
            )?,
            ranking: Arc::new(Slot::new(
                Role::Ranking,
                of_default(&default, Ranker::new),
                ranking,
                Ranker::new,
            )?),
        })
    }

    /// The name of the user guest filling `role`, if any (and not set aside).
    pub fn user_guest(&self, role: Role) -> Option<&str> {
        match role {
            Role::Naming => self.naming.user_name(),
            Role::DirectTools => self.direct.user_name(),
            Role::Ranking => self.ranking.user_name(),
            // Scripts and guards have no fallback guest: see `Scripter`
            // and `Guards`.
            Role::Script | Role::Guard => None,
        }
    }

    /// Frees the naming and direct-tools instances: they run once per catalog
    /// version, and their memory grows with the catalog they were given.
    pub fn release_idle(&self) {
        if let Some(default) = self.naming.default.made() {
            default.release();
        }
        if let Some(default) = self.direct.default.made() {
            default.release();
        }
        if let Some(u) = &self.naming.user {
            u.guest.release();
        }
        if let Some(u) = &self.direct.user {
            u.guest.release();
        }
    }

    /// Names a catalog.
    pub fn names<T: std::borrow::Borrow<Tool>>(
        &self,
        tools: &[T],
        options: &NamingOptions,
    ) -> Result<Vec<NameOutcome>, PluginError> {
        self.naming.call(|g| g.names(tools, options))
    }

    /// Names a catalog and returns the exposed entries, in catalog order. Tools
    /// that lose a name collision or hit a reserved name are left out with a warning.
    pub fn entries(
        &self,
        tools: &[Tool],
        options: &NamingOptions,
    ) -> Result<Vec<Entry>, PluginError> {
        let tools: Vec<Arc<Tool>> = tools.iter().cloned().map(Arc::new).collect();
        let outcomes = self.names(&tools, options)?;
        Ok(exposed(&tools, outcomes)
            .into_iter()
            .map(|(_, entry)| entry)
            .collect())
    }

    /// Indices of the direct entries.
    pub fn direct(
        &self,
        entries: &[Entry],
        options: &DirectOptions,
    ) -> Result<Vec<usize>, PluginError> {
        self.direct.call(|g| g.select(entries, options))
    }

    /// Builds a search index over a named catalog.
    pub fn index(
        &self,
        entries: Arc<[Entry]>,
        options: IndexOptions,
    ) -> Result<SearchIndex, PluginError> {
        let slot = self.ranking.clone();
        let mut user = None;
        if let Some(u) = slot.user.as_ref().filter(|u| u.active()) {
            let mut built = u.guest.index(entries.clone(), options.clone());
            // `searchProfile` names a profile of the default guest; a user guest
            // that does not know it ranks its own way rather than not at all.
            if options.profile.is_some()
                && matches!(
                    &built,
                    Err(PluginError::Guest {
                        error: super::GuestError::InvalidInput(_),
                        ..
                    })
                )
            {
                tracing::debug!(
                    "the ranking guest does not know profile {:?}; using its own ranking",
                    options.profile
                );
                built = u.guest.index(
                    entries.clone(),
                    IndexOptions {
                        profile: None,
                        ..options.clone()
                    },
                );
            }
            match built {
                Ok(index) => {
                    u.strikes.store(0, Ordering::Relaxed);
                    user = Some(index);
                }
                Err(e) if e.is_answer() => return Err(e),
                Err(e) => u.strike(Role::Ranking, &e),
            }
        }
        let default = match user {
            Some(_) => None,
            None => Some(
                slot.default
                    .get()?
                    .index(entries.clone(), options.clone())?,
            ),
        };
        Ok(SearchIndex {
            slot,
            entries,
            options,
            user,
            default: default.map(OnceLock::from).unwrap_or_default(),
        })
    }
}

/// A role's handle on the default guest, made when the role is first called.
fn of_default<T: 'static>(
    default: &Arc<Lazily<Arc<GuestModule>>>,
    new: fn(Arc<GuestModule>) -> Result<T, PluginError>,
) -> Lazily<T> {
    let default = default.clone();
    Lazily::new(move || new(default.get()?.clone()))
}

/// A loaded user guest and the name it is reported by (its path).
type UserModule = (Arc<GuestModule>, String);

impl PolicyConfig {
    /// How a guest filling `role` is loaded: with that role's grants.
    fn load_options(&self, services: &Arc<dyn HostServices>, role: Role) -> LoadOptions {
        LoadOptions {
            limits: self.limits,
            grants: self
                .grants
                .get(&role)
                .copied()
                .unwrap_or_else(|| Grants::default_for(role)),
            services: Arc::new(super::services::AsRole::new(services.clone(), role)),
            cache: self.cache.clone(),
        }
    }
}

/// The embedded default guest, granted only `embed` (its ranking fuses
/// meaning with words when a model is configured). It is loaded on its first
/// call: a gateway that names nothing yet (an idle proxy) starts without the
/// plugin engine and the guest's compiled code.
fn default_guest(
    config: &PolicyConfig,
    services: &Arc<dyn HostServices>,
) -> Arc<Lazily<Arc<GuestModule>>> {
    let options = LoadOptions {
        grants: Grants::default_for(Role::Ranking),
        // The fallback must work whatever limits user guests are given.
        limits: config.limits.at_least(Limits::default()),
        ..config.load_options(services, Role::Naming)
    };
    Arc::new(Lazily::new(move || {
        GuestModule::load("default", DEFAULT_GUEST, options.clone())
    }))
}

/// The user guest configured for `role`, if any, made into its role's guest
/// by `made` to prove it fits. When `lenient`, one that cannot be used is
/// added to `broken` and left out, so the default guest fills its role.
fn load_user_guest(
    config: &PolicyConfig,
    services: &Arc<dyn HostServices>,
    role: Role,
    made: &dyn Fn(Arc<GuestModule>) -> Result<(), PluginError>,
    lenient: bool,
    broken: &mut Vec<BrokenGuest>,
) -> Result<Option<UserModule>, PluginError> {
    let Some(path) = config.guests.get(&role) else {
        return Ok(None);
    };
    let loaded = std::fs::read(path)
        .map_err(|source| PluginError::Io {
            path: path.clone(),
            source,
        })
        .and_then(|bytes| {
            let name = path.display().to_string();
            let module = GuestModule::load(&name, &bytes, config.load_options(services, role))?;
            made(module.clone())?;
            Ok((module, name))
        });
    match loaded {
        Ok(guest) => Ok(Some(guest)),
        Err(e) if lenient => {
            tracing::warn!(
                "the {role} guest {} cannot be used ({e}); the default guest fills that role",
                path.display()
            );
            broken.push(BrokenGuest {
                role,
                path: path.clone(),
                error: e.to_string(),
            });
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The exposed entries of a named catalog, each with the index of its tool, in
/// catalog order. Tools that lose a name collision or hit a reserved name are
/// left out with a warning.
pub fn exposed(tools: &[Arc<Tool>], outcomes: Vec<NameOutcome>) -> Vec<(usize, Entry)> {
    let mut entries = Vec::with_capacity(tools.len());
    for (i, (tool, outcome)) in tools.iter().zip(outcomes).enumerate() {
        match outcome {
            NameOutcome::Named(name) => entries.push((
                i,
                Entry {
                    name,
                    tool: tool.clone(),
                },
            )),
            NameOutcome::DuplicateOf(winner) => tracing::warn!(
                "tool {} is hidden: its name collides with {} (first one wins)",
                tool.id(),
                tools[winner].id()
            ),
            NameOutcome::Reserved(name) => tracing::warn!(
                "tool {} is hidden: its name {name} is reserved by mcpw",
                tool.id()
            ),
        }
    }
    entries
}

/// A search index answered by the ranking role, with the same fallback.
pub struct SearchIndex {
    slot: Arc<Slot<Arc<Ranker>>>,
    entries: Arc<[Entry]>,
    options: IndexOptions,
    user: Option<RankIndex>,
    /// The default guest's index: built at once without a user guest, else on
    /// the user guest's first failure.
    default: OnceLock<RankIndex>,
}

impl SearchIndex {
    /// The entries searched.
    pub fn entries(&self) -> &Arc<[Entry]> {
        &self.entries
    }

    /// The score of every tool the query matches, by entry position (the
    /// parts `--explain` and the live page show).
    pub fn scores(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> Result<std::collections::HashMap<usize, f32>, PluginError> {
        let all = SearchOptions {
            limit: u32::try_from(self.entries.len()).unwrap_or(u32::MAX),
            ..options.clone()
        };
        let hits = self.search(query, &all)?;
        Ok(hits.into_iter().map(|h| (h.index, h.score)).collect())
    }

    /// Answers a query.
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<Vec<Hit>, PluginError> {
        if let (Some(index), Some(u)) = (&self.user, self.slot.user.as_ref().filter(|u| u.active()))
        {
            match index.search(query, options) {
                Ok(hits) => {
                    u.strikes.store(0, Ordering::Relaxed);
                    return Ok(hits);
                }
                Err(e) if e.is_answer() => return Err(e),
                Err(e) => u.strike(Role::Ranking, &e),
            }
        }
        let default = match self.default.get() {
            Some(index) => index,
            None => {
                let built = self
                    .slot
                    .default
                    .get()?
                    .index(self.entries.clone(), self.options.clone())?;
                // Two searches may race to build it; one copy is kept.
                self.default.get_or_init(|| built)
            }
        };
        default.search(query, options)
    }
}
