//! MCP Apps (SEP-1865, the extension `io.modelcontextprotocol/ui`): a tool
//! may come with an interactive view, a `ui://` resource of MIME type
//! `text/html;profile=mcp-app` that a host renders in a sandboxed frame. The
//! tool names it in `_meta.ui.resourceUri` (and, deprecated, in the flat
//! `_meta["ui/resourceUri"]`); `_meta.ui.visibility` says whether the model,
//! the app, or both may call it.
//!
//! What mcpw keeps for a client that declares the extension, and leaves out
//! for one that does not.

use serde_json::{Map, Value};

/// The extension's id in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The scheme of a view's URI.
pub const SCHEME: &str = "ui://";
/// The MIME type of a view.
pub const MIME: &str = "text/html;profile=mcp-app";
/// The flat, deprecated `_meta` key of a tool's view.
const FLAT_KEY: &str = "ui/resourceUri";

/// Whether capabilities (as a JSON object) declare the extension.
pub fn declared(capabilities: &Map<String, Value>) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some()
}

/// The view a tool's `_meta` names, if any.
pub fn view_of(meta: &Value) -> Option<&str> {
    meta.as_object().and_then(view_in)
}

/// The view a `_meta` object names, if any.
fn view_in(meta: &Map<String, Value>) -> Option<&str> {
    meta.get("ui")
        .and_then(|ui| ui.get("resourceUri"))
        .or_else(|| meta.get(FLAT_KEY))
        .and_then(Value::as_str)
}

/// Names `uri` as the view in a result's `_meta`, unless it names one.
pub fn name_view(meta: &mut Map<String, Value>, uri: &str) {
    if view_in(meta).is_none() {
        let ui = meta
            .entry("ui")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(ui) = ui.as_object_mut() {
            ui.insert("resourceUri".into(), Value::String(uri.to_string()));
        }
    }
}

/// The view a result is shown with: the one it names; else, where no guard
/// decided on it, its tool's. Guards see a result with its tool's view named
/// on it: one that keeps the result keeps the view, one that replaces it
/// gives the view only if its replacement names it.
pub fn shown_view<'a>(
    tool_meta: Option<&'a Value>,
    result_meta: Option<&'a Map<String, Value>>,
    guarded: bool,
) -> Option<&'a str> {
    let named = result_meta.and_then(view_in);
    match guarded {
        true => named,
        false => named.or_else(|| tool_meta.and_then(view_of)),
    }
}

/// Whether the model may see and call the tool: unless its
/// `_meta.ui.visibility` leaves the model out (an app-only tool).
pub fn for_model(meta: Option<&Value>) -> bool {
    let visibility = meta
        .and_then(|m| m.pointer("/ui/visibility"))
        .and_then(Value::as_array);
    visibility.is_none_or(|v| v.iter().any(|s| s == "model"))
}

/// `meta` for a client that does not declare the extension: without what
/// only a host of apps uses. `None` when nothing else is left.
pub fn without_ui(meta: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut kept = meta.clone();
    kept.remove("ui");
    kept.remove(FLAT_KEY);
    (!kept.is_empty()).then_some(kept)
}

/// Whether `meta` holds anything only a host of apps uses.
pub fn has_ui(meta: &Map<String, Value>) -> bool {
    meta.contains_key("ui") || meta.contains_key(FLAT_KEY)
}

/// Gives the URIs a result names (its view in `_meta`, resource links,
/// embedded resources) as `expose` maps them: the forms a client reads them
/// back by.
pub fn expose_result(result: &mut Value, expose: impl Fn(&str) -> String) {
    let mut map = |v: &mut Value| {
        if let Some(uri) = v.as_str() {
            *v = Value::String(expose(uri));
        }
    };
    if let Some(meta) = result.get_mut("_meta") {
        if let Some(view) = meta.pointer_mut("/ui/resourceUri") {
            map(view);
        }
        if let Some(view) = meta.get_mut(FLAT_KEY) {
            map(view);
        }
    }
    let blocks = result.get_mut("content").and_then(Value::as_array_mut);
    for block in blocks.into_iter().flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("resource_link") => block.get_mut("uri").into_iter().for_each(&mut map),
            Some("resource") => block
                .pointer_mut("/resource/uri")
                .into_iter()
                .for_each(&mut map),
            _ => {}
        }
    }
}

/// A tool's `_meta` with its view named as `expose` maps it.
pub fn expose_meta(meta: &mut Map<String, Value>, expose: impl Fn(&str) -> String) {
    let mut wrapped = Value::Object(std::mem::take(meta));
    if let Some(view) = wrapped.pointer_mut("/ui/resourceUri")
        && let Some(uri) = view.as_str()
    {
        *view = Value::String(expose(uri));
    }
    if let Some(view) = wrapped.get_mut(FLAT_KEY)
        && let Some(uri) = view.as_str()
    {
        *view = Value::String(expose(uri));
    }
    if let Value::Object(m) = wrapped {
        *meta = m;
    }
}

/// The Content-Security-Policy a view is rendered under: what its
/// `_meta.ui.csp` declares (`connectDomains`, `resourceDomains`,
/// `frameDomains`, `baseUriDomains`), nothing more. Without a declaration the
/// view reaches nothing beyond its own inline scripts and styles and `data:`
/// images. Only origins pass (`https://host`, `wss://*.host:443`): a value
/// that could widen the policy (`*`, `'unsafe-eval'`, `;`) is dropped.
pub fn csp(ui: Option<&Value>) -> String {
    let domains = |key: &str| -> Vec<&str> {
        let listed = ui.and_then(|u| u.pointer(&format!("/csp/{key}")));
        let listed = listed.and_then(Value::as_array).into_iter().flatten();
        listed
            .filter_map(Value::as_str)
            .filter(|d| is_origin(d))
            .collect()
    };
    let with = |base: &str, extra: &[&str]| -> String {
        std::iter::once(base)
            .chain(extra.iter().copied())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let or_none = |extra: &[&str]| match extra.is_empty() {
        true => "'none'".to_string(),
        false => extra.join(" "),
    };
    let resources = domains("resourceDomains");
    let connect = domains("connectDomains");
    [
        "default-src 'none'".to_string(),
        format!("script-src {}", with("'self' 'unsafe-inline'", &resources)),
        format!("style-src {}", with("'self' 'unsafe-inline'", &resources)),
        format!("img-src {}", with("'self' data: blob:", &resources)),
        format!("font-src {}", with("'self' data:", &resources)),
        format!("media-src {}", with("'self' data: blob:", &resources)),
        format!("connect-src {}", or_none(&connect)),
        format!("frame-src {}", or_none(&domains("frameDomains"))),
        format!("base-uri {}", with("'self'", &domains("baseUriDomains"))),
        "object-src 'none'".to_string(),
        "form-action 'none'".to_string(),
    ]
    .join("; ")
}

/// Whether `source` is an origin a policy may name: a scheme, a host
/// (perhaps `*.` before it) and perhaps a port, nothing that ends the
/// directive or stands for every host.
fn is_origin(source: &str) -> bool {
    let Some((scheme, rest)) = source.split_once("://") else {
        return false;
    };
    let host = rest.trim_end_matches('/');
    let host = host.strip_prefix("*.").unwrap_or(host);
    let scheme_ok = matches!(scheme, "https" | "http" | "wss" | "ws");
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    scheme_ok && host_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_view_is_named_either_way_and_visibility_decides_the_model() {
        let meta = json!({"ui": {"resourceUri": "ui://clock/app.html"}});
        assert_eq!(view_of(&meta), Some("ui://clock/app.html"));
        let flat = json!({"ui/resourceUri": "ui://clock/app.html"});
        assert_eq!(view_of(&flat), Some("ui://clock/app.html"));
        assert!(for_model(Some(&meta)) && for_model(None));
        let app_only = json!({"ui": {"resourceUri": "ui://x", "visibility": ["app"]}});
        assert!(!for_model(Some(&app_only)));
        let both = json!({"ui": {"visibility": ["model", "app"]}});
        assert!(for_model(Some(&both)));
        let object = |v: Value| v.as_object().cloned().unwrap();
        assert!(declared(&object(json!({"extensions": {EXTENSION: {}}}))));
        assert!(!declared(&object(json!({"extensions": {}}))));
    }

    #[test]
    fn a_results_uris_are_given_as_the_client_reads_them() {
        let mut result = json!({
            "_meta": {"ui": {"resourceUri": "ui://a/app.html"}, "ui/resourceUri": "ui://a/app.html"},
            "content": [
                {"type": "text", "text": "ui://a/app.html"},
                {"type": "resource_link", "uri": "x://shared", "name": "x"},
                {"type": "resource", "resource": {"uri": "x://shared", "text": "t"}},
            ],
        });
        expose_result(&mut result, |u| format!("mapped:{u}"));
        assert_eq!(
            result["_meta"]["ui"]["resourceUri"],
            "mapped:ui://a/app.html"
        );
        assert_eq!(result["_meta"]["ui/resourceUri"], "mapped:ui://a/app.html");
        assert_eq!(
            result["content"][0]["text"], "ui://a/app.html",
            "text is the server's"
        );
        assert_eq!(result["content"][1]["uri"], "mapped:x://shared");
        assert_eq!(result["content"][2]["resource"]["uri"], "mapped:x://shared");
        let mut meta = json!({"ui": {"resourceUri": "ui://a"}, "other": 1});
        let meta = meta.as_object_mut().unwrap();
        expose_meta(meta, |u| format!("m:{u}"));
        assert_eq!(
            Value::Object(meta.clone()),
            json!({"ui": {"resourceUri": "m:ui://a"}, "other": 1})
        );
    }

    #[test]
    fn a_client_without_the_extension_keeps_the_rest_of_the_meta() {
        let meta = json!({"ui": {"resourceUri": "ui://a"}, "ui/resourceUri": "ui://a", "other": 1});
        let meta = meta.as_object().unwrap();
        assert!(has_ui(meta));
        assert_eq!(
            Value::Object(without_ui(meta).unwrap()),
            json!({"other": 1})
        );
        let only_ui = json!({"ui": {"resourceUri": "ui://a"}});
        assert_eq!(without_ui(only_ui.as_object().unwrap()), None);
    }

    #[test]
    fn a_view_gets_the_policy_it_declares_and_nothing_wider() {
        let none = csp(None);
        assert!(none.contains("connect-src 'none'") && none.contains("frame-src 'none'"));
        assert!(none.starts_with("default-src 'none'"));
        let ui = json!({"csp": {
            "connectDomains": ["https://api.example.com", "*", "'unsafe-eval'"],
            "resourceDomains": ["https://*.cdn.example.com", "https://x; script-src *"],
            "frameDomains": ["https://maps.example.com:8443"],
        }});
        let declared = csp(Some(&ui));
        assert!(
            declared.contains("connect-src https://api.example.com;"),
            "{declared}"
        );
        assert!(declared.contains("script-src 'self' 'unsafe-inline' https://*.cdn.example.com;"));
        assert!(declared.contains("frame-src https://maps.example.com:8443;"));
        assert!(
            !declared.contains("unsafe-eval") && !declared.contains(" *"),
            "{declared}"
        );
        assert_eq!(declared.matches("script-src").count(), 1);
    }

    #[test]
    fn a_guard_that_replaces_a_result_decides_its_view() {
        let tool = json!({"ui": {"resourceUri": "ui://clock/app.html"}});
        let mut kept = Map::new();
        name_view(&mut kept, "ui://clock/app.html");
        assert_eq!(
            shown_view(Some(&tool), Some(&kept), true),
            Some("ui://clock/app.html")
        );
        let replaced = Map::new();
        assert_eq!(shown_view(Some(&tool), Some(&replaced), true), None);
        assert_eq!(shown_view(Some(&tool), None, true), None);
        assert_eq!(
            shown_view(Some(&tool), None, false),
            Some("ui://clock/app.html")
        );
        let mut other = json!({"ui": {"resourceUri": "ui://other"}})
            .as_object()
            .cloned()
            .unwrap();
        name_view(&mut other, "ui://clock/app.html");
        assert_eq!(
            other["ui"]["resourceUri"], "ui://other",
            "a view named stays"
        );
    }
}
