//! The gateway's own services, each checked only when configured: shared
//! state, the embedding model of search by meaning, the trace exporter.

use super::finding::{Finding, Section, Severity};
use crate::config::Config;
use crate::paths::Environment;
use std::time::Duration;

fn finding(severity: Severity, check: &'static str, message: String, remedy: &str) -> Finding {
    Finding::new(Section::Gateway, severity, check, message, remedy).client("mcpw")
}

/// Every gateway finding, each network check within `deadline`.
pub async fn check(cfg: &Config, env: &Environment, deadline: Duration) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(shared_state(cfg, env, deadline).await);
    out.extend(model(cfg, env, deadline).await);
    out.extend(trace_exporter(env, deadline).await);
    out
}

/// Shared state answers a PING.
async fn shared_state(cfg: &Config, env: &Environment, deadline: Duration) -> Option<Finding> {
    let url = crate::team_state::SharedState::url_for(cfg, env)?;
    let remedy = "start the Redis it names, or fix --shared-state / $MCPW_SHARED_STATE / settings.sharedState";
    let state = match crate::team_state::SharedState::open(&url) {
        Ok(s) => s,
        Err(e) => {
            return Some(finding(
                Severity::Blocking,
                "shared-state",
                e.to_string(),
                remedy,
            ));
        }
    };
    let ping = state.command::<String>(redis::cmd("PING"));
    Some(match tokio::time::timeout(deadline, ping).await {
        Ok(Ok(_)) => finding(
            Severity::Info,
            "shared-state",
            format!("{} answers", state.location()),
            "",
        ),
        Ok(Err(e)) => finding(
            Severity::Blocking,
            "shared-state",
            format!("{} does not answer: {e}", state.location()),
            remedy,
        ),
        Err(_) => finding(
            Severity::Blocking,
            "shared-state",
            format!(
                "{} does not answer within {} ms",
                state.location(),
                deadline.as_millis()
            ),
            remedy,
        ),
    })
}

/// How search ranks: the embedding model's files at hand, to fetch at the
/// first search, or search by meaning turned off.
async fn model(cfg: &Config, env: &Environment, deadline: Duration) -> Option<Finding> {
    let Some(source) = crate::embed::ModelSource::of(&cfg.settings.search.model, env) else {
        return Some(finding(
            Severity::Info,
            "embedding-model",
            "search ranks by words only: settings.search.model is \"none\"".into(),
            "",
        ));
    };
    let which = which(&source);
    Some(match (source.present(), source.fetched_from()) {
        (true, _) => finding(
            Severity::Info,
            "embedding-model",
            format!(
                "{which} {} is at hand in {}",
                source.name,
                source.folder.display()
            ),
            "",
        ),
        (false, Some(hub)) => match unreachable(&source, hub, deadline).await {
            // Words alone are what the user had before: degraded only when
            // they named a model themselves.
            Some(why) => finding(
                match source.default {
                    true => Severity::Info,
                    false => Severity::Warning,
                },
                "embedding-model",
                format!("{why}: search ranks by words only"),
                "let mcpw reach the hub (HF_ENDPOINT names a mirror), or set settings.search.model to a folder holding the model, or to \"none\" for words alone",
            ),
            None => finding(
                Severity::Info,
                "embedding-model",
                format!(
                    "{which} {} is not downloaded yet: search ranks by words until the first search fetches it from {hub}",
                    source.name
                ),
                "",
            ),
        },
        (false, None) => finding(
            Severity::Blocking,
            "embedding-model",
            format!(
                "model folder {} lacks the model's files: search by meaning is off",
                source.folder.display()
            ),
            "point settings.search.model at a folder holding a sentence-transformers model (model.safetensors, tokenizer.json, config.json)",
        ),
    })
}

/// How a message names the model of `source`.
fn which(source: &crate::embed::ModelSource) -> &'static str {
    match source.default {
        true => "the default model",
        false => "model",
    }
}

/// Why the model `source` cannot be fetched from `hub` now (it does not
/// accept a connection), or `None` when it can be.
async fn unreachable(
    source: &crate::embed::ModelSource,
    hub: &str,
    deadline: Duration,
) -> Option<String> {
    let why = connects(hub, deadline).await.err()?;
    let which = which(source);
    Some(format!(
        "{which} {} is not downloaded, and its hub {hub} {why}",
        source.name
    ))
}

/// Why search ranks by words alone for now, when its model is not here and
/// its hub cannot be reached (`mcpw status` says so, as `doctor` does).
pub async fn model_out_of_reach(cfg: &Config, env: &Environment) -> Option<String> {
    let source = crate::embed::ModelSource::of(&cfg.settings.search.model, env)?;
    if source.present() {
        return None;
    }
    let hub = source.fetched_from()?;
    unreachable(&source, hub, Duration::from_secs(2)).await
}

/// The OTLP endpoint accepts a TCP connection.
async fn trace_exporter(env: &Environment, deadline: Duration) -> Option<Finding> {
    let set = |v: &str| env.get(v).map(str::trim).filter(|s| !s.is_empty());
    let endpoint = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .map(str::to_string)
        .or_else(|| {
            (set("OTEL_TRACES_EXPORTER") == Some("otlp"))
                .then(|| "http://localhost:4318".to_string())
        })?;
    let remedy = "start the collector, or fix OTEL_EXPORTER_OTLP_ENDPOINT";
    Some(match connects(&endpoint, deadline).await {
        Ok(()) => finding(
            Severity::Info,
            "trace-exporter",
            format!("{endpoint} accepts connections"),
            "",
        ),
        Err(why) => finding(
            Severity::Blocking,
            "trace-exporter",
            format!("{endpoint} {why}"),
            remedy,
        ),
    })
}

/// Whether the host and port of `url` accept a TCP connection within
/// `deadline`; if not, why, as the end of a sentence naming `url`.
async fn connects(url: &str, deadline: Duration) -> Result<(), String> {
    let address = url::Url::parse(url)
        .ok()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .ok_or_else(|| "is not a URL".to_string())?;
    let connect = tokio::net::TcpStream::connect(address.clone());
    match tokio::time::timeout(deadline, connect).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("({address}) refuses: {e}")),
        Err(_) => Err(format!(
            "does not answer within {} ms",
            deadline.as_millis()
        )),
    }
}
