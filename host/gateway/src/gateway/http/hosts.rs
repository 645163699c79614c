//! A gateway on loopback without tokens answers only requests made to this
//! machine by one of its own names (`Host`), from a page of this machine
//! when a browser sends one (`Origin`): a web page elsewhere that rebinds a
//! name of its own to 127.0.0.1 reads nothing, not the live page's data
//! (`/api/*`), not `/metrics`. rmcp checks `/mcp` the same way.

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Refuses (403) a request whose `Host` or `Origin` names another machine.
pub(super) async fn this_machine_only(request: Request, next: Next) -> Response {
    if from_this_machine(request.headers()) {
        return next.run(request).await;
    }
    let why = "this gateway answers requests to this machine's own names only (Host, Origin)";
    (StatusCode::FORBIDDEN, why).into_response()
}

/// Whether `Host` (when sent) and `Origin` (when sent) name this machine.
fn from_this_machine(headers: &axum::http::HeaderMap) -> bool {
    let header = |name| headers.get(name).map(|v| v.to_str().unwrap_or("\u{0}"));
    let host_ok = header(header::HOST).is_none_or(is_loopback_authority);
    let origin_ok = header(header::ORIGIN).is_none_or(|o| {
        o.strip_prefix("http://")
            .or_else(|| o.strip_prefix("https://"))
            .is_some_and(is_loopback_authority)
    });
    host_ok && origin_ok
}

/// `localhost`, `127.0.0.1` or `[::1]`, with or without a port.
fn is_loopback_authority(authority: &str) -> bool {
    let name = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().map(|n| format!("[{n}]")),
        None => authority.split(':').next().map(str::to_string),
    };
    matches!(name.as_deref(), Some("localhost" | "127.0.0.1" | "[::1]"))
}

#[cfg(test)]
mod tests {
    use super::is_loopback_authority;

    #[test]
    fn only_this_machines_names_pass() {
        for ok in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:9",
            "[::1]",
        ] {
            assert!(is_loopback_authority(ok), "{ok}");
        }
        for no in [
            "evil.example",
            "evil.example:8080",
            "127.0.0.1.evil.example",
            "localhost.evil:1",
            "[::2]:9",
            "",
        ] {
            assert!(!is_loopback_authority(no), "{no}");
        }
    }
}
