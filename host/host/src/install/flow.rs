//! One way from what the user or the agent names to a written entry, for
//! both fronts: `mcpw add` at a terminal and the agent's `mcp({add})`. The
//! source is planned (a package or URL, the registry's entry of that name,
//! or its best match); once the front has approved the plan and given its
//! values, it is installed (a PyPI package), tried once, pinned, written
//! and recorded. The fronts only ask and print.

use super::apply::{self, Target};
use super::{InstallError, Plan};
use crate::audit::{Decision, Record};
use crate::catalog::Tool;
use crate::config::{Config, ConfigSources, Provenance, SourceKind};
use crate::paths::Environment;
use crate::registry::{Cached, Listed, Registry};
use serde_json::json;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Why nothing was planned or added, as the fronts say it.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// The source is not one mcpw can plan.
    #[error(transparent)]
    Plan(#[from] InstallError),
    /// The registry has no entry for it.
    #[error("{0}")]
    NotFound(String),
    /// The registry's entry of that name is deprecated or deleted.
    #[error("{name} is {status} in the registry")]
    Inactive {
        /// The entry's name.
        name: String,
        /// Its status.
        status: String,
    },
    /// Trying or writing it failed: nothing was written.
    #[error("\"{server}\" was not added: {why}")]
    NotAdded {
        /// The server's name.
        server: String,
        /// Why.
        why: String,
    },
}

/// What was added.
pub struct Added {
    /// The file its entry went into.
    pub file: PathBuf,
    /// Its tools, as its trial connection listed them (and pinned).
    pub tools: Vec<Arc<Tool>>,
}

/// Who added a plan, and how it was approved: its audit line.
pub struct Approved<'a> {
    /// The client (token name) the agent acts for; empty at a terminal.
    pub client: &'a str,
    /// Asked, or allowed in advance.
    pub decision: Decision,
    /// Where the audit line goes (a serving host's log, or the user's).
    pub audit: &'a (dyn Fn(&Record) + Sync),
}

/// One install, in a user's config.
pub struct Flow<'a> {
    /// The user's config as loaded.
    pub config: &'a Config,
    /// Its environment.
    pub env: &'a Environment,
    /// The registry's base URL (default: `settings.registry`, else the official one).
    pub registry: Option<String>,
    /// Whether deprecated and deleted entries may be named.
    pub all: bool,
    /// Who asks: the user at `mcpw add` ([`Provenance::Registry`]), or an
    /// agent ([`Provenance::Agent`]); what a plan may take from an entry is
    /// that provenance's.
    pub from: Provenance,
}

impl Flow<'_> {
    /// The registry brought up to date; when it cannot be, the copy kept
    /// from before, and why.
    pub async fn registry(&self) -> (Cached, Option<String>) {
        let url = self
            .registry
            .clone()
            .or(self.config.settings.registry.clone());
        let registry = Registry::new(url.as_deref(), &self.env.cache_dir());
        let (cached, failed) = registry.refreshed().await;
        let why = failed.map(|e| {
            format!(
                "{e}; searching the copy kept from before ({} entries)",
                cached.entries.len()
            )
        });
        (cached, why)
    }

    /// The plan for `source`: a package or URL, the registry's entry of
    /// that exact name, or the best of `best`'s matches (the front ranks:
    /// by its guest, and by meaning where it can). `said` hears what the
    /// user should know (a stale registry, the match chosen).
    pub async fn plan<F, Fut>(
        &self,
        source: &str,
        name: Option<&str>,
        best: F,
        said: impl Fn(String),
    ) -> Result<Plan, FlowError>
    where
        F: FnOnce(Cached, String) -> Fut,
        Fut: Future<Output = Option<Listed>>,
    {
        if let Some(plan) = super::from_source(source, name)? {
            return Ok(plan);
        }
        let (cached, stale) = self.registry().await;
        stale.into_iter().for_each(&said);
        let entry = match cached.named(source) {
            Some(l) if self.all || l.status() == "active" => l.clone(),
            Some(l) => {
                return Err(FlowError::Inactive {
                    name: l.name().into(),
                    status: l.status().into(),
                });
            }
            None => {
                let best = best(cached, source.to_string()).await.ok_or_else(|| {
                    FlowError::NotFound(format!("nothing in the registry matches {source:?}"))
                })?;
                said(format!(
                    "the registry's best match for {source:?} is {}",
                    best.name()
                ));
                best
            }
        };
        Ok(super::from_registry(&entry.server, name, self.from)?)
    }

    /// `name`, or the first of `name-2`, `name-3`, … no server has.
    pub fn free_name(&self, name: &str) -> String {
        (1..)
            .map(|n| match n {
                1 => name.to_string(),
                n => format!("{name}-{n}"),
            })
            .find(|n| self.config.server(n).is_none())
            .unwrap_or_else(|| name.to_string())
    }

    /// Carries out `plan`, approved and given its values: a PyPI package
    /// installed into an environment of its own, one trial connection
    /// under `deadline`, its tools pinned and its entry written into
    /// `target` (a project's approved, as its plan was), and the audit line.
    pub async fn carry_out(
        &self,
        mut plan: Plan,
        target: &Target,
        vault_keys: Vec<String>,
        deadline: Duration,
        by: Approved<'_>,
    ) -> Result<(Plan, Added), FlowError> {
        let not_added = |why: String| FlowError::NotAdded {
            server: plan.name.clone(),
            why,
        };
        if let Some(why) = &plan.not_run {
            return Err(not_added(why.clone()));
        }
        if let Some((package, version)) = plan.pip.clone() {
            let cache = self.env.cache_dir();
            let installed = tokio::task::spawn_blocking(move || {
                super::pypi::install(&cache, &package, &version)
            })
            .await
            .map_err(|e| not_added(e.to_string()))?;
            let script = installed.map_err(not_added)?;
            plan.entry["command"] = json!(script.display().to_string());
        }
        let tools = apply::trial(&plan, self.config, self.env, deadline)
            .await
            .map_err(not_added)?;
        let file = apply::write(&plan, self.config, self.env, target, &tools, vault_keys)
            .map_err(not_added)?;
        if let Target::Project(dir) = target {
            apply::approve_project_entry(&self.reading(dir), &plan.name).map_err(not_added)?;
        }
        let line = apply::record(
            "install",
            &plan.name,
            by.client,
            by.decision,
            Some(plan.runs.clone()),
        );
        (by.audit)(&line);
        Ok((plan, Added { file, tools }))
    }

    /// The sources that read the user's file and the project in `dir`.
    fn reading(&self, dir: &std::path::Path) -> ConfigSources {
        let user = self
            .config
            .sources
            .iter()
            .find(|s| s.kind == SourceKind::User && s.found);
        ConfigSources {
            user_file: user.map(|s| s.path.clone()),
            user_value: None,
            project_dir: Some(dir.to_path_buf()),
            env: self.env.clone(),
        }
    }
}
