//! mcpw as the host of MCP Apps for an agent that renders none (pi, a
//! terminal client): `mcpw serve --page` beside a stdio session, the
//! TypeScript SDK client calling a real app server's tool through the proxy
//! tool without declaring the extension, and the view opened in headless
//! Chromium (Debian's package, installed when missing): the app
//! (`server-basic-vanillajs`' clock) initializes through the bridge, shows
//! the call's result, and a click makes it call its server through mcpw. The
//! test keeps a screenshot in `target/tmp/app-view.png`.

use super::serve::{client_plan, text};
use crate::common::ConfigDirs;
use crate::servers::{MCPW, debian, servers};
use serde_json::{Value, json};

/// Prints the HTTP status of the view's data (`/api/views/<id>`) for the
/// view address given, with the address' token or without.
const DATA_STATUS: &str = "const u = new URL(process.argv[1]); const f = new URLSearchParams(u.hash.slice(1)); \
    const headers = process.argv[2] === 'token' ? { Authorization: 'Bearer ' + f.get('token') } : {}; \
    fetch(u.origin + '/api/views/' + f.get('view'), { headers }).then((r) => console.log(r.status))";

fn run(args: &[&str]) -> Value {
    json!({"op": "run", "command": "node", "args": args})
}

#[test]
fn a_terminal_agents_call_opens_a_view_that_renders_and_calls_back_through_mcpw() {
    debian(&["chromium"], &["chromium"], "the view page's test");
    let dirs = ConfigDirs::new();
    let audit = dirs.root.path().join("audit.jsonl");
    let clock = json!({"command": "node", "args": [servers().basic_app(), "--stdio"]});
    let settings = json!({"audit": {"path": audit.display().to_string()}});
    dirs.user(&json!({"mcpServers": {"clock": clock}, "settings": settings}).to_string());
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("app-view.png");
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().unwrap();
    let check = json!({"url": "$view:0", "profile": profile.path().display().to_string(),
        "screenshot": shot.display().to_string(), "read": "#server-time", "click": "#get-time-btn"})
    .to_string();
    let app_check = servers().app_check();
    let steps = json!([
        {"op": "callTool", "name": "mcp", "arguments": {"tool": "clock__get-time"}},
        run(&["--experimental-websocket", &app_check, &check]),
        run(&["-e", DATA_STATUS, "$view:0", "token"]),
        run(&["-e", DATA_STATUS, "$view:0", "none"]),
    ]);
    let env = crate::common::client_env(&dirs.home());
    let connect = json!({"command": env!("CARGO_BIN_EXE_mcpw"),
                         "args": ["serve", "--exposure", "proxy", "--page"], "env": env});
    let got = client_plan(json!({"connect": connect, "steps": steps})).unwrap();
    let called = &got[0];
    let url = called["_meta"]["mcpw/view"]["url"]
        .as_str()
        .unwrap_or_default();
    assert!(
        url.starts_with("http://127.0.0.1:")
            && url.contains("/view#view=")
            && url.contains("&token="),
        "{called:#}"
    );
    let ran = &got[1];
    assert_eq!(ran["status"], 0, "{ran:#}");
    let seen: Value = serde_json::from_str(ran["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(
        seen["errors"],
        json!([]),
        "no script error in the page: {seen:#}"
    );
    // The view got the call's result through the bridge and shows it.
    let shown = seen["shown"].as_str().unwrap();
    assert!(text(called).contains(shown), "{shown} in {called:#}");
    // Its button made it call get-time on its server, through mcpw.
    let after = seen["afterClick"].as_str().unwrap();
    assert!(after != shown && after.starts_with("20"), "{seen:#}");
    // The frame: sandboxed, no origin of its own, under the policy the view
    // declares (none: nothing beyond its own inline code and data: images).
    assert_eq!(seen["sandbox"], "allow-scripts allow-forms");
    assert_eq!(seen["frameOrigin"], "null");
    assert_eq!(seen["frameReachesToken"], false);
    assert_eq!(
        seen["csp"],
        "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data: blob:; font-src 'self' data:; media-src 'self' data: blob:; \
         connect-src 'none'; frame-src 'none'; base-uri 'self'; object-src 'none'; \
         form-action 'none'; frame-ancestors 'self'; sandbox allow-scripts allow-forms"
    );
    // The token left the address once the tab had it.
    assert!(
        !seen["address"].as_str().unwrap().contains("token="),
        "{seen:#}"
    );
    // The view's data needs the page's token.
    assert_eq!(
        got[2]["stdout"].as_str().map(str::trim),
        Some("200"),
        "{:#}",
        got[2]
    );
    assert_eq!(
        got[3]["stdout"].as_str().map(str::trim),
        Some("401"),
        "{:#}",
        got[3]
    );
    // The audit trail tells the agent's call from the app's.
    let lines = std::fs::read_to_string(&audit).unwrap();
    let ways: Vec<String> = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["tool"] == "get-time")
        .map(|l| l["via"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ways, ["proxy", "app"], "{lines}");
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        png.len()
    );
}

/// A guard sees a result with its tool's view named on it: keeping the
/// result keeps the view, a replacement without it withholds the view, from
/// a host (proxy exposure) and from mcpw's own page alike.
#[test]
fn a_guard_that_replaces_a_result_withholds_its_view() {
    let dirs = ConfigDirs::new();
    let clock = json!({"command": "node", "args": [servers().basic_app(), "--stdio"]});
    let settings = json!({"guards": [super::guards::hostile()]});
    dirs.user(&json!({"mcpServers": {"clock": clock}, "settings": settings}).to_string());
    let serving = crate::servers::Serving::start(MCPW, &dirs.home(), &["--exposure", "proxy"]);
    let call = |message: &str| {
        json!({"op": "callTool", "name": "mcp",
               "arguments": {"tool": "clock__get-time", "args": {"message": message}}})
    };
    let steps = json!([call("keep"), call("after-replace")]);
    let host = json!({"extensions": {"io.modelcontextprotocol/ui": {}}});
    let hosted = client_plan(json!({"connect": {"url": serving.url()},
        "capabilities": host, "steps": steps}))
    .unwrap();
    let plain = client_plan(json!({"connect": {"url": serving.url()}, "steps": steps})).unwrap();
    let (kept, replaced) = (&hosted[0], &hosted[1]);
    assert_eq!(
        kept["_meta"]["ui"]["resourceUri"], "ui://get-time/mcp-app.html",
        "{kept:#}"
    );
    assert_eq!(text(replaced), "replaced", "{replaced:#}");
    assert!(replaced["_meta"].get("ui").is_none(), "{replaced:#}");
    let (kept, replaced) = (&plain[0], &plain[1]);
    assert!(kept["_meta"]["mcpw/view"]["url"].is_string(), "{kept:#}");
    assert!(
        kept["_meta"].get("ui").is_none(),
        "no UI metadata for a client without the extension: {kept:#}"
    );
    assert!(replaced["_meta"].get("mcpw/view").is_none(), "{replaced:#}");
}
