//! The view's page, its files and its data over HTTP.

use crate::gateway::views::View;
use crate::gateway::{ClientScope, Gateway, page};
use crate::host::pipeline::{Caller, Ran, Unattended, Via};
use crate::host::{CallOptions, RawResult};
use axum::extract::{Path, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use std::sync::Arc;

const PAGE: &str = include_str!("view.html");
const SCRIPT: &str = include_str!("view.js");
/// `@modelcontextprotocol/ext-apps`' host side, bundled (see `vendor/`).
const BRIDGE: &str = include_str!("vendor/ext-apps-bridge.js");
/// The page around a view: its own scripts, and frames of its own origin.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/// A call's body is JSON arguments, never a file.
const MAX_CALL_BYTES: usize = 1 << 20;

/// The page's files, open as the live page's are, and the views' HTML,
/// open to whoever holds a view's id.
pub(in crate::gateway) fn files(router: axum::Router, shared: Arc<Gateway>) -> axum::Router {
    let script = "text/javascript; charset=utf-8";
    router
        .route(
            "/view",
            get(|| async { page::file_with(PAGE, "text/html; charset=utf-8", PAGE_POLICY) }),
        )
        .route(
            "/view.js",
            get(move || async move { page::file_with(SCRIPT, script, PAGE_POLICY) }),
        )
        .route(
            "/ext-apps-bridge.js",
            get(move || async move { page::file_with(BRIDGE, script, PAGE_POLICY) }),
        )
        .route(
            "/views/{id}",
            get(move |Path(id): Path<String>| html(shared.clone(), id)),
        )
}

/// The views' data and the apps' calls, behind the page's token.
pub(in crate::gateway) fn api(router: axum::Router, shared: Arc<Gateway>) -> axum::Router {
    let calls = shared.clone();
    router
        .route(
            "/api/views/{id}",
            get(move |Path(id): Path<String>, r: Request| data(shared.clone(), id, r)),
        )
        .route(
            "/api/views/{id}/call",
            post(move |Path(id): Path<String>, r: Request| call(calls.clone(), id, r)),
        )
}

/// The open view `id`, if the request's client sees its server.
fn view_for(shared: &Gateway, id: &str, client: Option<&ClientScope>) -> Option<Arc<View>> {
    let view = shared.views.get()?.get(id)?;
    client
        .is_none_or(|c| c.allows(&view.server))
        .then_some(view)
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        "no such view: it was never opened, or it closed",
    )
        .into_response()
}

/// What the page needs to run a view: the tool, its input and its result.
async fn data(shared: Arc<Gateway>, id: String, request: Request) -> Response {
    let client = page::client_of(&request);
    let Some(view) = view_for(&shared, &id, Some(&client)) else {
        return not_found();
    };
    page::answer(json!({
        "server": view.server,
        "tool": view.tool,
        "name": view.name,
        "uri": view.uri,
        "arguments": view.arguments,
        "result": view.result,
    }))
}

/// The view's HTML, read from its server, under the policy it declares.
async fn html(shared: Arc<Gateway>, id: String) -> Response {
    let Some(view) = view_for(&shared, &id, None) else {
        return not_found();
    };
    let route = crate::host::resources::Route {
        server: view.server.clone(),
        uri: view.uri.clone(),
        mapped: false,
        skill: false,
    };
    let caller = app_caller(&view.client);
    let read = shared
        .host
        .read_routed_as(&caller, &route, CallOptions::default())
        .await;
    let content = match read {
        Ok(read) => read["contents"].get(0).cloned().unwrap_or(Value::Null),
        Err(e) => {
            return (
                StatusCode::BAD_GATEWAY,
                format!("the view could not be read: {e}"),
            )
                .into_response();
        }
    };
    let Some(body) = html_of(&content) else {
        let why = format!("{} holds no HTML of type {}", view.uri, crate::apps::MIME);
        return (StatusCode::BAD_GATEWAY, why).into_response();
    };
    let policy = view_policy(content.pointer("/_meta/ui"));
    page::file_with(body, "text/html; charset=utf-8", &policy)
}

/// The policy a view's frame gets: what it declares, framed only by this
/// page, and sandboxed even when opened on its own.
fn view_policy(ui: Option<&Value>) -> String {
    format!(
        "{}; frame-ancestors 'self'; sandbox allow-scripts allow-forms",
        crate::apps::csp(ui)
    )
}

/// A view's HTML: its text, or its blob decoded, when it is an app's.
fn html_of(content: &Value) -> Option<String> {
    use base64::Engine;
    let mime = content["mimeType"].as_str()?;
    if !mime.starts_with("text/html") {
        return None;
    }
    match (content["text"].as_str(), content["blob"].as_str()) {
        (Some(text), _) => Some(text.to_string()),
        (None, Some(blob)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        _ => None,
    }
}

/// Who an app's call is made for: the client whose call opened the view,
/// with nobody to ask (`settings.approveWithoutClient` decides).
fn app_caller(client: &ClientScope) -> Caller {
    Caller {
        client: client.name().into(),
        reach: client.reach(),
        session: None,
        via: Via::App,
        approver: Arc::new(Unattended),
        policy: client.calls(),
    }
}

/// An app's `tools/call`, by its server's own tool name, on its server only.
async fn call(shared: Arc<Gateway>, id: String, request: Request) -> Response {
    let client = page::client_of(&request);
    let Some(view) = view_for(&shared, &id, Some(&client)) else {
        return not_found();
    };
    let body = match axum::body::to_bytes(request.into_body(), MAX_CALL_BYTES).await {
        Ok(body) => body,
        Err(e) => return (StatusCode::PAYLOAD_TOO_LARGE, e.to_string()).into_response(),
    };
    let Ok(asked) = serde_json::from_slice::<Value>(&body) else {
        return (
            StatusCode::BAD_REQUEST,
            "a call is {\"name\", \"arguments\"}",
        )
            .into_response();
    };
    let name = asked["name"].as_str().unwrap_or_default();
    let arguments = asked["arguments"].as_object().cloned();
    let result = run(&shared, &view, name, arguments).await;
    page::answer(result)
}

/// Runs the app's call and gives its result as a `tools/call` result.
async fn run(
    shared: &Gateway,
    view: &View,
    name: &str,
    arguments: Option<Map<String, Value>>,
) -> Value {
    let failed =
        |text: String| json!({"content": [{"type": "text", "text": text}], "isError": true});
    let Some(entry) = shared
        .app_tool(&view.client, Some(&view.server), name)
        .await
    else {
        return failed(format!("{} has no tool named {name}", view.server));
    };
    let caller = app_caller(&view.client);
    let ran = shared
        .host
        .run_call(&caller, &entry, arguments, CallOptions::default())
        .await;
    match ran {
        Ran::Done(Ok(RawResult::Tool(r))) => serde_json::to_value(r).unwrap_or(Value::Null),
        Ran::Done(Ok(raw)) => {
            let out = crate::host::present_result(&entry, raw);
            let content = serde_json::to_value(&out.content).unwrap_or(Value::Null);
            json!({"content": content, "structuredContent": out.structured_content, "isError": out.is_error})
        }
        Ran::Done(Err(e)) => failed(format!("Error: {e}")),
        Ran::Refused(why) => failed(why),
        Ran::Withheld(why) => failed(format!("Error: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_is_html_of_an_app_as_text_or_blob_and_nothing_else() {
        let text = json!({"uri": "ui://a", "mimeType": crate::apps::MIME, "text": "<p>hi</p>"});
        assert_eq!(html_of(&text).as_deref(), Some("<p>hi</p>"));
        let blob = json!({"uri": "ui://a", "mimeType": crate::apps::MIME, "blob": "PHA+aGk8L3A+"});
        assert_eq!(html_of(&blob).as_deref(), Some("<p>hi</p>"));
        let data = json!({"uri": "ui://a", "mimeType": "application/json", "text": "{}"});
        assert_eq!(html_of(&data), None);
    }

    #[test]
    fn a_frame_is_sandboxed_and_framed_by_the_page_only() {
        let policy = view_policy(None);
        assert!(policy.starts_with(&crate::apps::csp(None)));
        assert!(policy.ends_with("frame-ancestors 'self'; sandbox allow-scripts allow-forms"));
    }
}
