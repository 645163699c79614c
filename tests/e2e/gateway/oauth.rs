//! Logging in to an OAuth-protected MCP server of our own
//! (`tests/servers/oauth-server.mjs`: the official SDK's authorization server
//! and bearer check), with the file credential store and a "browser" that
//! follows the redirects (`tests/conformance/browser.sh`).

use crate::common::ConfigDirs;
use crate::servers::{Background, MCPW, Serving, mcpw_in, servers};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Our OAuth server (access tokens live `ttl` seconds) and a config for it.
struct Setup {
    _server: Background,
    dirs: ConfigDirs,
    events: PathBuf,
}

fn setup(ttl: u64) -> Setup {
    let dirs = ConfigDirs::new();
    let events = dirs.root.path().join("events");
    let server = Background::node(
        &[&servers().oauth_server()],
        &[
            ("EVENTS_FILE", &events.display().to_string()),
            ("ACCESS_TTL_S", &ttl.to_string()),
        ],
    );
    dirs.user(
        &json!({"mcpServers": {"o": {"url": server.url("/mcp")}},
                "settings": {"credentialStore": "file"}})
        .to_string(),
    );
    Setup {
        _server: server,
        dirs,
        events,
    }
}

impl Setup {
    /// `mcpw args...`, stdin closed; with a browser or with none at all.
    fn mcpw(&self, args: &[&str], browser: bool) -> Output {
        self.command(args, browser).output().unwrap()
    }

    fn command(&self, args: &[&str], browser: bool) -> Command {
        // Without `browser`, BROWSER stays unset: no browser at all.
        let mut cmd = mcpw_in(&self.dirs.home());
        cmd.args(args).stdin(Stdio::null());
        if browser {
            let script = crate::common::workspace().join("tests/conformance/browser.sh");
            cmd.env("BROWSER", script);
        }
        cmd
    }

    fn credentials(&self) -> PathBuf {
        self.dirs.home().join(".config/mcpw/credentials")
    }

    fn events(&self) -> String {
        std::fs::read_to_string(&self.events).unwrap_or_default()
    }
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn a_login_lets_calls_through_and_a_logout_ends_it() {
    let s = setup(3600);
    // No login and no browser: the exact command to run.
    let out = s.mcpw(&["call", "o__whoami", "{}"], false);
    let (_, err) = text(&out);
    assert!(!out.status.success());
    assert!(err.contains("log in with `mcpw auth login o`"), "{err}");

    let out = s.mcpw(&["auth", "login", "o"], true);
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Logged in to \"o\""), "{err}");
    // A 0600 file in a 0700 directory.
    let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(s.credentials()), 0o700);
    assert_eq!(mode(s.credentials().join("credentials.json")), 0o600);

    let out = s.mcpw(&["call", "o__whoami", "{}"], false);
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(stdout.starts_with("client "), "{stdout}");

    let out = s.mcpw(&["auth", "status", "--json"], false);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["o"]["loggedIn"], true, "{status}");
    assert_eq!(status["o"]["refreshable"], true, "{status}");
    assert_eq!(status["o"]["scopes"], json!(["mcp:tools"]), "{status}");

    // The token is never shown.
    let stored = std::fs::read_to_string(s.credentials().join("credentials.json")).unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    let record = stored.as_object().unwrap().values().next().unwrap();
    let token = record["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    for args in [
        &["auth", "status", "--json"][..],
        &["status"],
        &["config", "show", "--json"],
        &["call", "o__whoami", "{}", "--json"],
    ] {
        let (stdout, err) = text(&s.mcpw(args, false));
        assert!(
            !stdout.contains(&token) && !err.contains(&token),
            "{args:?} shows the token"
        );
    }

    let out = s.mcpw(&["auth", "logout", "o"], false);
    assert!(out.status.success());
    let out = s.mcpw(&["auth", "status", "--json"], false);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["o"]["loggedIn"], false, "{status}");
    assert!(!s.mcpw(&["call", "o__whoami", "{}"], false).status.success());
}

#[test]
fn a_call_that_meets_a_login_request_logs_in_when_a_browser_can_open() {
    let s = setup(3600);
    let out = s.mcpw(&["call", "o__whoami", "{}"], true);
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("asks for a login"), "{err}");
    assert!(stdout.starts_with("client "), "{stdout}");
}

#[test]
fn processes_refreshing_the_same_token_at_once_take_turns() {
    // Tokens live 1 s, and are refreshed once less than 1 s is left; the
    // server refuses a refresh token used twice.
    let s = setup(1);
    assert!(s.mcpw(&["auth", "login", "o"], true).status.success());
    // Waiting out the token's lifetime (a clock, not an event).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let calls: Vec<_> = (0..4)
        .map(|_| {
            s.command(&["call", "o__whoami", "{}"], false)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for call in calls {
        let out = call.wait_with_output().unwrap();
        let (stdout, err) = text(&out);
        assert!(out.status.success(), "{stdout}\n{err}");
    }
    let events = s.events();
    assert!(events.contains("refresh\n"), "{events}");
    assert!(!events.contains("refresh-reused"), "{events}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_gateway_uses_a_login_made_elsewhere() {
    let s = setup(3600);
    let serving = Serving::start(MCPW, &s.dirs.home(), &["--exposure", "direct"]);
    let client = ().serve(StreamableHttpClientTransport::from_uri(serving.url())).await.unwrap();
    let whoami = || client.call_tool(CallToolRequestParams::new("o__whoami"));
    let refused = whoami().await.unwrap();
    let said = serde_json::to_string(&refused.content).unwrap();
    assert!(said.contains("mcpw auth login o"), "{said}");

    let out = s.mcpw(&["auth", "login", "o"], true);
    assert!(out.status.success(), "{}", text(&out).1);
    let answered = whoami().await.unwrap();
    let said = serde_json::to_string(&answered.content).unwrap();
    assert!(said.contains("client "), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_browser_the_redirect_is_pasted() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let s = setup(3600);
    let mut child =
        tokio::process::Command::from(s.command(&["auth", "login", "o", "--no-browser"], true))
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the URL is printed");
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
    };
    // The person's browser: the authorization page sends it back to the
    // loopback address, which is copied from the address bar, not visited.
    let page = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(&url)
        .send()
        .await
        .unwrap();
    let back = page.headers()["location"].to_str().unwrap().to_string();
    assert!(back.starts_with("http://127.0.0.1:"), "{back}");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{back}\n").as_bytes())
        .await
        .unwrap();
    let mut rest = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        rest.push_str(&line);
        rest.push('\n');
    }
    assert!(child.wait().await.unwrap().success(), "{rest}");
    assert!(rest.contains("Logged in to \"o\""), "{rest}");
    assert!(s.mcpw(&["call", "o__whoami", "{}"], false).status.success());
}

#[test]
fn without_a_keyring_nothing_is_stored_and_the_file_store_is_named() {
    let s = setup(3600);
    let server = std::fs::read_to_string(s.dirs.home().join(".config/mcpw/mcp.json")).unwrap();
    let mut config: Value = serde_json::from_str(&server).unwrap();
    config["settings"] = json!({});
    s.dirs.user(&config.to_string());
    let out = s.mcpw(&["auth", "login", "o"], true);
    // Whatever the outcome, the file store is used only when it is chosen.
    assert!(!s.credentials().join("credentials.json").exists());
    let (_, err) = text(&out);
    if out.status.success() {
        // A keyring works here (not on the machines this runs on): it holds the login.
        let status = s.mcpw(&["auth", "status"], true);
        assert!(status.status.success(), "{:?}", text(&status));
    } else {
        assert!(err.contains(r#""credentialStore": "file""#), "{err}");
    }
}

#[test]
fn a_login_nobody_finishes_gives_up_at_its_time() {
    let s = setup(3600);
    // A "browser" that opens nothing.
    let out = s
        .command(&["auth", "login", "o", "--wait", "1"], false)
        .env("BROWSER", "true")
        .output()
        .unwrap();
    let (_, err) = text(&out);
    assert!(!out.status.success());
    assert!(err.contains("not finished within 1 s"), "{err}");
}
