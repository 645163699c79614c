//! Traces: `mcpw serve --http` exports OpenTelemetry spans over OTLP to a
//! receiver here, which decodes them. A client's call is one trace, from
//! the client's own span through the gateway to the upstream server, which
//! gets the trace in its request's `_meta` (and an HTTP server in its
//! `traceparent` header).

use super::serve::client;
use crate::common::ConfigDirs;
use crate::servers::{Background, MCPW, Serving, servers};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One exported span, flattened.
#[derive(Clone, Debug)]
struct Exported {
    trace: String,
    id: String,
    parent: String,
    name: String,
    kind: i32,
    attributes: BTreeMap<String, String>,
    status: i32,
    service: String,
}

/// An OTLP/HTTP receiver (`POST /v1/traces`, protobuf) on a free port.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<(Mutex<Vec<Exported>>, Condvar)>,
}

impl Receiver {
    /// Starts it; returns it and its endpoint.
    fn start() -> (Receiver, String) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let receiver = Receiver::default();
        let r = receiver.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let r = r.clone();
                std::thread::spawn(move || r.serve(stream));
            }
        });
        (receiver, endpoint)
    }

    /// Takes the posts of one connection.
    fn serve(&self, stream: TcpStream) {
        mcpw_test_support::answer_posts(stream, |head, body| {
            assert!(head.starts_with("post /v1/traces"), "{head}");
            assert!(
                head.contains("content-type: application/x-protobuf"),
                "{head}"
            );
            self.take(ExportTraceServiceRequest::decode(body.as_slice()).unwrap());
        });
    }

    fn take(&self, request: ExportTraceServiceRequest) {
        let mut got = Vec::new();
        for resource in request.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|a| a.key == "service.name")
                .map(|a| text(a.value.as_ref().and_then(|v| v.value.as_ref())))
                .unwrap_or_default();
            for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                got.push(Exported {
                    trace: hex(&span.trace_id),
                    id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    name: span.name,
                    kind: span.kind,
                    attributes: span
                        .attributes
                        .iter()
                        .map(|a| {
                            (
                                a.key.clone(),
                                text(a.value.as_ref().and_then(|v| v.value.as_ref())),
                            )
                        })
                        .collect(),
                    status: span.status.map_or(0, |s| s.code),
                    service: service.clone(),
                });
            }
        }
        let (spans, changed) = &*self.spans;
        spans.lock().unwrap().extend(got);
        changed.notify_all();
    }

    /// Waits (up to 30 s) until `done` holds of the spans received so far.
    fn wait_for(&self, what: &str, done: impl Fn(&[Exported]) -> bool) -> Vec<Exported> {
        let (spans, changed) = &*self.spans;
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut got = spans.lock().unwrap();
        while !done(&got) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "{what}; received: {got:#?}");
            got = changed.wait_timeout(got, left).unwrap().0;
        }
        got.clone()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: Option<&AnyValue>) -> String {
    match value {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// A TCP relay to `upstream` that keeps what clients send, so a test can
/// read the headers a real server got.
struct Tee {
    port: u16,
    sent: Arc<Mutex<Vec<u8>>>,
}

impl Tee {
    fn start(upstream: u16) -> Tee {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let kept = sent.clone();
        std::thread::spawn(move || {
            for mut client in listener.incoming().map_while(Result::ok) {
                let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let (mut client_back, mut server_in) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut server_in, &mut client_back);
                    let _ = client_back.shutdown(std::net::Shutdown::Write);
                });
                let kept = kept.clone();
                std::thread::spawn(move || {
                    let mut chunk = [0u8; 16384];
                    while let Ok(n) = client.read(&mut chunk) {
                        if n == 0 || server.write_all(&chunk[..n]).is_err() {
                            break;
                        }
                        kept.lock().unwrap().extend_from_slice(&chunk[..n]);
                    }
                    let _ = server.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Tee { port, sent }
    }

    /// The `traceparent` headers of the requests relayed so far.
    fn traceparents(&self) -> Vec<String> {
        let sent = String::from_utf8_lossy(&self.sent.lock().unwrap()).to_string();
        sent.lines()
            .filter_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("traceparent")
                    .then(|| value.trim().to_string())
            })
            .collect()
    }
}

#[test]
fn a_call_is_one_trace_from_the_client_through_the_gateway_to_the_server() {
    let s = servers();
    let upstream = Background::node(&[&s.everything(), "streamableHttp"], &[]);
    let tee = Tee::start(upstream.port);
    let dirs = ConfigDirs::new();
    let meta_file = dirs.root.path().join("meta.jsonl");
    const TOKEN: &str = "tracer-token-0123456789";
    dirs.user(
        &json!({"mcpServers": {
            "remote": {"url": format!("http://127.0.0.1:{}/mcp", tee.port)},
            "local": {"command": "node", "args": [s.misbehave(), "ok"],
                      "env": {"META_FILE": meta_file.display().to_string()}}
        }, "serve": {"tokens": [{"name": "tracer", "token": TOKEN}]}})
        .to_string(),
    );
    let (receiver, endpoint) = Receiver::start();
    let serving = Serving::start_with(
        MCPW,
        &dirs.home(),
        &["--exposure", "direct"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );

    // The client's trace comes in the HTTP header for one call, in `_meta`
    // for the other (which wins over the header).
    let by_header = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let by_meta = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let failing = ("5b8aa5a2d2c872e8321cf37308d69df2", "051581bf3cb55c13");
    let traceparent = |(trace, span): (&str, &str)| format!("00-{trace}-{span}-01");
    let r = client(
        json!({"url": serving.url(), "headers": {"traceparent": traceparent(by_header),
                                                 "Authorization": format!("Bearer {TOKEN}")}}),
        json!([
            {"op": "callTool", "name": "remote__echo", "arguments": {"message": "secret words"}},
            {"op": "getPrompt", "name": "remote__simple-prompt"},
            {"op": "callTool", "name": "local__echo", "arguments": {"message": "more secret words"},
             "meta": {"traceparent": traceparent(by_meta)}},
            {"op": "callTool", "name": "remote__echo", "arguments": {}, "meta": {"traceparent": traceparent(failing)}}
        ]),
    )
    .unwrap();
    assert_eq!(r[0]["content"][0]["text"], "Echo: secret words", "{}", r[0]);
    assert!(r[1]["messages"].is_array(), "{}", r[1]);

    // A request's span ends last: once it is in, so are its children.
    let request_ended = |trace: &str, tool: &str, spans: &[Exported]| {
        spans
            .iter()
            .any(|s| s.trace == trace && s.name == format!("tools/call {tool}") && s.kind == 2)
    };
    let spans = receiver.wait_for("the three calls' spans", |spans| {
        [
            (by_header, "remote__echo"),
            (by_meta, "local__echo"),
            (failing, "remote__echo"),
        ]
        .iter()
        .all(|((trace, _), tool)| request_ended(trace, tool, spans))
    });

    for ((trace, client_span), exposed, server, transport) in [
        (by_header, "remote__echo", "remote", "http"),
        (by_meta, "local__echo", "local", "stdio"),
    ] {
        let in_trace: Vec<&Exported> = spans.iter().filter(|s| s.trace == trace).collect();
        // Server span (kind 2) under the client's span.
        let request = in_trace
            .iter()
            .find(|s| s.name == format!("tools/call {exposed}"))
            .unwrap_or_else(|| panic!("a request span in {in_trace:#?}"));
        assert_eq!(request.kind, 2, "{request:?}");
        assert_eq!(request.parent, client_span, "{request:?}");
        assert_eq!(request.attributes["mcp.method.name"], "tools/call");
        assert_eq!(request.attributes["gen_ai.tool.name"], exposed);
        assert_eq!(
            request.attributes["enduser.id"], "tracer",
            "the client, by name"
        );
        assert!(
            in_trace
                .iter()
                .all(|s| s.attributes.values().all(|v| !v.contains(TOKEN))),
            "no span carries the token"
        );
        assert_eq!(request.service, "mcpw");
        // Client span (kind 3) to the server, under the request's.
        let call = in_trace
            .iter()
            .find(|s| s.name == "tools/call echo")
            .unwrap_or_else(|| panic!("an upstream span in {in_trace:#?}"));
        assert_eq!(call.kind, 3, "{call:?}");
        assert_eq!(call.parent, request.id, "{call:?}");
        assert_eq!(call.attributes["mcpw.server"], server);
        assert_eq!(call.attributes["mcpw.transport"], transport);
        assert_eq!(call.attributes["mcpw.outcome"], "ok");
        // The server got the upstream span as its parent: an HTTP server
        // in the header, a stdio server in `_meta`.
        let expected = format!("00-{trace}-{}-01", call.id);
        let got = match transport {
            "http" => tee.traceparents(),
            _ => std::fs::read_to_string(&meta_file)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .filter(|l| l["method"] == "tools/call")
                .map(|l| l["meta"]["traceparent"].as_str().unwrap_or("").to_string())
                .collect(),
        };
        assert!(got.contains(&expected), "{expected} among {got:?}");
    }
    // A prompt is got under the request's span too, and the trace reaches
    // the server.
    let request = spans
        .iter()
        .find(|s| s.name == "prompts/get remote__simple-prompt")
        .unwrap();
    assert_eq!((request.kind, request.parent.as_str()), (2, by_header.1));
    let get = spans
        .iter()
        .find(|s| s.name == "prompts/get simple-prompt" && s.parent == request.id)
        .unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(get.kind, 3);
    assert_eq!(get.attributes["mcpw.server"], "remote");
    let expected = format!("00-{}-{}-01", by_header.0, get.id);
    assert!(tee.traceparents().contains(&expected), "{expected}");
    // A call that fails (no message) marks both spans failed (status 2).
    let failed: Vec<&Exported> = spans.iter().filter(|s| s.trace == failing.0).collect();
    assert_eq!(failed.len(), 2, "{failed:#?}");
    for span in &failed {
        assert_eq!(span.status, 2, "{span:?}");
        let error = &span.attributes["error.type"];
        assert!(
            ["tool_error", "rpc_error"].contains(&error.as_str()),
            "{span:?}"
        );
    }
    for span in spans.iter().filter(|s| s.trace != failing.0) {
        assert_ne!(span.status, 2, "{span:?}");
    }
    // Content stays out of spans unless asked for.
    let all = format!("{spans:?}");
    assert!(!all.contains("secret words"), "{all}");
    assert!(!all.contains("gen_ai.tool.call.arguments"), "{all}");
}

#[test]
fn a_scripts_searches_guests_and_inner_calls_are_in_its_trace_with_content_when_asked() {
    let s = servers();
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({"mcpServers": {"local": {"command": "node", "args": [s.everything(), "stdio"]}},
                "settings": {"guards": [super::guards::redactor()]}})
        .to_string(),
    );
    let (receiver, endpoint) = Receiver::start();
    let serving = Serving::start_with(
        MCPW,
        &dirs.home(),
        &["--exposure", "code"],
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{endpoint}/v1/traces"),
            ),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_SERVICE_NAME", "gateway-a"),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
        ],
    );
    let (trace, client_span) = ("1e8a6bbe2a4ecb5c2d8a51b6c2f3e4d5", "a1b2c3d4e5f60718");
    let code = r#"const hits = await mcp.search("echo back a message", {limit: 2});
const r = await tools.local__echo({message: "inner words"});
return {hits: hits.length, r};"#;
    let r = client(
        json!({"url": serving.url()}),
        json!([{"op": "callTool", "name": "code", "arguments": {"code": code},
                "meta": {"traceparent": format!("00-{trace}-{client_span}-01")}}]),
    )
    .unwrap();
    assert_eq!(r[0]["isError"], false, "{}", r[0]);

    // The request's span ends last: once it is in, so are its children.
    let spans = receiver.wait_for("the script's request span", |spans| {
        spans
            .iter()
            .any(|s| s.trace == trace && s.name == "tools/call code")
    });
    let in_trace: Vec<&Exported> = spans.iter().filter(|s| s.trace == trace).collect();
    let named = |name: &str| {
        *in_trace
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} in {in_trace:#?}"))
    };
    let request = named("tools/call code");
    assert_eq!(request.parent, client_span);
    assert_eq!(request.service, "gateway-a", "OTEL_SERVICE_NAME is used");
    let script = named("script");
    assert_eq!(script.parent, request.id);
    assert!(script.attributes["mcpw.script.code"].contains("inner words"));
    let search = named("search");
    assert_eq!(search.parent, script.id, "{search:?}");
    assert_eq!(
        search.attributes["mcpw.search.query"],
        "\"echo back a message\""
    );
    let ranking = named("guest search");
    assert_eq!(ranking.parent, search.id, "{ranking:?}");
    assert!(!ranking.attributes["mcpw.guest.name"].is_empty());
    assert_eq!(ranking.attributes["mcpw.guest.role"], "ranking");
    let call = named("tools/call echo");
    assert_eq!(call.parent, script.id, "{call:?}");
    assert!(
        call.attributes["gen_ai.tool.call.arguments"].contains("inner words"),
        "{call:?}"
    );
    assert!(
        call.attributes["gen_ai.tool.call.result"].contains("Echo: inner words"),
        "{call:?}"
    );
    // The guards' decisions, each with its guest's span.
    for (name, decision) in [("guard call", "allow"), ("guard result", "keep")] {
        let guard = named(name);
        assert_eq!(guard.parent, script.id, "{guard:?}");
        assert_eq!(
            guard.attributes["mcpw.guard.decision"], decision,
            "{guard:?}"
        );
        assert_eq!(guard.attributes["mcpw.tool"], "local__echo", "{guard:?}");
        assert!(
            in_trace
                .iter()
                .any(|s| s.name == "guest guard" && s.parent == guard.id),
            "{in_trace:#?}"
        );
    }
}
