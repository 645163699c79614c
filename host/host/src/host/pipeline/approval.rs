//! Step 4: whether the user must approve a call, and asking them. The
//! caller supplies who is asked (its [`Approver`]): a session's client
//! through elicitation, the person at the terminal, or nobody. Where nobody
//! can be asked, `settings.approveWithoutClient` decides.

use super::caller::{Allowances, Answer, Caller, Question};
use crate::catalog::Entry;
use crate::config::{ApproveMode, Config};
use serde_json::{Map, Value};

/// What the config says of approving a call of one tool.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Which calls are asked about.
    pub mode: ApproveMode,
    /// The setting that says so, for the messages.
    pub setting: String,
    /// `settings.approveWithoutClient`: run unasked where nobody can be asked.
    pub without_client: bool,
}

impl Policy {
    /// The policy of `entry` in `config`: the server's `approve` (by the
    /// server's own tool name) over the settings' (by the agent-facing
    /// name). A server from outside the user's own files (a project's, of
    /// any client) may only tighten the user's: where the user's setting
    /// asks about this tool, it asks.
    pub fn of(config: &Config, entry: &Entry) -> Policy {
        let server = &entry.tool.server;
        let defined = config.server(server);
        let own = defined
            .and_then(|s| s.config.approve.as_ref())
            .and_then(|rule| rule.mode_for(&entry.tool.name));
        let user = config
            .settings
            .approve
            .mode_for(&entry.name)
            .unwrap_or_default();
        let tightens_only =
            defined.is_some_and(|s| !crate::config::settings::rights(s.origin.provenance).loosens);
        let annotations = entry.tool.annotations.as_ref();
        let (mode, setting) = match own {
            Some(own) if !(tightens_only && user.asks(annotations)) => {
                (own, format!("mcpServers.{server}.approve"))
            }
            _ => (user, "settings.approve".into()),
        };
        Policy {
            mode,
            setting,
            without_client: config.settings.approve_without_client,
        }
    }
}

impl Policy {
    /// Stricter where the caller's token or groups ask about more calls of
    /// `entry` (a client's rules add calls to ask about, never remove any).
    pub fn with_client(self, caller: &Caller, entry: &Entry) -> Policy {
        let own = caller
            .policy
            .as_ref()
            .and_then(|p| p.approve_mode(&entry.tool.server, &entry.tool.name));
        match own {
            Some((mode, setting)) if mode > self.mode => Policy {
                mode,
                setting,
                ..self
            },
            _ => self,
        }
    }
}

/// Why a call that needs approval does not run now.
pub(super) enum NotApproved {
    Refused(String),
}

/// Whether the call of `entry` may run: `true` when the user was asked now
/// and allowed it, `false` when nobody needed asking. `guard_asks`: a guard
/// wants the user asked, and why (whatever `approve` says).
pub(super) async fn approve(
    caller: &Caller,
    entry: &Entry,
    arguments: Option<&Map<String, Value>>,
    policy: &Policy,
    guard_asks: Option<String>,
) -> Result<bool, NotApproved> {
    let (mode, setting) = match &guard_asks {
        Some(_) => (ApproveMode::All, "a guard"),
        None => (policy.mode, policy.setting.as_str()),
    };
    // A guard's ask is about this call's arguments: what the user allowed
    // for the tool or the session before does not answer it.
    let allowed = guard_asks.is_none()
        && caller
            .session
            .as_ref()
            .is_some_and(|s| s.allowed.has(entry));
    if !mode.asks(entry.tool.annotations.as_ref()) || allowed {
        return Ok(false);
    }
    let because = match &guard_asks {
        Some(reason) => format!("a guard asks: {reason}"),
        None => format!("{setting} is \"{}\"", mode.name()),
    };
    let name = &entry.name;
    if let Some(why_not) = caller.approver.cannot_ask() {
        if guard_asks.is_some() {
            return Err(NotApproved::Refused(format!(
                "Error: calling {name} needs the user's approval ({because}), and {why_not}. The call did not run: a guard's question is never answered unasked."
            )));
        }
        if policy.without_client {
            return Ok(false);
        }
        return Err(NotApproved::Refused(format!(
            "Error: calling {name} needs the user's approval ({because}), and {why_not}. The call did not run. To run such calls unasked, set settings.approveWithoutClient to \"allow\" in mcpw's user config, or lower {setting}."
        )));
    }
    let question = Question {
        name: name.clone(),
        server: entry.tool.server.clone(),
        tool: entry.tool.name.clone(),
        arguments: arguments.cloned(),
        why: match (&guard_asks, mode) {
            (Some(reason), _) => format!("a guard asks: {reason}"),
            (None, ApproveMode::Destructive) => "it may change or delete data".into(),
            (None, ApproveMode::Writes) => "it does not say that it only reads".into(),
            _ => "every call is approved".into(),
        },
    };
    let answer = caller.approver.ask(&question).await;
    let remember = |set: &dyn Fn(&Allowances)| {
        if let Some(session) = &caller.session {
            set(&session.allowed);
        }
    };
    match answer {
        Ok(Answer::Once) => Ok(true),
        Ok(Answer::Tool) => {
            remember(&|a| a.allow_tool(name));
            Ok(true)
        }
        Ok(Answer::Server) => {
            remember(&|a| a.allow_server(&entry.tool.server));
            Ok(true)
        }
        Ok(Answer::Deny) => Err(NotApproved::Refused(format!(
            "Error: the user denied this call of {name}; it did not run."
        ))),
        Err(e) => Err(NotApproved::Refused(format!(
            "Error: calling {name} needs the user's approval, and asking failed ({e}); it did not run."
        ))),
    }
}

/// A guard asks the user about something other than a call (a read, a
/// client's answers to a task's questions): `call` as the guards saw it
/// (its `params`, and why). Asked every time, never remembered; refused
/// where nobody can be asked.
pub(super) async fn ask_about(
    caller: &Caller,
    call: &crate::plugin::guard::GuardedCall,
    params: Option<Map<String, Value>>,
    reason: &str,
) -> Result<(), NotApproved> {
    let what = format!("{} for {}", call.tool, call.name);
    if let Some(why_not) = caller.approver.cannot_ask() {
        return Err(NotApproved::Refused(format!(
            "Error: {what} needs the user's approval (a guard asks: {reason}), and {why_not}. It did not go on: a guard's question is never answered unasked."
        )));
    }
    let question = Question {
        name: call.name.clone(),
        server: call.server.clone(),
        tool: call.tool.clone(),
        arguments: params,
        why: format!("a guard asks: {reason}"),
    };
    match caller.approver.ask(&question).await {
        Ok(Answer::Deny) => Err(NotApproved::Refused(format!(
            "Error: the user denied {what}; it did not go on."
        ))),
        Ok(_) => Ok(()),
        Err(e) => Err(NotApproved::Refused(format!(
            "Error: {what} needs the user's approval, and asking failed ({e}); it did not go on."
        ))),
    }
}
