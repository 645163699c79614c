//! What the call path's stages use on the host's side (see
//! [`crate::host::pipeline`]): the config, the servers, the guards, the rate
//! limits' buckets and the observers. Shared, so that guests' `calls`
//! take the same path as every other caller.

use super::guards::{self, Loaded, guard_span};
use crate::audit::AuditLog;
use crate::catalog::Entry;
use crate::config::Config;
use crate::host::pipeline::{Caller, Observed, Policy, Stages};
use crate::host::{CallOptions, HostError, RateLimited, RawResult};
use crate::lifecycle::Manager;
use crate::plugin::guard::{After, Before, GuardedCall};
use crate::telemetry::Attribute;
use arc_swap::ArcSwap;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The host's side of the call path.
pub(crate) struct CallPath {
    pub(super) config: Arc<ArcSwap<Config>>,
    pub(super) manager: Arc<Manager>,
    /// The guards (or why they cannot run).
    pub(super) guards: Arc<guards::Loaded>,
    /// Where each call is told, if anywhere.
    pub(super) audit: Option<AuditLog>,
    /// The rate limits' buckets (in shared state, for a team).
    pub(super) buckets: crate::rate_limit::Buckets,
    pub(super) metrics: crate::metrics::Metrics,
    pub(super) recent: crate::recent::Recent,
    pub(super) stats: Option<Arc<crate::stats::Stats>>,
}

impl CallPath {
    /// The path of a host starting on `config`: its guards as loaded, its
    /// observers opened (the audit trail, the statistics).
    pub(super) fn new(
        config: &Arc<ArcSwap<Config>>,
        manager: &Arc<Manager>,
        guards: Arc<Loaded>,
        env: &crate::paths::Environment,
        shared: &Option<Arc<crate::team_state::SharedState>>,
        buckets: crate::rate_limit::Buckets,
    ) -> CallPath {
        let current = config.load();
        let audit = current.settings.audit.clone().map(|c| {
            // Replicas of a team write a file each.
            let replica = shared.as_ref().map(|_| crate::audit::replica_name());
            AuditLog::new(c, replica.as_deref())
        });
        let stats = crate::stats::StatsConfig::from_setting(
            current.settings.capture_stats.as_ref(),
            &env.state_dir(),
        )
        .map(|c| Arc::new(crate::stats::Stats::new(c.with_shared(shared.clone()))));
        if let Some(stats) = &stats {
            // A signal must not lose the calls recorded since the last flush.
            let stats = Arc::downgrade(stats);
            crate::processes::at_signal_exit(move || {
                if let Some(s) = stats.upgrade()
                    && let Err(e) = s.flush()
                {
                    tracing::warn!("cannot write call statistics: {e}");
                }
            });
        }
        CallPath {
            config: config.clone(),
            manager: manager.clone(),
            guards,
            audit,
            buckets,
            metrics: Default::default(),
            recent: Default::default(),
            stats,
        }
    }

    pub(super) fn config(&self) -> Arc<Config> {
        self.config.load_full()
    }
}

impl Stages for CallPath {
    async fn rate(&self, caller: &Caller, server: &str, tool: &str) -> Result<(), RateLimited> {
        let own = caller.own_rate(server, tool);
        self.rate_check(caller.bucket(), own.as_ref(), server, tool)
            .await
    }

    fn guarded(&self) -> bool {
        CallPath::guarded(self)
    }

    async fn guard_before(&self, call: GuardedCall) -> Before {
        self.guard_call(call).await
    }

    fn approval(&self, entry: &Entry) -> Policy {
        Policy::of(&self.config(), entry)
    }

    async fn call(
        &self,
        caller: &Caller,
        entry: &Entry,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<RawResult, HostError> {
        self.upstream_call(caller.who(), entry, arguments, options)
            .await
    }

    async fn guard_after(&self, call: GuardedCall, result: String) -> After {
        self.guard_result(call, result).await
    }

    fn measures(&self) -> bool {
        self.audit.is_some() || self.stats.is_some()
    }

    fn observe(&self, seen: &Observed) {
        if let Some(log) = &self.audit {
            log.write(&seen.record(log.keeps_arguments()));
        }
        if let Some(call) = &seen.call {
            self.count_call(seen, call);
        }
    }
}

impl CallPath {
    /// Whether any guard checks calls (or a broken one refuses them).
    pub(crate) fn guarded(&self) -> bool {
        match &*self.guards {
            Loaded::Ready(g) => !g.is_empty(),
            Loaded::Broken(_) => true,
        }
    }

    /// The guards' verdict on `call`, before it runs (the call path's step).
    async fn guard_call(&self, call: GuardedCall) -> Before {
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
        verdict
    }

    /// The guards' verdict on `outcome` (a `CallToolResult`, JSON text) of `call`.
    async fn guard_result(&self, call: GuardedCall, outcome: String) -> After {
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
