//! MCP servers as WebAssembly components: a server on rmcp (the official
//! Rust SDK) built for wasm32-wasip2 in the test setup, as a command
//! (`tests/components/rmcp-stdio`) and as a `wasi:http/proxy` component on
//! rmcp's Streamable HTTP service (`tests/components/rmcp-http`), run by mcpw
//! in its sandbox, and reached
//! through `mcpw serve` with the TypeScript SDK client. Its permissions in
//! obeyed/violated pairs: files inside and outside the grant, a write into a
//! read-only grant, an environment variable granted and not, a host on the
//! list and off it, memory and time within and past their limits; each
//! violation an error the call reports, the session going on.

use crate::common::{ConfigDirs, workspace};
use crate::gateway::serve::{client_plan, text};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where the test components are built.
fn built_in() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("components")
}

/// The rmcp server as a `wasi:cli/command` component, built once per run.
pub(crate) fn rmcp_stdio() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = workspace().join("tests/components/rmcp-stdio");
        mcpw_guest_build::build_crate_bin(&dir, "rmcp_stdio", &built_in())
    })
}

/// The same server as a `wasi:http/proxy` component, built once per run.
pub(crate) fn rmcp_http() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = workspace().join("tests/components/rmcp-http");
        mcpw_guest_build::build_crate_lib(&dir, "mcpw_test_rmcp_http", &built_in())
    })
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"op": "callTool", "name": format!("probe__{name}"), "arguments": arguments})
}

/// `mcpw serve` on stdio for `dirs`, as a client connects to it.
fn serve(dirs: &ConfigDirs) -> Value {
    let env = crate::common::client_env_with(&dirs.home(), json!({"PROBE_SECRET": "not granted"}));
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", "direct"], "env": env})
}

#[test]
fn a_component_server_on_rmcp_lists_calls_reads_and_prompts_through_mcpw() {
    let dirs = ConfigDirs::new();
    let probe = json!({"component": rmcp_stdio().display().to_string()});
    dirs.user(&json!({"mcpServers": {"probe": probe}}).to_string());
    let steps = json!([
        {"op": "listTools"},
        call("echo", json!({"message": "from the sandbox"})),
        {"op": "readResource", "uri": "probe://about"},
        {"op": "listPrompts"},
        {"op": "getPrompt", "name": "probe__haiku", "arguments": {"topic": "pipes"}},
    ]);
    let got = client_plan(json!({"connect": serve(&dirs), "steps": steps})).unwrap();
    let names = crate::gateway::serve::names(&got[0]);
    for tool in [
        "probe__echo",
        "probe__read_file",
        "probe__write_file",
        "probe__env",
        "probe__allocate",
        "probe__spin",
    ] {
        assert!(names.contains(&tool.to_string()), "{tool} in {names:?}");
    }
    assert_eq!(text(&got[1]), "Echo: from the sandbox", "{:#}", got[1]);
    assert_eq!(
        got[2]["contents"][0]["text"], "a probe built with rmcp for wasm32-wasip2",
        "{:#}",
        got[2]
    );
    assert!(got[3].to_string().contains("probe__haiku"), "{:#}", got[3]);
    assert!(
        got[4].to_string().contains("Write a haiku about pipes."),
        "{:#}",
        got[4]
    );
}

/// The `wasi:http/proxy` shape: each request handed to the component's
/// incoming handler in mcpw's process (a fresh instance per request), rmcp's
/// Streamable HTTP service answering it; its limits per request.
#[test]
fn a_wasi_http_component_serves_streamable_http_in_process() {
    let dirs = ConfigDirs::new();
    let permissions =
        json!({"env": {"PROBE_TOKEN": "over http"}, "memoryMiB": 48, "timeoutMs": 1000});
    let probe = json!({"component": rmcp_http().display().to_string(), "permissions": permissions});
    dirs.user(&json!({"mcpServers": {"probe": probe}}).to_string());
    let steps = json!([
        {"op": "listTools"},
        call("echo", json!({"message": "over wasi:http"})),
        call("env", json!({"key": "PROBE_TOKEN"})),
        {"op": "readResource", "uri": "probe://about"},
        {"op": "getPrompt", "name": "probe__haiku", "arguments": {"topic": "ports"}},
        call("allocate", json!({"mib": 96})),
        call("spin", json!({"ms": 5000})),
        call("echo", json!({"message": "after the stop"})),
    ]);
    let got = client_plan(json!({"connect": serve(&dirs), "steps": steps})).unwrap();
    let names = crate::gateway::serve::names(&got[0]);
    assert!(names.contains(&"probe__echo".to_string()), "{names:?}");
    assert_eq!(text(&got[1]), "Echo: over wasi:http", "{:#}", got[1]);
    assert_eq!(text(&got[2]), "over http");
    assert_eq!(
        got[3]["contents"][0]["text"], "a probe built with rmcp for wasm32-wasip2",
        "{:#}",
        got[3]
    );
    assert!(
        got[4].to_string().contains("Write a haiku about ports."),
        "{:#}",
        got[4]
    );
    assert_eq!(got[5]["isError"], true, "{:#}", got[5]);
    assert!(
        text(&got[5]).contains("cannot allocate 96 MiB"),
        "{:#}",
        got[5]
    );
    assert_eq!(got[6]["isError"], true, "{:#}", got[6]);
    assert!(
        text(&got[6]).contains("timeoutMs (1000 ms)"),
        "{:#}",
        got[6]
    );
    assert_eq!(text(&got[7]), "Echo: after the stop", "{:#}", got[7]);
}

/// `wasi:keyvalue`: what a component keeps outlives the instance that kept
/// it (a proxy's instance lives for one request), and each server has a
/// store of its own, though both run the same component.
#[test]
fn a_components_keyvalue_state_outlives_its_instances_and_is_its_own() {
    let dirs = ConfigDirs::new();
    let component = json!({"component": rmcp_http().display().to_string()});
    let servers = json!({"probe": component.clone(), "other": component});
    dirs.user(&json!({"mcpServers": servers}).to_string());
    let other = |name: &str, arguments: Value| json!({"op": "callTool", "name": format!("other__{name}"), "arguments": arguments});
    let steps = json!([
        call("count", json!({"name": "visits"})),
        call("count", json!({"name": "visits"})),
        other("count", json!({"name": "visits"})),
        call("note", json!({"key": "k", "text": "kept between requests"})),
        call("note", json!({"key": "k"})),
        other("note", json!({"key": "k"})),
        call("note", json!({"key": "visits"})),
    ]);
    let got = client_plan(json!({"connect": serve(&dirs), "steps": steps})).unwrap();
    let texts: Vec<String> = got.iter().map(text).collect();
    assert_eq!(
        texts,
        [
            "visits = 1",
            "visits = 2",
            "visits = 1",
            "kept k",
            "kept between requests",
            "(nothing)",
            // Counters and notes are buckets apart.
            "(nothing)",
        ],
        "{got:#?}"
    );
}

#[test]
fn a_component_reaches_what_it_is_granted_and_nothing_else() {
    let dirs = ConfigDirs::new();
    let root = dirs.root.path();
    let (notes, out, elsewhere) = (root.join("notes"), root.join("out"), root.join("elsewhere"));
    for dir in [&notes, &out, &elsewhere] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(notes.join("a.txt"), "granted text").unwrap();
    std::fs::write(elsewhere.join("b.txt"), "not granted").unwrap();
    let path = |p: &Path| p.display().to_string();
    // Two listeners: the component may connect to the first only.
    let granted = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (granted, other) = (granted.local_addr().unwrap(), other.local_addr().unwrap());
    let permissions = json!({
        "files": {path(&notes): "read", path(&out): "read-write"},
        "network": [granted.to_string()],
        "env": {"PROBE_TOKEN": "granted value"},
        "memoryMiB": 48, "timeoutMs": 1500,
    });
    let probe =
        json!({"component": rmcp_stdio().display().to_string(), "permissions": permissions});
    dirs.user(&json!({"mcpServers": {"probe": probe}}).to_string());
    let steps = json!([
        call("read_file", json!({"path": path(&notes.join("a.txt"))})),
        call("read_file", json!({"path": path(&elsewhere.join("b.txt"))})),
        call(
            "write_file",
            json!({"path": path(&out.join("w.txt")), "text": "written"})
        ),
        call(
            "write_file",
            json!({"path": path(&notes.join("w.txt")), "text": "written"})
        ),
        call("env", json!({"key": "PROBE_TOKEN"})),
        call("env", json!({"key": "PROBE_SECRET"})),
        call("allocate", json!({"mib": 8})),
        call("allocate", json!({"mib": 96})),
        call("connect", json!({"address": granted.to_string()})),
        call("connect", json!({"address": other.to_string()})),
        call("spin", json!({"ms": 50})),
        call("spin", json!({"ms": 5000})),
        call("echo", json!({"message": "after the stop"})),
    ]);
    let got = client_plan(json!({"connect": serve(&dirs), "steps": steps})).unwrap();
    let ok = |i: usize| {
        assert_ne!(got[i]["isError"], true, "step {i}: {:#}", got[i]);
        text(&got[i])
    };
    let refused = |i: usize| {
        assert_eq!(got[i]["isError"], true, "step {i}: {:#}", got[i]);
        text(&got[i])
    };
    assert_eq!(ok(0), "granted text");
    assert!(refused(1).contains("cannot read"), "{}", text(&got[1]));
    assert!(ok(2).starts_with("wrote 7 bytes"));
    assert_eq!(
        std::fs::read_to_string(out.join("w.txt")).unwrap(),
        "written"
    );
    assert!(refused(3).contains("cannot write"), "{}", text(&got[3]));
    assert!(
        !notes.join("w.txt").exists(),
        "nothing written into a read-only grant"
    );
    assert_eq!(ok(4), "granted value");
    assert!(
        refused(5).contains("not set"),
        "mcpw's own environment is not the component's"
    );
    assert_eq!(ok(6), "allocated 8 MiB");
    assert!(
        refused(7).contains("cannot allocate 96 MiB"),
        "{}",
        text(&got[7])
    );
    assert_eq!(ok(8), format!("connected to {granted}"));
    assert!(refused(9).contains("cannot connect"), "{}", text(&got[9]));
    assert!(ok(10).starts_with("spun 50 ms"));
    let stopped = refused(11);
    assert!(stopped.contains("timeoutMs (1500 ms)"), "{stopped}");
    // A fresh instance takes the next request: the session goes on.
    assert_eq!(ok(12), "Echo: after the stop");
}

/// An author's check: `mcpw plugin server` starts a component in the
/// sandbox, lists what it offers, calls a tool, and reports what mcpw
/// refused it; in either shape.
#[test]
fn an_authors_check_lists_a_component_and_reports_what_it_was_refused() {
    let dirs = ConfigDirs::new();
    let granted = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (granted, other) = (granted.local_addr().unwrap(), other.local_addr().unwrap());
    let permissions = json!({"network": [granted.to_string()]}).to_string();
    let args = json!({"address": other.to_string()}).to_string();
    let stdio = path_of(rmcp_stdio());
    let checked = crate::servers::mcpw_in(&dirs.home())
        .args(["plugin", "server", &stdio, "--permissions", &permissions])
        .args(["--call", "connect", "--args", &args, "--json"])
        .output()
        .unwrap();
    let report = crate::host::cli::json(&checked);
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"echo") && tools.contains(&"connect"),
        "{report:#}"
    );
    assert_eq!(report["resources"], json!(["probe://about"]), "{report:#}");
    assert_eq!(report["prompts"], json!(["haiku"]), "{report:#}");
    assert_eq!(report["called"]["isError"], true, "{report:#}");
    let refused = report["refused"].to_string();
    assert!(
        refused.contains(&format!("a connection to {other}")),
        "{report:#}"
    );
    assert!(!refused.contains(&granted.to_string()), "{report:#}");
    // The instance's memory at its peak, as the store's limiter saw it grow.
    let allocated = crate::servers::mcpw_in(&dirs.home())
        .args(["plugin", "server", &stdio, "--call", "allocate"])
        .args(["--args", r#"{"mib": 8}"#, "--json"])
        .output()
        .unwrap();
    let report = crate::host::cli::json(&allocated);
    let peak = report["memoryPeakMiB"].as_f64().unwrap_or_default();
    assert!((8.0..32.0).contains(&peak), "{report:#}");
    let http = path_of(rmcp_http());
    let checked = crate::servers::mcpw_in(&dirs.home())
        .args(["plugin", "server", &http, "--json"])
        .output()
        .unwrap();
    let report = crate::host::cli::json(&checked);
    assert!(
        report["tools"].to_string().contains("\"echo\""),
        "{report:#}"
    );
    assert_eq!(report["refused"], json!([]), "{report:#}");
}

/// What the host sees of a component's attempts beyond its grants is
/// reported: a name lookup (itself a message to the world: a name under a
/// watched domain carries data out) of a name `network` does not grant is
/// refused, while a granted name resolves and connects; a write into a
/// folder granted read-only fails in the component and is reported with
/// its path.
#[test]
fn a_component_looks_up_only_granted_names_and_its_read_only_writes_are_seen() {
    let dirs = ConfigDirs::new();
    let notes = dirs.root.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let notes = notes.canonicalize().unwrap();
    let granted = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = granted.local_addr().unwrap().port();
    let permissions = json!({"network": [format!("localhost:{port}")],
                             "files": {path_of(&notes): "read"}})
    .to_string();
    let stdio = path_of(rmcp_stdio());
    let check = |tool: &str, args: Value| {
        let checked = crate::servers::mcpw_in(&dirs.home())
            .args(["plugin", "server", &stdio, "--permissions", &permissions])
            .args(["--call", tool, "--args", &args.to_string(), "--json"])
            .output()
            .unwrap();
        crate::host::cli::json(&checked)
    };
    let report = check("connect", json!({"address": format!("localhost:{port}")}));
    assert_eq!(report["called"]["isError"], false, "{report:#}");
    assert_eq!(report["refused"], json!([]), "{report:#}");
    let report = check("connect", json!({"address": "leak-7d1e.example.com:80"}));
    assert_eq!(report["called"]["isError"], true, "{report:#}");
    assert_eq!(
        report["refused"],
        json!([r#"a name lookup of "leak-7d1e.example.com""#]),
        "{report:#}"
    );
    let written = notes.join("w.txt");
    let report = check(
        "write_file",
        json!({"path": path_of(&written), "text": "x"}),
    );
    assert_eq!(report["called"]["isError"], true, "{report:#}");
    let seen = format!(
        "a write into {:?}, in a folder granted read-only",
        written.display().to_string()
    );
    assert_eq!(report["refused"], json!([seen]), "{report:#}");
    assert!(!written.exists());
}

fn path_of(p: &Path) -> String {
    p.display().to_string()
}

/// A child process killed when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback TLS server with a CA of its own, serving the files of `dir`:
/// (its port, the CA's certificate file), killed with the guard.
fn tls_server(dir: &Path) -> (u16, PathBuf, KillOnDrop) {
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=mcpw test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    let serve = "import http.server, ssl, sys\n\
        s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n\
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain('server.pem', 'server.key')\n\
        s.socket = c.wrap_socket(s.socket, server_side=True)\n\
        print(s.server_address[1], flush=True); s.serve_forever()\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", serve])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    (
        line.trim().parse().unwrap(),
        dir.join("ca.pem"),
        KillOnDrop(child),
    )
}

/// A component fetched over https runs only with the digest its definition
/// names, and is kept by it: fetched once.
#[test]
fn a_fetched_component_runs_only_with_its_digest_and_is_fetched_once() {
    let dirs = ConfigDirs::new();
    let served = dirs.root.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let wasm = std::fs::read(rmcp_stdio()).unwrap();
    std::fs::write(served.join("probe.wasm"), &wasm).unwrap();
    let digest: String = {
        use sha2::Digest;
        sha2::Sha256::digest(&wasm)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let (port, ca, server) = tls_server(&served);
    let url = format!("https://localhost:{port}/probe.wasm");
    let probe = json!({"component": url, "sha256": digest});
    let other = json!({"component": url, "sha256": "0".repeat(64)});
    dirs.user(&json!({"mcpServers": {"probe": probe, "other": other}}).to_string());
    let connect = |name: &str| {
        let out = crate::servers::mcpw_in(&dirs.home())
            .args(["connect", name])
            .env("SSL_CERT_FILE", &ca)
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let (ok, said) = connect("probe");
    assert!(ok, "{said}");
    let (ok, said) = connect("other");
    assert!(
        !ok && said.contains(&format!("its sha256 is {digest}"))
            && said.contains("it does not run"),
        "{said}"
    );
    // Kept by its digest: with the server gone, it still starts.
    drop(server);
    let (ok, said) = connect("probe");
    assert!(ok, "{said}");
}

/// A loopback OCI registry (Debian's `docker-registry`, installed when
/// missing) storing in `dir`: its address, and the guard that stops it.
fn registry(dir: &Path) -> (String, KillOnDrop) {
    crate::servers::debian(
        &["docker-registry"],
        &["docker-registry"],
        "the OCI source test",
    );
    let port = crate::servers::free_port();
    let config = format!(
        "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\nlog:\n  level: error\n",
        dir.join("blobs").display()
    );
    std::fs::write(dir.join("config.yml"), config).unwrap();
    let child = std::process::Command::new("docker-registry")
        .args(["serve", &dir.join("config.yml").display().to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let address = format!("127.0.0.1:{port}");
    crate::servers::wait_until("the registry", std::time::Duration::from_secs(20), || {
        std::net::TcpStream::connect(&address).is_ok()
    });
    (address, KillOnDrop(child))
}

/// Pushes `wasm` to `reference` as a WebAssembly artifact; returns the
/// digest of its manifest.
fn push(reference: &str, wasm: &[u8]) -> String {
    use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let parsed: oci_client::Reference = reference.parse().unwrap();
        let registry = parsed.resolve_registry().to_string();
        let client = oci_client::Client::new(ClientConfig {
            protocol: ClientProtocol::HttpsExcept(vec![registry]),
            ..Default::default()
        });
        let auth = oci_client::secrets::RegistryAuth::Anonymous;
        let layer = ImageLayer::new(wasm.to_vec(), "application/wasm".into(), None);
        let config = Config::new(
            b"{}".to_vec(),
            "application/vnd.wasm.config.v0+json".into(),
            None,
        );
        client
            .push(&parsed, &[layer], config, &auth, None)
            .await
            .unwrap();
        client.fetch_manifest_digest(&parsed, &auth).await.unwrap()
    })
}

/// A component from an OCI registry, pinned by the digest of its manifest:
/// it runs; pinned by another digest, nothing runs.
#[test]
fn a_component_from_an_oci_registry_runs_only_by_its_digest() {
    let dirs = ConfigDirs::new();
    let (registry, _running) = registry(dirs.root.path());
    let wasm = std::fs::read(rmcp_stdio()).unwrap();
    let digest = push(&format!("{registry}/mcpw/probe:test"), &wasm);
    assert!(digest.starts_with("sha256:"), "{digest}");
    let pinned = json!({"component": format!("oci://{registry}/mcpw/probe@{digest}")});
    let other =
        json!({"component": format!("oci://{registry}/mcpw/probe@sha256:{}", "0".repeat(64))});
    dirs.user(&json!({"mcpServers": {"probe": pinned, "other": other}}).to_string());
    let steps = json!([call("echo", json!({"message": "from a registry"}))]);
    let got = client_plan(json!({"connect": serve(&dirs), "steps": steps})).unwrap();
    assert_eq!(text(&got[0]), "Echo: from a registry", "{:#}", got[0]);
    let out = crate::servers::mcpw_in(&dirs.home())
        .args(["connect", "other"])
        .output()
        .unwrap();
    let said = crate::servers::said(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("oci://"), "{said}");
}
