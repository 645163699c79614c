//! The live page of `mcpw serve --http`: `/` serves a page (files built into
//! the binary), which reads `/api/overview`, `/api/calls` and `/api/search`
//! behind the same tokens as `/mcp`. The page's files are open: its login
//! form asks for the token, kept in the tab's session storage. A token
//! limited to some servers sees only those servers, their calls and tools,
//! and its own sessions.

use super::{ClientScope, Gateway};
use crate::catalog::ConnectionState;
use crate::plugin::{Role, SearchOptions};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use std::sync::Arc;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/page.js");
const STYLE: &str = include_str!("page/page.css");

/// The page's files, open to anyone: they hold no data.
pub(super) fn files(router: axum::Router) -> axum::Router {
    router
        .route(
            "/",
            get(|| async { file(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/page.js",
            get(|| async { file(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/page.css",
            get(|| async { file(STYLE, "text/css; charset=utf-8") }),
        )
}

fn file(body: &'static str, kind: &'static str) -> Response {
    file_with(
        body,
        kind,
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    )
}

/// A file of the page (or a view) of type `kind` under `policy`.
pub(super) fn file_with(body: impl IntoResponse, kind: &'static str, policy: &str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    // A new binary's page, never a cached one.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // A policy that cannot be sent is never sent looser: nothing loads.
    let policy = HeaderValue::from_str(policy)
        .unwrap_or(HeaderValue::from_static("default-src 'none'; sandbox"));
    headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    response
}

/// The page's data, for the routes a token guards.
pub(super) fn api(router: axum::Router, shared: Arc<Gateway>) -> axum::Router {
    let (a, b, c) = (shared.clone(), shared.clone(), shared);
    router
        .route(
            "/api/overview",
            get(move |r: Request| overview(a.clone(), r)),
        )
        .route("/api/calls", get(move |r: Request| calls(b.clone(), r)))
        .route("/api/search", get(move |r: Request| search(c.clone(), r)))
}

/// The client a page request comes from (every server without tokens).
pub(super) fn client_of(request: &Request) -> ClientScope {
    request
        .extensions()
        .get::<ClientScope>()
        .cloned()
        .unwrap_or_else(ClientScope::everyone)
}

pub(super) fn answer(value: Value) -> Response {
    let mut response = value.to_string().into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn overview(shared: Arc<Gateway>, request: Request) -> Response {
    let client = client_of(&request);
    let host = &shared.host;
    let servers = host.servers();
    let config = host.config();
    let servers: Vec<Value> = client
        .statuses(host)
        .into_iter()
        .map(|s| {
            let backoff = servers
                .failure(&s.name)
                .map(|(_, left)| left)
                .filter(|&left| left > 0);
            let (state, health) = match s.state {
                ConnectionState::Connected => ("running", "ok"),
                ConnectionState::Cached => ("idle", "ok"),
                ConnectionState::NotConnected => ("stopped", "unknown"),
                ConnectionState::Failed if backoff.is_some() => ("backoff", "failing"),
                ConnectionState::Failed => ("failed", "failing"),
                ConnectionState::NeedsAuth => ("needs-auth", "failing"),
                ConnectionState::Disabled => ("disabled", "unknown"),
            };
            let transport = match servers.transport(&s.name) {
                Some(crate::servers::TransportKind::Stdio) => "stdio",
                Some(crate::servers::TransportKind::StreamableHttp) => "http",
                Some(crate::servers::TransportKind::Sse) => "sse",
                None => config
                    .server(&s.name)
                    .map_or("http", |c| c.config.transport.family()),
            };
            json!({
                "name": s.name, "state": state, "health": health, "transport": transport,
                "tools": s.tool_count, "backoffSeconds": backoff, "lastError": s.last_error,
            })
        })
        .collect();
    let sessions: Vec<Value> = shared
        .sessions_by_client
        .counts()
        .into_iter()
        .filter(|(name, _)| !client.is_limited() || **name == *client.name())
        .map(|(name, n)| {
            let name = if name.is_empty() {
                "(no token)".into()
            } else {
                name
            };
            json!({"client": name, "sessions": n})
        })
        .collect();
    answer(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "servers": servers,
        "sessions": sessions,
        "guests": guests(&shared),
    }))
}

/// The guests loaded, by role, with their sandbox's limits.
fn guests(shared: &Gateway) -> Vec<Value> {
    let host = &shared.host;
    let config = host.config();
    let limits = config.settings.plugins.limits;
    let guest = |role: &str, name: String| {
        json!({"role": role, "name": name, "memoryBytes": limits.memory_bytes,
               "deadlineMs": limits.deadline.as_millis() as u64})
    };
    let mut out: Vec<Value> = [Role::Naming, Role::DirectTools, Role::Ranking]
        .into_iter()
        .map(|role| {
            let name = host
                .policy()
                .user_guest(role)
                .map_or_else(|| "default (built in)".to_string(), str::to_string);
            guest(role.config_key(), name)
        })
        .collect();
    for path in &config.settings.guards {
        let name = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        out.push(guest("guard", name));
    }
    if shared.exposed().runs_scripts() || config.settings.code_mode {
        out.push(guest("script", "JavaScript (built in)".into()));
    }
    out
}

async fn calls(shared: Arc<Gateway>, request: Request) -> Response {
    let client = client_of(&request);
    let hour = shared
        .host
        .recent()
        .hour(crate::clock::now_ms(), |server, tool| {
            client.allows_tool(server, tool)
        });
    answer(serde_json::to_value(hour).unwrap_or(Value::Null))
}

/// `?q=…&limit=…`.
struct SearchQuery {
    q: String,
    limit: Option<u32>,
}

impl SearchQuery {
    fn of(request: &Request) -> SearchQuery {
        let mut query = SearchQuery {
            q: String::new(),
            limit: None,
        };
        let pairs = request.uri().query().unwrap_or("");
        for (key, value) in url::form_urlencoded::parse(pairs.as_bytes()) {
            match &*key {
                "q" => query.q = value.into_owned(),
                "limit" => query.limit = value.parse().ok(),
                _ => {}
            }
        }
        query
    }
}

async fn search(shared: Arc<Gateway>, request: Request) -> Response {
    let client = client_of(&request);
    let query = SearchQuery::of(&request);
    if query.q.trim().is_empty() {
        return answer(json!({"query": query.q, "note": null, "hits": []}));
    }
    let limit = query.limit.unwrap_or(10).clamp(1, 50);
    shared.ready().await;
    let host = &shared.host;
    // A limited client's hits come from its servers only: ask for more, and
    // keep what it sees.
    let options = SearchOptions {
        limit: if client.is_limited() {
            limit * 20
        } else {
            limit
        },
        ..Default::default()
    };
    let hits = match host.explain(&query.q, options).await {
        Ok(hits) => hits,
        Err(e) => return answer(json!({"query": query.q, "note": e.to_string(), "hits": []})),
    };
    let hits: Vec<Value> = hits
        .into_iter()
        .filter(|h| client.sees(&h.entry.tool))
        .take(limit as usize)
        .map(|h| {
            let e = &h.entry;
            json!({"name": e.name, "server": e.tool.server, "tool": e.tool.name,
                   "description": crate::present::truncate_at_word(&e.tool.description, 160),
                   "score": h.score, "words": h.words, "meaning": h.meaning})
        })
        .collect();
    answer(json!({"query": query.q, "note": host.search_note(), "hits": hits}))
}
