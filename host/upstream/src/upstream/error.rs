//! Why a connection or a call failed, in words an agent or a person can act on.
//! Never carries secrets: messages are built from statuses and server output.

use rmcp::service::{ClientInitializeError, ServiceError};

/// A failure to connect to, or talk with, an upstream server.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectError {
    /// The server process could not be started.
    #[error("cannot start `{command}`: {message}")]
    Spawn {
        /// The program.
        command: String,
        /// Why.
        message: String,
    },
    /// A secret command (`!cmd`) failed.
    #[error("{0}")]
    Secret(String),
    /// The server did not get ready within `startupTimeoutMs`.
    #[error("no answer within {ms} ms (startupTimeoutMs){}{}", with(.note), tail(.stderr))]
    Timeout {
        /// The timeout.
        ms: u64,
        /// What was wrong with the server's output, if anything.
        note: Option<String>,
        /// The server's last stderr output.
        stderr: Option<String>,
    },
    /// A call got no answer within `callTimeoutMs`.
    #[error("no answer within {ms} ms (callTimeoutMs); the call was cancelled{}", with(.note))]
    CallTimeout {
        /// The timeout.
        ms: u64,
        /// What was wrong with the server's output, if anything.
        note: Option<String>,
    },
    /// The server answered 401 or 403.
    #[error("the server requires authentication (HTTP {status}): {hint}")]
    NeedsAuth {
        /// 401 or 403.
        status: u16,
        /// What to set or run.
        hint: String,
        /// The server's `WWW-Authenticate` challenge, when it sent one: where
        /// a login starts (its resource metadata, the scope it wants).
        challenge: Option<String>,
    },
    /// An HTTP-level failure.
    #[error("{0}")]
    Http(String),
    /// The connection broke or the server spoke something else than MCP.
    #[error("{message}{}", tail(.stderr))]
    Protocol {
        /// What happened.
        message: String,
        /// The server's last stderr output.
        stderr: Option<String>,
    },
    /// The server answered the request with a JSON-RPC error.
    #[error("the server answered with an error: {0}")]
    Rpc(String),
}

fn with(note: &Option<String>) -> String {
    note.as_deref()
        .map(|n| format!("; {n}"))
        .unwrap_or_default()
}

fn tail(stderr: &Option<String>) -> String {
    match stderr.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => format!("; server stderr:\n{s}"),
        _ => String::new(),
    }
}

impl From<crate::secrets::SecretError> for ConnectError {
    fn from(e: crate::secrets::SecretError) -> Self {
        ConnectError::Secret(e.0)
    }
}

impl ConnectError {
    /// True when the connection cannot be used any more (it closed, or the server
    /// stopped speaking MCP); a timeout or an error answer leaves it usable.
    pub fn is_fatal(&self) -> bool {
        matches!(self, ConnectError::Protocol { .. })
    }

    /// The same error with every secret in `redact` masked, and Rust type
    /// names (`Transport [rmcp::…<…>]`) that libraries put in their messages removed.
    pub fn redacted(self, redact: &crate::secrets::Redactions) -> Self {
        let clean = |t: String| redact.apply(&without_type_names(&t));
        // The server's own words are only masked, never rewritten.
        let mask = |t: String| redact.apply(&t);
        let clean_opt = |t: Option<String>| t.map(|t| redact.apply(&t));
        match self {
            ConnectError::Spawn { command, message } => ConnectError::Spawn {
                command: redact.apply(&command),
                message: clean(message),
            },
            ConnectError::Secret(m) => ConnectError::Secret(clean(m)),
            ConnectError::Timeout { ms, note, stderr } => ConnectError::Timeout {
                ms,
                note: clean_opt(note),
                stderr: clean_opt(stderr),
            },
            e @ ConnectError::NeedsAuth { .. } => e,
            ConnectError::Http(m) => ConnectError::Http(clean(m)),
            ConnectError::Protocol { message, stderr } => ConnectError::Protocol {
                message: clean(message),
                stderr: clean_opt(stderr),
            },
            ConnectError::Rpc(m) => ConnectError::Rpc(mask(m)),
            ConnectError::CallTimeout { ms, note } => ConnectError::CallTimeout {
                ms,
                note: clean_opt(note),
            },
        }
    }

    /// True for 401/403.
    pub fn is_auth(&self) -> bool {
        matches!(self, ConnectError::NeedsAuth { .. })
    }

    pub(super) fn from_init(
        e: ClientInitializeError,
        stderr: Option<&super::stdio::StderrTail>,
    ) -> Self {
        if let Some(auth) = init_auth_status(&e) {
            return auth;
        }
        // rmcp knows its own transport errors best.
        if e.is_authorization_required() || e.auth_challenge().is_some() {
            let challenge = e.auth_challenge().map(str::to_string);
            let status = match &challenge {
                Some(c) if c.contains("insufficient_scope") => 403,
                _ => 401,
            };
            let mut auth = needs_auth(status);
            if let ConnectError::NeedsAuth { challenge: c, .. } = &mut auth {
                *c = challenge.filter(|c| !c.is_empty());
            }
            return auth;
        }
        let message = match (&e, stderr.and_then(|t| t.stdout_note())) {
            (ClientInitializeError::ConnectionClosed(_), Some(note)) => {
                format!("the connection closed during initialize: {note}")
            }
            (ClientInitializeError::ConnectionClosed(_), None) => {
                "the server closed the connection during initialize".to_string()
            }
            (other, _) => format!("initialize failed: {other}{}", root_cause(other)),
        };
        ConnectError::Protocol {
            message,
            stderr: stderr.map(|t| t.text()),
        }
    }

    pub(super) fn from_service(e: ServiceError, stderr: Option<&super::stdio::StderrTail>) -> Self {
        if let Some(auth) = auth_status(&e) {
            return auth;
        }
        match e {
            ServiceError::McpError(data) => ConnectError::Rpc(data.message.to_string()),
            ServiceError::TransportClosed => ConnectError::Protocol {
                message: match stderr.and_then(|t| t.stdout_note()) {
                    Some(note) => format!("the connection to the server closed: {note}"),
                    None => "the connection to the server closed".into(),
                },
                stderr: stderr.map(|t| t.text()),
            },
            other => ConnectError::Protocol {
                message: other.to_string(),
                stderr: stderr.map(|t| t.text()),
            },
        }
    }
}

/// The innermost cause of an error (`Connection refused`), when its message
/// does not already say it.
pub(super) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let top = e.to_string();
    let mut cur = e.source();
    let mut last = None;
    while let Some(err) = cur {
        last = Some(err.to_string());
        cur = err.source();
    }
    match last {
        Some(root) if !top.contains(&root) => format!(" ({root})"),
        _ => String::new(),
    }
}

/// Drops bracketed Rust type paths (`[rmcp::transport::Worker<…>]`) from a message.
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        let inner = &rest[open + 1..close];
        // A Rust path has letters beyond hex digits; an IPv6 address (`[::1]`) does not.
        let is_path = inner.contains("::")
            && inner
                .chars()
                .any(|c| !(c.is_ascii_hexdigit() || matches!(c, ':' | '.' | '%')));
        if !is_path {
            out.push_str(&rest[open..=close]);
        } else if out.ends_with(' ') && rest[close + 1..].starts_with(' ') {
            out.pop();
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Finds a 401/403 in an `initialize` failure: the transport's error is not
/// the failure's `source`, so it is looked at directly.
fn init_auth_status(e: &ClientInitializeError) -> Option<ConnectError> {
    match e {
        ClientInitializeError::TransportError { error, .. } => auth_status(error),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => init_auth_status(fallback),
        _ => None,
    }
    .or_else(|| auth_status(e))
}

/// Finds a 401/403 anywhere in an error's chain.
fn auth_status(e: &(dyn std::error::Error + 'static)) -> Option<ConnectError> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        use rmcp::transport::streamable_http_client::{
            AuthRequiredError, InsufficientScopeError, StreamableHttpError,
        };
        let challenged = if let Some(e) = err.downcast_ref::<AuthRequiredError>() {
            Some((401, &e.www_authenticate_header))
        } else if let Some(e) = err.downcast_ref::<InsufficientScopeError>() {
            Some((403, &e.www_authenticate_header))
        } else {
            match err.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                Some(StreamableHttpError::AuthRequired(e)) => {
                    Some((401, &e.www_authenticate_header))
                }
                Some(StreamableHttpError::InsufficientScope(e)) => {
                    Some((403, &e.www_authenticate_header))
                }
                _ => None,
            }
        };
        if let Some((status, challenge)) = challenged {
            let mut e = needs_auth(status);
            if let ConnectError::NeedsAuth { challenge: c, .. } = &mut e {
                *c = Some(challenge.clone()).filter(|c| !c.is_empty());
            }
            return Some(e);
        }
        if let Some(status) = err.downcast_ref::<super::http::StatusError>()
            && (status.0 == 401 || status.0 == 403)
        {
            return Some(needs_auth(status.0));
        }
        if text.contains("401 Unauthorized") {
            return Some(needs_auth(401));
        }
        if text.contains("403 Forbidden") {
            return Some(needs_auth(403));
        }
        cur = err.source();
    }
    None
}

pub(super) fn needs_auth(status: u16) -> ConnectError {
    ConnectError::NeedsAuth {
        status,
        hint:
            "set `bearerToken` or `bearerTokenEnv` (or an `Authorization` header) for this server"
                .into(),
        challenge: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_go_and_secrets_are_masked() {
        let r = crate::secrets::Redactions::default();
        r.add_url("http://me:pw-1234@127.0.0.1:9/mcp?api_key=SUPERSECRET&v=1");
        let e = ConnectError::Protocol {
            message: "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>] error: \
                      error sending request for url (http://me:pw-1234@127.0.0.1:9/mcp?api_key=SUPERSECRET&v=1) [retry 2]"
                .into(),
            stderr: Some("key SUPERSECRET rejected".into()),
        }
        .redacted(&r);
        let text = e.to_string();
        assert!(
            !text.contains("SUPERSECRET") && !text.contains("pw-1234"),
            "{text}"
        );
        assert!(!text.contains("rmcp::"), "{text}");
        assert!(
            text.contains("Transport error:") && text.contains("[retry 2]"),
            "{text}"
        );
        assert!(text.contains("api_key=****"), "{text}");
        // Addresses in brackets stay; short everyday values are not masked.
        r.add("info");
        let e = ConnectError::Http("cannot reach http://[::1]:8080/mcp at level info".into())
            .redacted(&r);
        assert_eq!(
            e.to_string(),
            "cannot reach http://[::1]:8080/mcp at level info"
        );
        // The server's own words are masked, never rewritten.
        let e = ConnectError::Rpc("bad [a::b<c>] SUPERSECRET".into()).redacted(&r);
        assert_eq!(
            e.to_string(),
            "the server answered with an error: bad [a::b<c>] ****"
        );
    }
}
