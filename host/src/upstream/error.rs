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
    #[error("no answer within {ms} ms (startupTimeoutMs){}", tail(.stderr))]
    Timeout {
        /// The timeout.
        ms: u64,
        /// The server's last stderr output.
        stderr: Option<String>,
    },
    /// A call got no answer within `callTimeoutMs`.
    #[error("no answer within {ms} ms (callTimeoutMs); the call was cancelled")]
    CallTimeout {
        /// The timeout.
        ms: u64,
    },
    /// The server answered 401 or 403.
    #[error("the server requires authentication (HTTP {status}): {hint}")]
    NeedsAuth {
        /// 401 or 403.
        status: u16,
        /// What to set.
        hint: String,
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

fn tail(stderr: &Option<String>) -> String {
    match stderr.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => format!("; server stderr:\n{s}"),
        _ => String::new(),
    }
}

impl ConnectError {
    /// True when the connection cannot be used any more (it closed, or the server
    /// stopped speaking MCP); a timeout or an error answer leaves it usable.
    pub fn is_fatal(&self) -> bool {
        matches!(self, ConnectError::Protocol { .. })
    }

    /// True for 401/403.
    pub fn is_auth(&self) -> bool {
        matches!(self, ConnectError::NeedsAuth { .. })
    }

    pub(super) fn from_init(
        e: ClientInitializeError,
        stderr: Option<&super::stdio::StderrTail>,
    ) -> Self {
        if let Some(auth) = auth_status(&e) {
            return auth;
        }
        let message = match &e {
            ClientInitializeError::ConnectionClosed(_) => {
                "the server closed the connection during initialize".to_string()
            }
            other => format!("initialize failed: {other}"),
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
                message: "the connection to the server closed".into(),
                stderr: stderr.map(|t| t.text()),
            },
            other => ConnectError::Protocol {
                message: other.to_string(),
                stderr: stderr.map(|t| t.text()),
            },
        }
    }
}

/// Finds a 401/403 anywhere in an error's chain.
fn auth_status(e: &(dyn std::error::Error + 'static)) -> Option<ConnectError> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        if let Some(s) = err.downcast_ref::<rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>>() {
            use rmcp::transport::streamable_http_client::StreamableHttpError as E;
            match s {
                E::AuthRequired(_) => return Some(needs_auth(401)),
                E::InsufficientScope(_) => return Some(needs_auth(403)),
                _ => {}
            }
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
    }
}
