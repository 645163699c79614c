//! People signing in to per-person servers through the gateway: a call
//! that found no login of the caller's own gets a link to sign in (by URL
//! elicitation to a client that takes it, as a tool error with the link
//! otherwise), and the authorization server sends the browser back to the
//! callback here, at the public address; any replica finishes the sign-in.

use super::wire::result;
use super::{Gateway, Session};
use crate::host::HostError;
use crate::present::Content;
use crate::servers::ServerError;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Html;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ErrorCode};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use std::sync::Arc;

/// The JSON-RPC error that asks the client to open a URL first (MCP's
/// `URLElicitationRequiredError`).
const URL_ELICITATION_REQUIRED: i32 = -32042;

/// A call that needs the caller to sign in first.
pub(super) struct SignInNeeded {
    server: String,
    link: String,
}

impl SignInNeeded {
    fn message(&self) -> String {
        format!(
            "Server \"{}\" acts for each person with their own login, and you have none there yet. Sign in at {} (the link is yours alone and works once), then call again.",
            self.server, self.link
        )
    }

    /// Whether the client takes URL elicitation.
    fn takes_urls(context: &RequestContext<RoleServer>) -> bool {
        context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.url.is_some())
    }

    /// The request's error: a URL elicitation to a client that declares it
    /// (MCP's `URLElicitationRequiredError`), else an error that gives the
    /// link.
    pub(super) fn error(&self, context: &RequestContext<RoleServer>) -> McpError {
        if !Self::takes_urls(context) {
            let data = json!({"signIn": self.link});
            return McpError::internal_error(self.message(), Some(data));
        }
        let asked = json!({"elicitations": [{
            "mode": "url",
            "elicitationId": super::views::random_id(),
            "url": self.link,
            "message": format!("Sign in to \"{}\" with your own account.", self.server),
        }]});
        McpError::new(
            ErrorCode(URL_ELICITATION_REQUIRED),
            self.message(),
            Some(asked),
        )
    }

    /// The answer to a tool call: a URL elicitation to a client that
    /// declares it, else a tool error that gives the link (with `details`,
    /// when the answer carries some).
    pub(super) fn answer(
        &self,
        context: &RequestContext<RoleServer>,
        details: Option<Value>,
    ) -> Result<CallToolResult, McpError> {
        if Self::takes_urls(context) {
            return Err(self.error(context));
        }
        let details = details.map(|mut d| {
            d["signIn"] = json!(self.link);
            d
        });
        result(&[Content::text(self.message())], details, true)
    }
}

impl Session {
    /// When `failed` is a call refused for want of the caller's own login,
    /// and this gateway serves a callback: the link to sign in.
    pub(super) async fn sign_in_needed(&self, failed: &HostError) -> Option<SignInNeeded> {
        let HostError::Lifecycle(ServerError::PersonNeedsLogin { server, owner }) = failed else {
            return None;
        };
        let callback = self.shared.sign_in.get()?;
        let host = &self.shared.host;
        // Boxed: beginning a sign-in is a large future, and the call
        // paths that wait on this one are deep already.
        match Box::pin(host.sign_in_link(server, owner, callback)).await {
            Ok(Some(link)) => Some(SignInNeeded {
                server: server.clone(),
                link,
            }),
            Ok(None) => None,
            Err(why) => {
                tracing::warn!(server, "no sign-in link could be made: {why}");
                None
            }
        }
    }

    /// Lists, as `client`'s own, the per-person servers it reaches that
    /// nobody could list yet, so that its lists and calls find their tools
    /// (see [`crate::host::Host::list_unlisted_as`]).
    pub(super) async fn list_unlisted_for(
        &self,
        client: &super::ClientScope,
        context: &RequestContext<RoleServer>,
    ) -> crate::host::Unlisted {
        let caller = self.caller(client, crate::host::pipeline::Via::Call, context);
        self.shared.host.list_unlisted_as(&caller).await
    }

    /// For a call of `tool` (on `server`, when it names one) that no listed
    /// tool answers: the link to sign in to the unlisted server it is meant
    /// for, when that server is unlisted for want of the caller's own
    /// login. The server is the one the call names, else the one whose
    /// prefix the tool's name has.
    pub(super) async fn sign_in_to_list(
        &self,
        client: &super::ClientScope,
        (tool, server): (&str, Option<&str>),
        unlisted: &crate::host::Unlisted,
    ) -> Option<SignInNeeded> {
        let owner = client.calls()?.owner.to_string();
        // Named by the call, or by the tool's prefix (`<server>__`, or
        // the short one, without `-mcp`).
        let named = |s: &&String| match server {
            Some(server) => *s == server,
            None => [s.as_str(), s.trim_end_matches("-mcp")]
                .iter()
                .any(|prefix| tool.starts_with(&format!("{prefix}__"))),
        };
        let meant = unlisted.need_login.iter().find(named)?;
        let failed = HostError::Lifecycle(ServerError::PersonNeedsLogin {
            server: meant.clone(),
            owner,
        });
        self.sign_in_needed(&failed).await
    }

    /// `failed` as a request's error: the link to sign in when that is what
    /// it needs, else as `otherwise` tells it.
    pub(super) async fn request_error(
        &self,
        failed: HostError,
        context: &RequestContext<RoleServer>,
        otherwise: impl FnOnce(HostError) -> McpError,
    ) -> McpError {
        match self.sign_in_needed(&failed).await {
            Some(needed) => needed.error(context),
            None => otherwise(failed),
        }
    }
}

/// `router` with the sign-in callback, when the config says where browsers
/// reach it (`serve.publicUrl`, or `serve.oauth.resource`). It carries no
/// token: what it finishes was begun for a principal the gateway admitted,
/// and is found by the state only that sign-in's link holds.
pub(super) fn routes(router: axum::Router, shared: Arc<Gateway>) -> axum::Router {
    let Some(callback) = shared.host.config().serve.sign_in_callback() else {
        return router;
    };
    let _ = shared.sign_in.set(callback);
    router.route(
        crate::config::model::SIGN_IN_CALLBACK,
        axum::routing::get(came_back).with_state(shared),
    )
}

/// The browser back from the authorization server, or from the person's
/// identity provider: on to the server's own page when that was the
/// identity provider saying whose browser it is, with the cookie that
/// binds the rest of the sign-in to this browser. Nothing here is cached,
/// and no address of it goes on as a referrer.
async fn came_back(
    State(shared): State<Arc<Gateway>>,
    uri: Uri,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse;
    let callback = shared.sign_in.get().cloned().unwrap_or_default();
    let redirect = format!("{callback}?{}", uri.query().unwrap_or_default());
    let cookies = headers.get(header::COOKIE).and_then(|c| c.to_str().ok());
    let private = [
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    let (status, said) = match shared.host.finish_sign_in(&redirect, cookies).await {
        Ok(done) => match done.onward {
            Some(onward) => {
                let cookie = binding_cookie(&onward.cookie, callback.starts_with("https://"));
                let on = axum::response::Redirect::to(&onward.address);
                return (private, [(header::SET_COOKIE, cookie)], on).into_response();
            }
            None => (
                StatusCode::OK,
                format!(
                    "You are signed in to {} as {}. You can close this tab and call the tool again.",
                    done.server, done.owner
                ),
            ),
        },
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()),
    };
    let page = Html(crate::host::redirect_page(&said));
    (status, private, page).into_response()
}

/// The `Set-Cookie` of the cookie that binds a sign-in to this browser:
/// for the gateway alone, out of scripts' reach, sent back on the
/// authorization server's redirect (a top-level navigation), for the ten
/// minutes a sign-in may take.
fn binding_cookie((name, value): &(String, String), secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path=/; Max-Age=600; HttpOnly; SameSite=Lax{secure}")
}
