//! The guests' `catalog`, `lifecycle` and `calls` imports, on live connections.
//! Guests run on blocking threads, so these block on the runtime.

use super::call_path::CallPath;
use super::snapshot::Publisher;
use crate::catalog::{Entry, ServerStatus, Tool, ToolKind};
use crate::host::RawResult;
use crate::host::pipeline::{Caller, Ran};
use crate::lifecycle::{LifecycleError, Manager};
use crate::plugin::{CallOutcome, EmbedError, EmbedModel, HostServices, ServiceError, Urgency};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock, Weak};
use tokio::runtime::Handle;

thread_local! {
    /// The servers the client a guest runs for sees, while it runs for one
    /// (a search, a script); `None` outside such a run, or for a client that
    /// sees every server.
    static ACTING_FOR: RefCell<Option<Arc<BTreeSet<String>>>> = const { RefCell::new(None) };
}

/// Runs `f` (a guest's run, on this thread) for a client that sees only
/// `servers` (`None`: every one): the guest's imports reach and list only
/// those servers, as the client's own requests do.
pub(crate) fn acting_for<R>(servers: Option<Arc<BTreeSet<String>>>, f: impl FnOnce() -> R) -> R {
    /// Puts the outer scope back, also when `f` unwinds.
    struct Restore(Option<Arc<BTreeSet<String>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ACTING_FOR.with(|a| *a.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(ACTING_FOR.with(|a| a.replace(servers)));
    f()
}

/// Does the client the guest runs for (if any) see `server`?
fn sees(server: &str) -> bool {
    ACTING_FOR.with(|a| a.borrow().as_ref().is_none_or(|s| s.contains(server)))
}

pub(crate) struct LiveServices {
    /// Set once the manager exists (the guests load while it reads the cache).
    manager: OnceLock<Weak<Manager>>,
    /// The call path guests' calls take, set once the host exists.
    calls: OnceLock<Weak<CallPath>>,
    catalog: Arc<Publisher>,
    runtime: Handle,
    embeddings: Option<Arc<crate::embed::Embeddings>>,
}

impl LiveServices {
    pub(crate) fn new(
        catalog: Arc<Publisher>,
        embeddings: Option<Arc<crate::embed::Embeddings>>,
    ) -> Self {
        LiveServices {
            manager: OnceLock::new(),
            calls: OnceLock::new(),
            catalog,
            runtime: Handle::current(),
            embeddings,
        }
    }

    pub(crate) fn attach(&self, manager: &Arc<Manager>) {
        let _ = self.manager.set(Arc::downgrade(manager));
    }

    pub(super) fn attach_calls(&self, calls: &Arc<CallPath>) {
        let _ = self.calls.set(Arc::downgrade(calls));
    }

    fn calls(&self) -> Result<Arc<CallPath>, ServiceError> {
        self.calls
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| ServiceError::Unavailable("the host is not running".into()))
    }

    fn manager(&self) -> Result<Arc<Manager>, ServiceError> {
        self.manager
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| ServiceError::Unavailable("the host is not running".into()))
    }
}

impl LiveServices {
    /// The catalog entry of `server`'s `tool` in the latest snapshot: a
    /// guest calls only what the agent could, never a tool the pins
    /// withhold or one no snapshot holds yet.
    fn entry(&self, server: &str, tool: &str) -> Result<Entry, ServiceError> {
        let snapshot = self.catalog.latest();
        if snapshot.version() == 0 {
            return Err(ServiceError::Unavailable(
                "no catalog yet: tools are called once the servers are listed".into(),
            ));
        }
        let listed = snapshot.entries().iter().find(|e| {
            e.tool.server == server && e.tool.name == tool && e.tool.kind == ToolKind::Tool
        });
        // A server the client does not see is, to its guest, no server.
        let listed = listed.filter(|_| sees(server));
        match listed {
            Some(e) => Ok(Entry::clone(e)),
            None => Err(ServiceError::NotFound(format!(
                "no tool {tool:?} of server {server:?} in the catalog"
            ))),
        }
    }

    /// Whether the guest of `role` may reach `name` (a tool's agent-facing
    /// name, or `<server>:<uri>` for a resource no tool stands for): only
    /// what the user lists in `settings.plugins.calls.<role>`, none else.
    fn may_reach(&self, role: &str, name: &str) -> Result<(), ServiceError> {
        let config = self.calls()?.config();
        let role = crate::config::Role::ALL
            .into_iter()
            .find(|r| r.config_key() == role);
        let globs = role.and_then(|r| config.settings.plugins.calls.get(&r));
        let listed = globs.is_some_and(|globs| {
            globs
                .iter()
                .any(|g| crate::config::approve::glob_matches(g, name))
        });
        if listed {
            return Ok(());
        }
        let key = role.map_or("<role>", |r| r.config_key());
        Err(ServiceError::Failed(format!(
            "the guest may not reach {name}: settings.plugins.calls.{key} does not list it"
        )))
    }

    /// Runs the call of `entry` as `caller` (blocking).
    fn run(
        &self,
        caller: &str,
        entry: &Entry,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Result<RawResult, ServiceError>, ServiceError> {
        let calls = self.calls()?;
        let caller = Caller::guest(caller);
        let options = crate::upstream::CallOptions::default();
        let ran = self.runtime.block_on(crate::host::pipeline::run(
            &*calls, &caller, entry, arguments, options,
        ));
        Ok(match ran {
            Ran::Done(Ok(raw)) => Ok(raw),
            Ran::Done(Err(e)) => Err(ServiceError::Unavailable(e.to_string())),
            Ran::Refused(why) => Err(ServiceError::Failed(why)),
            Ran::Withheld(why) => Err(ServiceError::Failed(format!(
                "the result was withheld: {why}"
            ))),
        })
    }
}

fn service_error(e: LifecycleError) -> ServiceError {
    match e {
        LifecycleError::NotFound(s) => ServiceError::NotFound(format!("no server named {s:?}")),
        other => ServiceError::Unavailable(other.to_string()),
    }
}

impl HostServices for LiveServices {
    fn servers(&self) -> Vec<ServerStatus> {
        let Ok(m) = self.manager() else {
            return Vec::new();
        };
        let mut all = m.status();
        all.retain(|s| sees(&s.name));
        self.catalog
            .latest()
            .count_exposed(m.catalog_version(), &mut all);
        all
    }

    /// The exposed tools of the latest catalog snapshot (a guest running while
    /// a snapshot is built sees the one before), or what the servers listed
    /// before any snapshot exists.
    fn tools(&self, server: Option<&str>) -> Result<Vec<Tool>, ServiceError> {
        let m = self.manager()?;
        if let Some(s) = server {
            if !sees(s) {
                return Err(service_error(LifecycleError::NotFound(s.to_string())));
            }
            m.server_status(s).map_err(service_error)?;
        }
        let snapshot = self.catalog.latest();
        let mut tools: Vec<Tool> = if snapshot.version() == 0 {
            match server {
                None => m.tools(),
                Some(s) => m.server_tools(s).ok().flatten().unwrap_or_default(),
            }
        } else {
            snapshot
                .entries()
                .iter()
                .filter(|e| server.is_none_or(|s| e.tool.server == s))
                .map(|e| Tool::clone(&e.tool))
                .collect()
        };
        tools.retain(|t| sees(&t.server));
        Ok(tools)
    }

    fn connect(&self, server: &str, refresh: bool) -> Result<ServerStatus, ServiceError> {
        let m = self.manager()?;
        if !sees(server) {
            return Err(service_error(LifecycleError::NotFound(server.to_string())));
        }
        self.runtime
            .block_on(m.connect(server, refresh))
            .map_err(service_error)?;
        m.server_status(server).map_err(service_error)
    }

    /// A guest's call: found among the server's tools, then made along the
    /// call path every call takes, as the guest `caller` names (`guest:<role>`).
    fn call_tool(
        &self,
        caller: &str,
        server: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<CallOutcome, ServiceError> {
        let args = match serde_json::from_str(arguments) {
            Ok(serde_json::Value::Object(args)) => args,
            Ok(_) | Err(_) => {
                let why = "arguments are not a JSON object".to_string();
                return Err(ServiceError::InvalidInput(why));
            }
        };
        let entry = self.entry(server, tool)?;
        self.may_reach(caller, &entry.name)?;
        let ran = self.run(caller, &entry, Some(args))?;
        match ran {
            // A call that does not take tasks gets the result.
            Ok(RawResult::Tool(result)) => Ok(CallOutcome {
                content: serde_json::to_string(&result.content).unwrap_or_else(|_| "[]".into()),
                structured_content: result.structured_content.as_ref().map(|s| s.to_string()),
                is_error: result.is_error == Some(true),
            }),
            Ok(RawResult::Rpc(e)) => Err(ServiceError::Failed(e)),
            Ok(_) => Err(ServiceError::Failed(
                "the server answered with a task".into(),
            )),
            Err(e) => Err(e),
        }
    }

    /// A guest's read: a resource tool's reading along the call path, or,
    /// for a URI no tool stands for, a read along the path reads take (the
    /// rate limits, the guards on the reading, the audit line).
    fn read_resource(&self, caller: &str, server: &str, uri: &str) -> Result<String, ServiceError> {
        let m = self.manager()?;
        if !sees(server) {
            return Err(service_error(LifecycleError::NotFound(server.to_string())));
        }
        // A skill's file is read only as the skill's, checked against its
        // digest: never by its server's own URI.
        if let Some(read_as) = crate::host::skills::exposed(server, uri) {
            return Err(ServiceError::NotFound(format!(
                "{uri} of server \"{server}\" is a skill's file: it is read as {read_as} (a script's read-skill)"
            )));
        }
        let snapshot = self.catalog.latest();
        let as_tool = snapshot.entries().iter().find(|e| {
            e.tool.server == server
                && e.tool.kind == ToolKind::Resource
                && e.tool.resource_uri.as_deref() == Some(uri)
        });
        let reached = as_tool.map_or_else(|| format!("{server}:{uri}"), |e| e.name.clone());
        self.may_reach(caller, &reached)?;
        if let Some(entry) = as_tool.cloned() {
            return match self.run(caller, &entry, None)? {
                Ok(RawResult::Resource(r)) => {
                    Ok(serde_json::to_string(&r.contents).unwrap_or_else(|_| "[]".into()))
                }
                Ok(RawResult::Rpc(e)) => Err(ServiceError::Failed(e)),
                Ok(_) => Err(ServiceError::Failed(
                    "the server did not answer with contents".into(),
                )),
                Err(e) => Err(e),
            };
        }
        let (calls, owned) = (self.calls()?, uri.to_string());
        let caller = Caller::guest(caller);
        let timeout = m.call_timeout(server);
        let read = |_| async {
            m.with_connection(server, |c| async move {
                c.read_resource(&owned, timeout, &Default::default()).await
            })
            .await
            .map(RawResult::Resource)
            .map_err(crate::host::HostError::from)
        };
        let what = crate::host::pipeline::Read::Resource {
            uri,
            asked: uri,
            skill: false,
        };
        let result = self
            .runtime
            .block_on(crate::host::pipeline::read(
                &*calls, &caller, server, what, read,
            ))
            .map_err(|e| match e {
                crate::host::HostError::Lifecycle(e) => service_error(e),
                e => ServiceError::Failed(e.to_string()),
            })?;
        match result {
            RawResult::Resource(r) => {
                Ok(serde_json::to_string(&r.contents).unwrap_or_else(|_| "[]".into()))
            }
            _ => Err(ServiceError::Failed(
                "the server did not answer with contents".into(),
            )),
        }
    }

    fn embed_model(&self) -> Option<EmbedModel> {
        self.embeddings.as_ref()?.model()
    }

    fn embed(&self, texts: &[String], urgency: Urgency) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.embeddings {
            Some(e) => e.embed(texts, urgency),
            None => Err(EmbedError::NoModel),
        }
    }
}
