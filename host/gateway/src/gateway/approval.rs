//! Approval in a session: a call that `approve` (or a guard) says the user
//! must approve is asked of the session's client (`elicitation/create`):
//! allow once, allow the tool or the server for the rest of the session, or
//! deny. The call path ([`crate::host::pipeline`]) decides when to ask; this is
//! who is asked. Calls made by a script are asked the same way: a script has
//! no way to answer for the user.

use super::{ClientScope, Session};
use crate::downstream::Client;
use crate::host::pipeline::{Answer, Approver, Caller, CallerSession, Question, Via};
use futures::future::BoxFuture;
use rmcp::model::{ClientResult, ElicitRequestParams, ElicitationAction, RequestId, ServerRequest};
use rmcp::service::RoleServer;
use serde_json::{Value, json};
use std::sync::Arc;

impl Session {
    /// The caller of a call `client` asks for in this session, by `via`,
    /// approved by the session's client.
    pub(super) fn caller(
        &self,
        client: &ClientScope,
        via: Via,
        ctx: &rmcp::service::RequestContext<RoleServer>,
    ) -> Caller {
        self.session_caller(client, via, Arc::new(Asker::of(ctx)))
    }

    /// The caller that sees a task's result for `client` when it comes
    /// (in a poll, not a request the client could be asked in): it asks
    /// nobody.
    pub(super) fn reader(&self, client: &ClientScope) -> Caller {
        let nobody = Arc::new(crate::host::pipeline::Unattended);
        self.session_caller(client, Via::Call, nobody)
    }

    fn session_caller(
        &self,
        client: &ClientScope,
        via: Via,
        approver: Arc<dyn Approver>,
    ) -> Caller {
        Caller {
            client: client.name().into(),
            reach: client.reach(),
            session: Some(CallerSession {
                id: self.session_id(),
                allowed: self.state.allowed.clone(),
            }),
            via,
            approver,
            policy: client.calls(),
        }
    }

    /// This session's id among the host's sessions (0 before `initialize`).
    fn session_id(&self) -> u64 {
        let session = self
            .state
            .registered
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        session.as_ref().map_or(0, |g| g.session().id)
    }
}

/// Where to ask: the session's client, within its request (a call, or the
/// script that makes it), so that an HTTP client gets the question on that
/// request's stream.
#[derive(Clone)]
pub(crate) struct Asker {
    pub(crate) client: Client,
    pub(crate) request: Option<RequestId>,
}

impl Asker {
    pub(crate) fn of(ctx: &rmcp::service::RequestContext<RoleServer>) -> Asker {
        Asker {
            client: Session::asked_client(ctx),
            request: Some(ctx.id.clone()),
        }
    }
}

impl Approver for Asker {
    fn cannot_ask(&self) -> Option<String> {
        let can = self.client.declares("elicitation");
        (!can).then(|| "this client cannot be asked: it does not support elicitation".into())
    }

    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Result<Answer, String>> {
        Box::pin(ask(self, question))
    }
}

impl Asker {
    /// Puts `message` to the client's user with one choice among `choices`
    /// (value, label): the value chosen, or none when they declined.
    pub(crate) async fn choose(
        &self,
        message: String,
        choices: &[(&str, &str)],
    ) -> Result<Option<String>, String> {
        let (values, labels): (Vec<&str>, Vec<&str>) = choices.iter().copied().unzip();
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {"decision": {
                    "type": "string",
                    "title": "Decision",
                    "enum": values,
                    "enumNames": labels,
                }},
                "required": ["decision"],
            },
        }))
        .map_err(|e| e.to_string())?;
        let request = ServerRequest::ElicitRequest(rmcp::model::Request::new(params));
        let answer = self
            .client
            .ask(
                request,
                self.request.clone(),
                Box::pin(std::future::pending()),
            )
            .await
            .map_err(|e| e.message.to_string())?;
        let ClientResult::ElicitResult(answer) = answer else {
            return Err(format!("the client answered with {answer:?}"));
        };
        if answer.action != ElicitationAction::Accept {
            return Ok(None);
        }
        Ok(answer
            .content
            .as_ref()
            .and_then(|c| c.get("decision"))
            .and_then(Value::as_str)
            .map(str::to_string))
    }
}

/// How much of the arguments the question shows.
const SHOWN_ARGUMENTS: usize = 2000;

/// Asks the client's user about one call.
async fn ask(asker: &Asker, question: &Question) -> Result<Answer, String> {
    let why = &question.why;
    let mut shown = question
        .arguments
        .as_ref()
        .map(|a| Value::Object(a.clone()).to_string())
        .unwrap_or_else(|| "{}".into());
    if shown.len() > SHOWN_ARGUMENTS {
        let cut = (0..=SHOWN_ARGUMENTS)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown = format!("{}… ({} bytes in all)", &shown[..cut], shown.len());
    }
    // What a server named, and what the agent sent, with what would hide
    // written out: the user approves what they read.
    let visible = crate::visible::shown;
    let message = format!(
        "Allow the agent to call {} (tool \"{}\" of server \"{}\")? Approval is asked because {}.\nArguments: {}",
        visible(&question.name),
        visible(&question.tool),
        question.server,
        visible(why),
        visible(&shown)
    );
    let choices = [
        ("once", "Allow once"),
        ("tool", "Allow this tool for the session"),
        ("server", "Allow every tool of this server for the session"),
        ("deny", "Deny"),
    ];
    let decision = asker.choose(message, &choices).await?;
    Ok(match decision.as_deref() {
        Some("once") => Answer::Once,
        Some("tool") => Answer::Tool,
        Some("server") => Answer::Server,
        _ => Answer::Deny,
    })
}
