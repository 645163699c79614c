//! The guards of the config (`settings.guards`), loaded once at start: a
//! guard that cannot be loaded is a guard that cannot decide, so every call
//! is refused, saying which guard and why, until the config is fixed.

use super::Host;
use crate::plugin::guard::{Guard, GuardedCall, Guards};
use crate::plugin::{Grants, GuestModule, LoadOptions, PolicyConfig};
use crate::telemetry::{Attribute, Span};
use std::sync::Arc;

/// The guards, or why they cannot run.
pub(crate) enum Loaded {
    /// In order.
    Ready(Guards),
    /// One could not be loaded: every call is refused.
    Broken(String),
}

/// Loads `settings.guards` (blocking).
pub(super) fn load(
    config: &crate::config::Config,
    policy: &PolicyConfig,
    services: Arc<dyn crate::plugin::HostServices>,
) -> Loaded {
    let mut chain = Vec::new();
    for path in &config.settings.guards {
        let options = LoadOptions {
            limits: policy.limits,
            // A guard sees what calls carry: it reaches nothing but `log`.
            grants: Grants::none(),
            services: services.clone(),
            cache: policy.cache.clone(),
        };
        let loaded = std::fs::read(path)
            .map_err(|e| format!("cannot read it: {e}"))
            .and_then(|wasm| {
                let module = GuestModule::load(&path.display().to_string(), &wasm, options)
                    .map_err(|e| e.to_string())?;
                Guard::new(module).map_err(|e| e.to_string())
            });
        match loaded {
            Ok(g) => chain.push(g),
            Err(e) => {
                let why = format!("guard {} cannot be used: {e}", path.display());
                tracing::error!("{why}; every call is refused until it is fixed");
                return Loaded::Broken(why);
            }
        }
    }
    Loaded::Ready(Guards::new(chain, config.settings.guards_fail_open))
}

impl Host {
    /// Whether any guard checks calls (or a broken one refuses them).
    pub fn guarded(&self) -> bool {
        self.calls.guarded()
    }
}

/// The span of the guards' look at `call`; its decision is added after.
pub(super) fn guard_span(name: &'static str, call: &GuardedCall) -> Span {
    Span::child(name, || {
        vec![
            Attribute::new("mcpw.server", call.server.clone()),
            Attribute::new("gen_ai.tool.name", call.tool.clone()),
            Attribute::new("mcpw.tool", call.name.clone()),
        ]
    })
}
