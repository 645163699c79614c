//! The guards of the config (`settings.guards`), loaded once at start: a
//! guard that cannot be loaded is a guard that cannot decide, so every call
//! is refused, saying which guard and why, until the config is fixed.

use super::Host;
use crate::catalog::Entry;
use crate::plugin::guard::{After, Before, Guard, GuardedCall, Guards};
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
        match &*self.guards {
            Loaded::Ready(g) => !g.is_empty(),
            Loaded::Broken(_) => true,
        }
    }

    /// The guards' verdict on a call of `entry` with `arguments` (JSON text)
    /// by `client` in `session`.
    pub async fn guard_call(
        &self,
        entry: &Entry,
        arguments: String,
        client: &str,
        session: u64,
    ) -> (Before, GuardedCall) {
        let call = GuardedCall {
            server: entry.tool.server.clone(),
            tool: entry.tool.name.clone(),
            name: entry.name.clone(),
            arguments,
            annotations: entry.tool.annotations.as_ref().map(|a| a.to_string()),
            client: client.to_string(),
            session,
        };
        let guards = self.guards.clone();
        let asked = call.clone();
        let span = guard_span("guard call", &call);
        let verdict = tokio::task::spawn_blocking(span.carry(move || match &*guards {
            Loaded::Ready(g) => g.before(&asked),
            Loaded::Broken(why) => Before::Deny(why.clone()),
        }))
        .await
        .unwrap_or_else(|e| Before::Deny(format!("the guards stopped: {e}")));
        let decision = match &verdict {
            Before::Run { ask: Some(_), .. } => "ask",
            Before::Run {
                rewritten: Some(_), ..
            } => "rewrite",
            Before::Run { .. } => "allow",
            Before::Deny(_) => "deny",
        };
        span.set(|| vec![Attribute::new("mcpw.guard.decision", decision)]);
        (verdict, call)
    }

    /// The guards' verdict on `outcome` (a `CallToolResult`, JSON text) of `call`.
    pub async fn guard_result(&self, call: GuardedCall, outcome: String) -> After {
        let guards = self.guards.clone();
        let span = guard_span("guard result", &call);
        let verdict = tokio::task::spawn_blocking(span.carry(move || match &*guards {
            Loaded::Ready(g) => g.after(&call, &outcome),
            Loaded::Broken(why) => After::Deny(why.clone()),
        }))
        .await
        .unwrap_or_else(|e| After::Deny(format!("the guards stopped: {e}")));
        let decision = match &verdict {
            After::Keep => "keep",
            After::Replace(_) => "replace",
            After::Deny(_) => "deny",
        };
        span.set(|| vec![Attribute::new("mcpw.guard.decision", decision)]);
        verdict
    }
}

/// The span of the guards' look at `call`; its decision is added after.
fn guard_span(name: &'static str, call: &GuardedCall) -> Span {
    Span::child(name, || {
        vec![
            Attribute::new("mcpw.server", call.server.clone()),
            Attribute::new("gen_ai.tool.name", call.tool.clone()),
            Attribute::new("mcpw.tool", call.name.clone()),
        ]
    })
}
