//! What tracing adds to a call (`cargo bench -p mcpw-upstream --bench traces`): the
//! spans mcpw makes for one `tools/call` through the gateway (the session
//! request's span under the client's `traceparent`, the upstream call's span
//! with its attributes, the `traceparent` passed on), with tracing off, then
//! on and exporting over OTLP/HTTP to a receiver in this process.
//!
//! `BENCH_CALLS` sets the number of calls (default 100000).

use mcpw_upstream::telemetry::{self, Attribute, Span};
use opentelemetry::trace::SpanKind;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The spans of one call, as the gateway makes them.
async fn one_call() -> Option<String> {
    let parent = telemetry::extract(
        Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        None,
    )
    .unwrap_or_default();
    let request = Span::start(
        "tools/call everything__echo",
        SpanKind::Server,
        &parent,
        || {
            vec![
                Attribute::new("mcp.method.name", "tools/call"),
                Attribute::new("jsonrpc.request.id", "7"),
                Attribute::new("network.transport", "tcp"),
                Attribute::new("gen_ai.tool.name", "everything__echo"),
            ]
        },
    );
    let upstream = async {
        let call = Span::client("tools/call echo", || {
            vec![
                Attribute::new("mcp.method.name", "tools/call"),
                Attribute::new("gen_ai.tool.name", "echo"),
                Attribute::new("mcpw.server", "everything"),
                Attribute::new("mcpw.tool", "everything__echo"),
                Attribute::new("mcpw.transport", "stdio"),
            ]
        });
        let traceparent = call.run(async { telemetry::current_traceparent() }).await;
        call.set(|| vec![Attribute::new("mcpw.outcome", "ok")]);
        traceparent
    };
    request.run(upstream).await
}

fn measure(rt: &tokio::runtime::Runtime, n: usize) -> (Duration, Duration) {
    for _ in 0..n / 10 {
        rt.block_on(one_call());
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(rt.block_on(one_call()));
        samples.push(t.elapsed());
    }
    samples.sort();
    (samples[n / 2], samples[n * 99 / 100])
}

/// Takes OTLP posts and answers 200; counts the bytes.
fn receiver() -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let bytes = Arc::new(AtomicU64::new(0));
    let counted = bytes.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let counted = counted.clone();
            std::thread::spawn(move || {
                mcpw_test_support::answer_posts(stream, |_, body| {
                    counted.fetch_add(body.len() as u64, Ordering::Relaxed);
                })
            });
        }
    });
    (endpoint, bytes)
}

fn main() {
    // SAFETY: no other thread runs yet. The SDK reads its batching from the
    // environment: export often, and keep every span (the default queue of
    // 2,048 would drop most of them, exporting less than a gateway does).
    unsafe {
        std::env::set_var("OTEL_BSP_SCHEDULE_DELAY", "100");
        std::env::set_var("OTEL_BSP_MAX_QUEUE_SIZE", "262144");
    }
    let n: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let us = |d: Duration| d.as_secs_f64() * 1e6;

    let (off50, off99) = measure(&rt, n);
    let (endpoint, bytes) = receiver();
    let flush = telemetry::init(|var| match var {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(endpoint.clone()),
        _ => None,
    })
    .unwrap();
    assert!(telemetry::enabled());
    assert!(rt.block_on(one_call()).is_some(), "the trace is passed on");
    let (on50, on99) = measure(&rt, n);
    drop(flush);
    println!("spans of one call through the gateway, n={n}");
    println!(
        "  tracing off            p50 {:>6.2} µs   p99 {:>6.2} µs",
        us(off50),
        us(off99)
    );
    println!(
        "  tracing on, exporting  p50 {:>6.2} µs   p99 {:>6.2} µs",
        us(on50),
        us(on99)
    );
    println!(
        "  added                  p50 {:>6.2} µs   ({} KB exported)",
        us(on50) - us(off50),
        bytes.load(Ordering::Relaxed) / 1024
    );
    assert!(
        bytes.load(Ordering::Relaxed) > 0,
        "spans reached the receiver"
    );
}
