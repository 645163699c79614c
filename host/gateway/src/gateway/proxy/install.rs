//! `mcp({find})` and `mcp({add})`: the agent looks for servers in the MCP
//! Registry and adds one, behind the user. `settings.allowInstall` (the
//! user's own config only) decides: `"ask"` (the default) puts the exact
//! plan to the user through elicitation, `"deny"` refuses (and is what
//! `"ask"` becomes for a client that cannot be asked), and a list of globs
//! names registry namespaces added without asking. A plan that needs a
//! value only the user can give (a secret) is left to `mcpw add` at a
//! terminal: an agent never handles one. Every install is an audit line.

use super::{ClientScope, Reply, Session};
use crate::audit::Decision;
use crate::config::model::AllowInstall;
use crate::gateway::approval::Asker;
use crate::install::flow::{Approved, Flow};
use crate::install::{self, Plan, apply};
use crate::registry::{Cached, Listed};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use std::time::Duration;

/// The tool of the other exposures that does what `mcp({find})` and
/// `mcp({add})` do.
pub(crate) const TOOL_NAME: &str = "mcp_servers";

/// Whether [`TOOL_NAME`] is listed beside a session's tools (exposures
/// other than proxy, where `mcp` takes the keys at almost no cost): only
/// when the user set `settings.allowInstall` to allow something, as a
/// listed tool costs its tokens in every session.
pub(crate) fn listed(config: &crate::config::Config) -> bool {
    let setting = &config.settings.allow_install;
    setting.is_some() && setting != &Some(AllowInstall::Deny)
}

/// [`TOOL_NAME`]'s definition.
pub(crate) fn tool_definition() -> Value {
    json!({
        "name": TOOL_NAME,
        "description": "Find MCP servers in the MCP Registry ({find: \"what it should do\"}), or add one ({add: \"<registry name>\"}; the user approves it).",
        "inputSchema": {"type": "object", "properties": {
            "find": {"type": "string"}, "add": {"type": "string"}}},
    })
}

/// A call of [`TOOL_NAME`].
pub(crate) async fn call(
    gw: &Session,
    args: &serde_json::Map<String, Value>,
    ctx: &RequestContext<RoleServer>,
) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
    let client = gw.client(&ctx.extensions);
    let reply = match (
        args.get("add").and_then(Value::as_str),
        args.get("find").and_then(Value::as_str),
    ) {
        (Some(source), _) => add(gw, &client, source, ctx).await,
        (None, Some(query)) => find(gw, query, 5).await,
        (None, None) => Reply::error(
            "Give {find: \"what the server should do\"} or {add: \"<registry name>\"}.".into(),
            json!({"mode": "error", "error": "no_keys"}),
        ),
    };
    let content = [crate::present::Content::text(reply.text)];
    crate::gateway::wire::result(&content, Some(reply.details), reply.is_error)
}

/// How long the trial connection of an agent's install may take.
const TRIAL: Duration = Duration::from_secs(120);

/// Whether the setting `allow` lets `plan` be added without asking: named
/// by a glob, and giving the package runner no options of the registry's
/// (those are always shown to the user).
fn allows(allow: &AllowInstall, plan: &Plan) -> bool {
    let AllowInstall::Globs(globs) = allow else {
        return false;
    };
    if !plan.runtime_arguments.is_empty() {
        return false;
    }
    let name = plan.registry_name.as_deref().unwrap_or_default();
    !name.is_empty()
        && globs
            .iter()
            .any(|g| crate::config::approve::glob_matches(g, name))
}

/// The install flow of the serving host's config.
fn flow<'a>(config: &'a crate::config::Config, env: &'a crate::paths::Environment) -> Flow<'a> {
    Flow {
        config,
        env,
        registry: None,
        all: false,
        from: crate::config::Provenance::Agent,
    }
}

/// The registry's active servers ranked for `query` by the host's ranking
/// guest, off the async threads (guest calls block); only the hits are
/// copied out.
async fn ranked(gw: &Session, cached: Cached, query: &str, limit: u32) -> Vec<(Listed, f32)> {
    let policy = gw.shared.host.policy().clone();
    let query = query.to_string();
    tokio::task::spawn_blocking(move || {
        let listed = cached.latest(false);
        let hits = install::find::rank(&policy, &listed, &query, limit).unwrap_or_default();
        hits.into_iter()
            .map(|(i, s)| (listed[i].clone(), s))
            .collect()
    })
    .await
    .unwrap_or_default()
}

pub(super) async fn find(gw: &Session, query: &str, limit: u32) -> Reply {
    let host = &gw.shared.host;
    let config = host.config();
    let (cached, stale) = flow(&config, host.env()).registry().await;
    let hits = ranked(gw, cached, query, limit).await;
    let mut lines: Vec<String> = hits
        .iter()
        .map(|(l, _)| format!("- {} {}: {}", l.name(), l.version(), l.text()))
        .collect();
    if hits.is_empty() {
        lines.push(format!("Nothing in the registry matches \"{query}\"."));
    } else {
        lines.push("Add one with mcp({add: \"<name>\"}); the user approves it.".into());
    }
    if let Some(s) = &stale {
        lines.push(format!("({s})"));
    }
    let matches: Vec<Value> = hits
        .iter()
        .map(|(l, score)| json!({"name": l.name(), "version": l.version(), "description": l.server["description"], "score": score}))
        .collect();
    Reply::ok(
        lines.join("\n"),
        json!({"mode": "find", "query": query, "matches": matches}),
    )
}

/// Writes `line` into the serving host's audit trail, when it keeps one
/// (a replica of a team into its own file, as every other line).
fn audit(gw: &Session, line: &crate::audit::Record) {
    if let Some(log) = gw.shared.host.audit() {
        log.write(line);
    }
}

fn refused(text: String, plan: Option<&Plan>, error: &str) -> Reply {
    Reply::error(text, json!({"mode": "add", "error": error, "plan": plan}))
}

pub(super) async fn add(
    gw: &Session,
    client: &ClientScope,
    source: &str,
    ctx: &RequestContext<RoleServer>,
) -> Reply {
    let host = &gw.shared.host;
    let config = host.config();
    let allow = config
        .settings
        .allow_install
        .clone()
        .unwrap_or(AllowInstall::Ask);
    if allow == AllowInstall::Deny {
        let text = "Adding servers is off here (settings.allowInstall is \"deny\"): the user can run `mcpw add` themselves.";
        return refused(text.into(), None, "install_denied");
    }
    let flow = flow(&config, host.env());
    let best = |cached: Cached, query: String| async move {
        ranked(gw, cached, &query, 1)
            .await
            .into_iter()
            .next()
            .map(|(l, _)| l)
    };
    let mut plan = match flow.plan(source, None, best, |_| {}).await {
        Ok(p) => p,
        Err(why) => return refused(format!("Nothing was added: {why}."), None, "no_plan"),
    };
    plan.name = flow.free_name(&plan.name);
    if let Some(why) = needs_the_user(&mut plan) {
        return refused(why, Some(&plan), "needs_the_user");
    }
    match decide(&allow, &plan, ctx).await {
        Ok(decision) => carry_out(gw, client, plan, decision).await,
        Err(why) => {
            let line = apply::record(
                "install",
                &plan.name,
                client.name(),
                Decision::Denied,
                Some(why.clone()),
            );
            audit(gw, &line);
            refused(
                format!("Nothing was added: {why}."),
                Some(&plan),
                "not_approved",
            )
        }
    }
}

/// The approved plan tried, pinned and written.
async fn carry_out(gw: &Session, client: &ClientScope, plan: Plan, decision: Decision) -> Reply {
    let host = &gw.shared.host;
    let config = host.config();
    let by = Approved {
        client: client.name(),
        decision,
        audit: &|line| audit(gw, line),
    };
    let flow = flow(&config, host.env());
    let shown = plan.clone();
    let done = flow
        .carry_out(plan, &apply::Target::User, Vec::new(), TRIAL, by)
        .await;
    let (plan, added) = match done {
        Ok(d) => d,
        Err(why) => return refused(format!("{why}."), Some(&shown), "trial_failed"),
    };
    let names: Vec<&str> = added.tools.iter().map(|t| t.name.as_str()).collect();
    let text = format!(
        "Added \"{}\" ({} tools: {}). Its tools are listed once mcpw has read its config again, in a moment.",
        plan.name,
        names.len(),
        names.join(", ")
    );
    Reply::ok(
        text,
        json!({"mode": "add", "added": plan.name, "file": added.file, "plan": plan, "tools": names}),
    )
}

/// Why `plan` needs the user at a terminal, if it does: a secret, or a
/// value without a default. Values with a default take it.
fn needs_the_user(plan: &mut Plan) -> Option<String> {
    let mut missing = Vec::new();
    for input in plan.inputs.clone() {
        match (&input.default, input.secret) {
            (Some(d), false) => plan.fill(&input, d),
            _ => missing.push(input.field.clone()),
        }
    }
    plan.inputs.retain(|i| i.secret || i.default.is_none());
    (!missing.is_empty()).then(|| {
        format!(
            "\"{}\" needs values only the user can give ({}): ask them to run `mcpw add {}`.",
            plan.name,
            missing.join(", "),
            plan.registry_name.as_deref().unwrap_or(&plan.name)
        )
    })
}

/// Whether the plan goes ahead, and how that was decided.
async fn decide(
    allow: &AllowInstall,
    plan: &Plan,
    ctx: &RequestContext<RoleServer>,
) -> Result<Decision, String> {
    if let Some(why) = &plan.not_run {
        return Err(why.clone());
    }
    if allows(allow, plan) {
        return Ok(Decision::Allowed);
    }
    let asker = Asker::of(ctx);
    if !asker.client.declares("elicitation") {
        return Err("the user could not be asked (this client does not support elicitation), and an agent adds nothing unasked".into());
    }
    match ask(&asker, plan).await? {
        true => Ok(Decision::Asked),
        false => Err("the user declined the plan".into()),
    }
}

/// Puts the plan to the user; whether they accepted it.
async fn ask(asker: &Asker, plan: &Plan) -> Result<bool, String> {
    let message = format!(
        "The agent asks to add an MCP server.\n{}",
        plan.describe().join("\n")
    );
    let choices = [("add", "Add this server"), ("cancel", "Do not add it")];
    let chosen = asker.choose(message, &choices).await?;
    Ok(chosen.as_deref() == Some("add"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_as_ask_deny_or_globs() {
        assert_eq!(AllowInstall::parse(&json!("ask")), Some(AllowInstall::Ask));
        assert_eq!(
            AllowInstall::parse(&json!("deny")),
            Some(AllowInstall::Deny)
        );
        assert_eq!(AllowInstall::parse(&json!(["a", 1])), None);
        let globs = AllowInstall::parse(&json!(["io.github.modelcontextprotocol/*"])).unwrap();
        let mut plan = install::from_source("npm:a@1.0.0", None).unwrap().unwrap();
        assert!(
            !allows(&globs, &plan),
            "a package named on its own is asked about"
        );
        plan.registry_name = Some("io.github.modelcontextprotocol/server-memory".into());
        assert!(allows(&globs, &plan));
        plan.registry_name = Some("io.github.someone/server-memory".into());
        assert!(!allows(&globs, &plan));
        // Options to npx from the registry are put to the user.
        plan.registry_name = Some("io.github.modelcontextprotocol/server-memory".into());
        plan.runtime_arguments = vec!["--prefer-offline".into()];
        assert!(!allows(&globs, &plan));
    }
}
