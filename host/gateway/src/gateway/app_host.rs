//! mcpw as a host of MCP Apps for clients that cannot render a view (pi,
//! terminal agents): a call of a tool with a view, made by a client that does
//! not declare the extension, opens a view here, and its result carries the
//! view's address in `_meta["mcpw/view"]` for the client to show its user.
//!
//! The view's page (`/view`) renders the server's HTML in a sandboxed frame
//! (scripts only, an opaque origin: it reaches neither the page nor its
//! token) under the Content-Security-Policy the view declares (see
//! [`crate::apps::csp`]), and speaks the `ui/*` protocol to it through the
//! host side of `@modelcontextprotocol/ext-apps` (built into the binary; its
//! licence is beside it in `app_host/vendor/`). The app's own calls come back
//! through `/api/views/<id>/call`, along the one call path, marked `app`.
//!
//! A view's id is a random capability: its HTML (`/views/<id>`, which a frame
//! loads without a token) is served to whoever holds it; its data and calls
//! need the page's token as `/api/*` does.

mod routes;

use super::{ClientScope, Gateway, Session};
use crate::host::EntryRef;
use rmcp::model::CallToolResult;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Instant;

pub(super) use routes::{api, files};

use super::views::{View, Views};

/// The `_meta` key of a result's view, for a client to show its user.
const VIEW_META_KEY: &str = "mcpw/view";

impl Gateway {
    /// Shows views on the page at `base` from now on.
    pub fn open_views(&self, base: String, token: Option<String>) {
        let _ = self.views.set(Arc::new(Views::new(base, token)));
    }

    /// The tool named `name` on `server` (on any server the client sees
    /// when `None`, where it is the only one of that name), as an app calls
    /// it: by its server's own name, the tools only an app may call included.
    pub(super) async fn app_tool(
        &self,
        client: &ClientScope,
        server: Option<&str>,
        name: &str,
    ) -> Option<EntryRef> {
        let snapshot = self.host.snapshot().await.ok()?;
        let all = snapshot.entries().iter().chain(snapshot.app_only().iter());
        let mut named = all.filter(|e| {
            e.tool.name == name
                && e.tool.kind == crate::catalog::ToolKind::Tool
                && client.sees(&e.tool)
                && server.is_none_or(|s| s == e.tool.server)
        });
        let (Some(only), None) = (named.next(), named.next()) else {
            return None;
        };
        let server = only.tool.server.clone();
        match crate::apps::for_model(only.tool.meta.as_ref()) {
            true => self.resolve_for(client, &only.name).await.ok(),
            false => EntryRef::app_only(snapshot.clone(), &server, name),
        }
    }
}

impl Session {
    /// The arguments to keep for a view of `entry`'s result, when this
    /// session's client gets views from mcpw: one that cannot render them
    /// itself, where a page shows them.
    pub(super) fn view_wanted(
        &self,
        entry: &crate::catalog::Entry,
        args: &Option<Map<String, Value>>,
        context: &RequestContext<RoleServer>,
    ) -> Option<Value> {
        let has_view = entry.tool.meta.as_ref().and_then(crate::apps::view_of);
        let shown = self.shared.views.get().is_some() && !super::wire::takes_apps(context);
        (has_view.is_some() && shown).then(|| json!(args.clone().unwrap_or_default()))
    }

    /// The view a result of `entry` whose `_meta` is `result_meta` is shown
    /// with (see [`crate::apps::shown_view`]).
    pub(super) fn result_view<'a>(
        &self,
        entry: &'a crate::catalog::Entry,
        result_meta: Option<&'a serde_json::Map<String, Value>>,
    ) -> Option<&'a str> {
        let guarded = self.shared.host.guarded();
        crate::apps::shown_view(entry.tool.meta.as_ref(), result_meta, guarded)
    }

    /// `result` for this session's client: without the UI metadata of MCP
    /// Apps unless it declares the extension.
    pub(super) fn ui_for_client(
        &self,
        result: &mut CallToolResult,
        context: &RequestContext<RoleServer>,
    ) {
        if super::wire::takes_apps(context) {
            return;
        }
        if let Some(meta) = result.meta.take() {
            result.meta = crate::apps::without_ui(&meta.0).map(rmcp::model::MetaObject);
        }
    }

    /// Opens a view of `result` (called with `arguments`), unless a guard
    /// withheld it, and names it in `told`'s `_meta`.
    pub(super) fn open_view(
        &self,
        entry: &crate::catalog::Entry,
        arguments: Value,
        result: &CallToolResult,
        context: &RequestContext<RoleServer>,
        told: &mut CallToolResult,
    ) {
        let result_meta = result.meta.as_ref().map(|m| &m.0);
        let (Some(views), Some(uri)) = (
            self.shared.views.get(),
            self.result_view(entry, result_meta),
        ) else {
            return;
        };
        let view = View {
            id: String::new(),
            client: self.client(&context.extensions),
            server: entry.tool.server.clone(),
            tool: entry.tool.name.clone(),
            name: entry.name.clone(),
            uri: uri.to_string(),
            arguments,
            result: serde_json::to_value(result).unwrap_or(Value::Null),
            opened: Instant::now(),
        };
        let url = views.open(view);
        let mut meta = told.meta.take().unwrap_or_default();
        meta.0.insert(VIEW_META_KEY.into(), json!({ "url": url }));
        told.meta = Some(meta);
    }
}
