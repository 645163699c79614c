//! Every way a call runs outside a session takes the one call path: the
//! Rust API's `Host::call`, a script run by `Host::run_script`, a guest's
//! `calls` import, and `mcpw call`. Each is refused by a guard that refuses
//! every call (one that cannot be loaded), is told in the audit trail, and
//! draws from the rate limits (a guest from a bucket of its own).

use crate::common::{ConfigDirs, adversarial_path, host_with_config};
use crate::servers::{MCPW, mcpw_in, servers};
use mcpw::host::HostError;
use mcpw::plugin::SearchOptions;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

struct Setup {
    dirs: ConfigDirs,
    trail: PathBuf,
    methods: PathBuf,
}

/// misbehave.mjs as `s` (its requests written to a file), the adversarial
/// guest ranking with the `calls` grant, an audit trail, and `settings`.
fn setup(settings: Value) -> Setup {
    let dirs = ConfigDirs::new();
    let trail = dirs.root.path().join("audit.jsonl");
    let methods = dirs.root.path().join("methods");
    let mut all = json!({
        "audit": {"path": trail.display().to_string()},
        "plugins": {"ranking": adversarial_path(), "grants": {"ranking": ["catalog", "calls"]},
                    "calls": {"ranking": ["s__echo"]}}
    });
    all.as_object_mut()
        .unwrap()
        .extend(settings.as_object().unwrap().clone());
    let s = json!({"command": "node", "args": [servers().misbehave(), "ok"],
                   "env": {"METHODS_FILE": methods.display().to_string()}});
    dirs.user(&json!({"mcpServers": {"s": s}, "settings": all}).to_string());
    Setup {
        dirs,
        trail,
        methods,
    }
}

/// The audit lines: (via, client, decision, reason or error).
fn trail(path: &Path) -> Vec<(String, String, String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or_default().to_string();
            let why = [s("reason"), s("error")].join(" ");
            (s("via"), s("client"), s("decision"), why)
        })
        .collect()
}

fn calls_reaching(s: &Setup) -> usize {
    let methods = std::fs::read_to_string(&s.methods).unwrap_or_default();
    methods.lines().filter(|m| *m == "tools/call").count()
}

fn echo(message: &str) -> Option<serde_json::Map<String, Value>> {
    json!({"message": message}).as_object().cloned()
}

/// The guest's call of `s`'s echo (through a search it ranks).
async fn guest_calls(host: &mcpw::host::Host) {
    // The guest's error (if any) falls back to the default ranking.
    let _ = host.search("calls:s/echo", SearchOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guard_refuses_every_way_in_and_each_is_audited() {
    let s = setup(json!({"guards": ["no-such-guard.wasm"]}));
    let host = std::sync::Arc::new(host_with_config(&s.dirs, |_| {}).await);
    host.connect("s").await.unwrap();
    let refused = host.call("s__echo", echo("api")).await.unwrap_err();
    assert!(
        matches!(&refused, HostError::Refused(why) if why.contains("no-such-guard.wasm cannot be used")),
        "{refused}"
    );
    let script = "return await tools.s__echo({message: 'script'})";
    let report = host
        .run_script(script, None, Default::default())
        .await
        .unwrap();
    let told = format!("{report:?}");
    assert!(told.contains("no-such-guard.wasm cannot be used"), "{told}");
    guest_calls(&host).await;
    host.shutdown().await;

    let out = mcpw_in(&s.dirs.home())
        .args(["call", "s__echo", r#"{"message": "cli"}"#])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no-such-guard.wasm cannot be used"),
        "{stderr}"
    );

    assert_eq!(calls_reaching(&s), 0, "no call reached the server");
    let lines = trail(&s.trail);
    for (via, client) in [
        ("local", "local"),
        ("script", "local"),
        ("guest", "guest:ranking"),
    ] {
        let line = lines.iter().find(|l| l.0 == via && l.1 == client);
        let line = line.unwrap_or_else(|| panic!("no {via} line: {lines:?}"));
        assert_eq!(line.2, "denied", "{line:?}");
        assert!(line.3.contains("cannot be used"), "{line:?}");
    }
    let local = lines.iter().filter(|l| l.0 == "local").count();
    assert_eq!(local, 2, "Host::call and mcpw call: {lines:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_way_in_draws_from_the_rate_limits_a_guest_from_its_own() {
    let s = setup(json!({"rateLimit": "1/min"}));
    let host = std::sync::Arc::new(host_with_config(&s.dirs, |_| {}).await);
    host.call("s__echo", echo("first")).await.unwrap();
    let limited = host.call("s__echo", echo("second")).await.unwrap_err();
    assert!(
        limited
            .to_string()
            .contains("rate limit reached: settings.rateLimit"),
        "{limited}"
    );
    // A script run from Rust is the same local client: its bucket is empty.
    let report = host
        .run_script(
            "return await tools.s__echo({message: 'script'})",
            None,
            Default::default(),
        )
        .await
        .unwrap();
    let told = format!("{report:?}");
    assert!(told.contains("rate limit reached"), "{told}");
    // A guest's calls are counted apart: its first goes through, its second not.
    guest_calls(&host).await;
    guest_calls(&host).await;
    host.shutdown().await;
    assert_eq!(
        calls_reaching(&s),
        2,
        "the first local call and the guest's first"
    );
    let lines = trail(&s.trail);
    let decisions = |via: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.0 == via)
            .map(|l| l.2.clone())
            .collect()
    };
    assert_eq!(decisions("local"), ["allowed", "denied"], "{lines:?}");
    assert_eq!(decisions("script"), ["denied"], "{lines:?}");
    assert_eq!(decisions("guest"), ["allowed", "denied"], "{lines:?}");
}

/// `mcpw call` run again and again is one client making calls: its rate
/// limits count across runs, as they do in one `serve`.
#[test]
fn a_loop_of_mcpw_call_is_limited_as_one_client_is() {
    let s = setup(json!({"rateLimit": "2/h"}));
    let call = |message: &str| {
        let out = mcpw_in(&s.dirs.home())
            .args(["call", "s__echo", &json!({"message": message}).to_string()])
            .output()
            .unwrap();
        (out.status.success(), crate::servers::said(&out))
    };
    assert!(call("one").0);
    assert!(call("two").0);
    let (ok, said) = call("three");
    assert!(
        !ok && said.contains("rate limit reached: settings.rateLimit"),
        "{said}"
    );
    assert_eq!(calls_reaching(&s), 2, "the third never reached the server");
}

/// A guest granted `calls` reaches only the tools the user lists for its
/// role: none without a list, those its globs match with one.
#[tokio::test(flavor = "multi_thread")]
async fn a_guest_calls_only_the_tools_the_user_lists_for_its_role() {
    for (listed, reaching) in [(json!([]), 0), (json!(["s__e*"]), 1)] {
        let s = setup(json!({}));
        let list = listed.clone();
        s.dirs
            .edit_user(|c| c["settings"]["plugins"]["calls"] = json!({"ranking": list}));
        let host = host_with_config(&s.dirs, |_| {}).await;
        host.connect("s").await.unwrap();
        guest_calls(&host).await;
        host.shutdown().await;
        assert_eq!(calls_reaching(&s), reaching, "{listed}");
    }
}

/// A ranking guest runs for the client whose search it ranks: over HTTP,
/// a token that sees only `t` gets a search whose guest cannot reach `s`
/// (though `settings.plugins.calls` lists `s__echo`), while a token that
/// sees every server gets one whose guest can.
#[tokio::test(flavor = "multi_thread")]
async fn a_guest_ranking_a_clients_search_reaches_only_the_servers_that_client_sees() {
    use crate::servers::Serving;
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let s = setup(json!({}));
    s.dirs.edit_user(|c| {
        c["mcpServers"]["t"] = json!({"command": "node", "args": [servers().misbehave(), "ok"]});
        c["serve"] = json!({"tokens": [
            {"name": "ci", "token": "ci-token-0123456789", "servers": ["t"]},
            {"name": "admin", "token": "admin-token-0123456789"}
        ]});
    });
    let serving = Serving::start(MCPW, &s.dirs.home(), &["--exposure", "proxy"]);
    let search_as = async |token: &str| {
        let config =
            StreamableHttpClientTransportConfig::with_uri(serving.url()).auth_header(token);
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
        let args = json!({"search": "calls:s/echo"});
        let request = rmcp::model::CallToolRequestParams::new("mcp")
            .with_arguments(args.as_object().unwrap().clone());
        client.call_tool(request).await.unwrap();
        client.cancel().await.unwrap();
    };
    search_as("ci-token-0123456789").await;
    assert_eq!(
        calls_reaching(&s),
        0,
        "ci does not see s, nor does its guest"
    );
    search_as("admin-token-0123456789").await;
    assert_eq!(calls_reaching(&s), 1, "admin sees s, and so does its guest");
}
