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
    out.extend(model(cfg, env));
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

/// The embedding model's files are at hand.
fn model(cfg: &Config, env: &Environment) -> Option<Finding> {
    let setting = cfg.settings.search.model.as_ref()?;
    let source = crate::embed::ModelSource::new(setting, &env.home(), &env.cache_dir());
    Some(match (source.present(), setting) {
        (true, _) => finding(
            Severity::Info,
            "embedding-model",
            format!(
                "model {} is at hand in {}",
                source.name,
                source.folder.display()
            ),
            "",
        ),
        (false, crate::config::search::ModelSetting::Hub { .. }) => finding(
            Severity::Warning,
            "embedding-model",
            format!(
                "model {} is not downloaded yet: search ranks by words until it is",
                source.name
            ),
            "run `mcpw status` once with network access: it fetches the model",
        ),
        (false, _) => finding(
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
    let address = url::Url::parse(&endpoint)
        .ok()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)));
    let Some(address) = address else {
        return Some(finding(
            Severity::Blocking,
            "trace-exporter",
            format!("the endpoint {endpoint} is not a URL"),
            remedy,
        ));
    };
    let connect = tokio::net::TcpStream::connect(address.clone());
    Some(match tokio::time::timeout(deadline, connect).await {
        Ok(Ok(_)) => finding(
            Severity::Info,
            "trace-exporter",
            format!("{endpoint} accepts connections"),
            "",
        ),
        Ok(Err(e)) => finding(
            Severity::Blocking,
            "trace-exporter",
            format!("{endpoint} ({address}) refuses: {e}"),
            remedy,
        ),
        Err(_) => finding(
            Severity::Blocking,
            "trace-exporter",
            format!(
                "{endpoint} does not answer within {} ms",
                deadline.as_millis()
            ),
            remedy,
        ),
    })
}
