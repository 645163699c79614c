//! Approval: a call that `approve` says the user must approve is asked of
//! the session's client (`elicitation/create`): allow once, allow the tool or
//! the server for the rest of the session, or deny. A client that cannot be
//! asked gets a refusal that names the setting, unless the user file says
//! `approveWithoutClient: "allow"`. Calls made by a script are asked the
//! same way: a script has no way to answer for the user.

use super::Gateway;
use crate::catalog::Entry;
use crate::config::{ApproveMode, Config};
use rmcp::model::{ClientResult, ElicitRequestParams, ElicitationAction, RequestId, ServerRequest};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::sync::Mutex;

/// What the user allowed for the rest of one session.
#[derive(Default)]
pub(super) struct Allowed {
    tools: Mutex<HashSet<String>>,
    servers: Mutex<HashSet<String>>,
}

impl Allowed {
    fn has(&self, entry: &Entry) -> bool {
        lock(&self.servers).contains(&entry.tool.server) || lock(&self.tools).contains(&entry.name)
    }
}

fn lock(set: &Mutex<HashSet<String>>) -> std::sync::MutexGuard<'_, HashSet<String>> {
    set.lock().unwrap_or_else(|p| p.into_inner())
}

/// The mode that applies to `entry`, and the setting that says it: the
/// server's `approve` (by the server's own tool name) over the settings'
/// (by the agent-facing name).
pub(crate) fn mode_for(config: &Config, entry: &Entry) -> (ApproveMode, String) {
    let server = &entry.tool.server;
    let own = config
        .server(server)
        .and_then(|s| s.config.approve.as_ref())
        .and_then(|rule| rule.mode_for(&entry.tool.name));
    match own {
        Some(mode) => (mode, format!("mcpServers.{server}.approve")),
        None => (
            config
                .settings
                .approve
                .mode_for(&entry.name)
                .unwrap_or_default(),
            "settings.approve".into(),
        ),
    }
}

/// Why a call was not made, as the agent reads it.
pub(crate) struct Refused(pub String);

impl Gateway {
    /// Whether the call of `entry` with `args` may go ahead: yes when no
    /// approval is needed or the user allowed it (`true`: the user was asked
    /// now), else the refusal.
    /// `guard_asks`: a guard wants the user asked, and why (whatever
    /// `approve` says).
    pub(super) async fn approve(
        &self,
        entry: &Entry,
        args: Option<&Map<String, Value>>,
        asker: &Asker,
        guard_asks: Option<&str>,
    ) -> Result<bool, Refused> {
        let config = self.shared.host.config();
        let (mode, setting) = match guard_asks {
            Some(_) => (ApproveMode::All, "a guard".to_string()),
            None => mode_for(&config, entry),
        };
        if !mode.asks(entry.tool.annotations.as_ref()) || self.allowed.has(entry) {
            return Ok(false);
        }
        if !crate::upstream::origin::declares(&asker.peer, "elicitation") {
            if config.settings.approve_without_client {
                return Ok(false);
            }
            let because = match guard_asks {
                Some(reason) => format!("a guard asks: {reason}"),
                None => format!("{setting} is \"{}\"", mode.name()),
            };
            return Err(Refused(format!(
                "Error: calling {} needs the user's approval ({because}), and this client cannot be asked: it does not support elicitation. The call did not run. To run such calls unasked, set settings.approveWithoutClient to \"allow\" in mcpw's user config, or lower {setting}.",
                entry.name
            )));
        }
        match ask(asker, entry, args, mode, guard_asks).await {
            Ok(Decision::Once) => Ok(true),
            Ok(Decision::Tool) => {
                lock(&self.allowed.tools).insert(entry.name.clone());
                Ok(true)
            }
            Ok(Decision::Server) => {
                lock(&self.allowed.servers).insert(entry.tool.server.clone());
                Ok(true)
            }
            Ok(Decision::Deny) => Err(Refused(format!(
                "Error: the user denied this call of {}; it did not run.",
                entry.name
            ))),
            Err(e) => Err(Refused(format!(
                "Error: calling {} needs the user's approval, and asking failed ({e}); it did not run.",
                entry.name
            ))),
        }
    }
}

/// Where to ask: the session's client, within its request (a call, or the
/// script that makes it), so that an HTTP client gets the question on that
/// request's stream.
#[derive(Clone)]
pub(crate) struct Asker {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) request: Option<RequestId>,
}

impl Asker {
    pub(crate) fn of(ctx: &rmcp::service::RequestContext<RoleServer>) -> Asker {
        Asker {
            peer: ctx.peer.clone(),
            request: Some(ctx.id.clone()),
        }
    }
}

/// What the user said.
enum Decision {
    Once,
    Tool,
    Server,
    Deny,
}

/// How much of the arguments the question shows.
const SHOWN_ARGUMENTS: usize = 2000;

/// Asks the client's user about one call.
async fn ask(
    asker: &Asker,
    entry: &Entry,
    args: Option<&Map<String, Value>>,
    mode: ApproveMode,
    guard_asks: Option<&str>,
) -> Result<Decision, String> {
    let why = match (guard_asks, mode) {
        (Some(reason), _) => format!("a guard asks: {reason}"),
        (None, ApproveMode::Destructive) => "it may change or delete data".into(),
        (None, ApproveMode::Writes) => "it does not say that it only reads".into(),
        _ => "every call is approved".into(),
    };
    let mut shown = args
        .map(|a| Value::Object(a.clone()).to_string())
        .unwrap_or_else(|| "{}".into());
    if shown.len() > SHOWN_ARGUMENTS {
        let cut = (0..=SHOWN_ARGUMENTS)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown = format!("{}… ({} bytes in all)", &shown[..cut], shown.len());
    }
    let message = format!(
        "Allow the agent to call {} (tool \"{}\" of server \"{}\")? Approval is asked because {why}.\nArguments: {shown}",
        entry.name, entry.tool.name, entry.tool.server
    );
    let params: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {"decision": {
                "type": "string",
                "title": "Decision",
                "enum": ["once", "tool", "server", "deny"],
                "enumNames": ["Allow once", "Allow this tool for the session",
                              "Allow every tool of this server for the session", "Deny"],
            }},
            "required": ["decision"],
        },
    }))
    .map_err(|e| e.to_string())?;
    let request = ServerRequest::ElicitRequest(rmcp::model::Request::new(params));
    let answer = crate::upstream::origin::forward(
        &asker.peer,
        request,
        asker.request.clone(),
        std::future::pending(),
    )
    .await
    .map_err(|e| e.message.to_string())?;
    let ClientResult::ElicitResult(answer) = answer else {
        return Err(format!("the client answered with {answer:?}"));
    };
    if answer.action != ElicitationAction::Accept {
        return Ok(Decision::Deny);
    }
    let decision = answer
        .content
        .as_ref()
        .and_then(|c| c.get("decision"))
        .and_then(Value::as_str);
    Ok(match decision {
        Some("once") => Decision::Once,
        Some("tool") => Decision::Tool,
        Some("server") => Decision::Server,
        _ => Decision::Deny,
    })
}
