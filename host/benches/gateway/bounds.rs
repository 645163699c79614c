//! Row 16: mcpw's memory whatever the other side does. A server writing
//! 600 MiB to its stdout with no newline (the `flood` tool of
//! `tests/components/rmcp-stdio`), as a WebAssembly component against the
//! same server as a native process: mcpw's peak RSS, and whether the next
//! call is answered. A client writing 20,000 `tools/list` requests to
//! `mcpw serve` on stdio without reading the answers, against one reading
//! them as it writes: `serve`'s peak RSS.

use crate::shared::{TAG_ENV, connect, home_with, mcpw_command, mib, request, tag};
use mcpw_test_support::stats::proc_kb;
use serde_json::json;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const FLOOD_MIB: u32 = 600;
const UNREAD: usize = 20_000;

/// `mcpw serve` in front of the server in `home`: the flood's outcome, the
/// time it took, mcpw's peak RSS (kB) and whether the next call worked. A
/// first `serve` fills the compile caches (its guests', the component's),
/// so that the one measured starts as a user's usually does.
async fn flood(home: &Path) -> (String, Duration, u64, bool) {
    let echo = request("probe__echo", json!({"message": "ping"}));
    let serve = || mcpw_command(home, &["serve", "--exposure", "direct"]).into();
    let (warming, _, _) = connect(serve(), "mcpw serve").await;
    warming.call_tool(echo.clone()).await.expect("a first echo");
    let _ = warming.cancel().await;
    let (client, pid, _) = connect(serve(), "mcpw serve").await;
    client.call_tool(echo.clone()).await.expect("a first echo");
    let t = Instant::now();
    let flooded = client
        .call_tool(request("probe__flood", json!({"mib": FLOOD_MIB})))
        .await;
    let took = t.elapsed();
    let said = match flooded {
        Ok(result) => serde_json::to_string(&result.content).unwrap_or_default(),
        Err(e) => e.to_string(),
    };
    let peak = proc_kb(pid, "VmHWM");
    let next = client
        .call_tool(echo)
        .await
        .is_ok_and(|r| r.is_error != Some(true));
    let _ = client.cancel().await;
    (said, took, peak, next)
}

/// A `tools/list` request as a line.
fn list(id: usize) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/list\"}}\n")
}

/// `mcpw serve` on stdio sent [`UNREAD`] requests by a client that reads
/// the answers only once its writes stop moving (`read_late`), or as it
/// writes: serve's peak RSS (kB), the requests written before the writes
/// stopped, and the time to every answer.
fn unread(home: &Path, read_late: bool) -> (u64, usize, Duration) {
    let mut child = mcpw_command(home, &["serve"])
        .env(TAG_ENV, tag())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcpw serve");
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = std::io::BufReader::new(child.stdout.take().unwrap());
    let initialize = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    writeln!(stdin, "{initialize}").unwrap();
    let mut line = String::new();
    answers.read_line(&mut line).unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    let t = Instant::now();
    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let written = written.clone();
        std::thread::spawn(move || {
            for id in 0..UNREAD {
                stdin.write_all(list(id).as_bytes()).unwrap();
                written.fetch_add(1, Ordering::Release);
            }
            stdin
        })
    };
    let mut stalled = UNREAD;
    if read_late {
        let mut seen = 0;
        loop {
            std::thread::sleep(Duration::from_secs(2));
            let now = written.load(Ordering::Acquire);
            if now == seen || now == UNREAD {
                stalled = now;
                break;
            }
            seen = now;
        }
    }
    let mut left = UNREAD;
    while left > 0 {
        line.clear();
        if answers.read_line(&mut line).unwrap_or(0) == 0 {
            panic!("serve ended with {left} answers to come");
        }
        left -= usize::from(line.contains("\"result\""));
    }
    let took = t.elapsed();
    let peak = proc_kb(child.id(), "VmHWM");
    drop(writer.join());
    let _ = child.kill();
    let _ = child.wait();
    (peak, stalled, took)
}

pub(crate) async fn row16_bounds(root: &Path) -> String {
    println!("## 16. Memory whatever the other side does: a stdout flood, unread answers");
    let (native, wasm) = crate::components::build(root);
    let component = json!({"component": wasm, "permissions": {"timeoutMs": 600_000}});
    let home_component = home_with(&root.join("flood-component"), json!({"probe": component}));
    let home_native = home_with(
        &root.join("flood-native"),
        json!({"probe": {"command": native}}),
    );
    let (c_said, c_took, c_peak, c_next) = flood(&home_component).await;
    let (n_said, n_took, n_peak, n_next) = flood(&home_native).await;
    println!(
        "{FLOOD_MIB} MiB without a newline: component → mcpw peak {:.1} MiB in {:.1} s, next call {}; said {c_said}",
        mib(c_peak),
        c_took.as_secs_f64(),
        if c_next { "answered" } else { "FAILED" }
    );
    println!(
        "native process → mcpw peak {:.1} MiB in {:.1} s, next call {}; said {n_said}",
        mib(n_peak),
        n_took.as_secs_f64(),
        if n_next { "answered" } else { "FAILED" }
    );
    let home_empty = home_with(&root.join("unread"), json!({}));
    // The first start compiles mcpw's guests: not measured.
    unread(&home_empty, false);
    let (late_peak, stalled, late_took) = unread(&home_empty, true);
    let (read_peak, _, read_took) = unread(&home_empty, false);
    println!(
        "{UNREAD} tools/list unread: serve peak {:.1} MiB, the writes stopped after {stalled}, all answered {:.1} s after the first write; read as written: peak {:.1} MiB, {:.1} s\n",
        mib(late_peak),
        late_took.as_secs_f64(),
        mib(read_peak),
        read_took.as_secs_f64()
    );
    format!(
        "| 16 | {FLOOD_MIB} MiB on a server's stdout without a newline; {UNREAD} `tools/list` written to `serve` (stdio) with no answer read | \
         component: mcpw peak {:.1} MiB, next call {}; unread: serve peak {:.1} MiB (writes stopped after {stalled}) | \
         native process: mcpw peak {:.1} MiB; answers read as written: serve peak {:.1} MiB | \
         flood {:+.1} MiB, unread {:+.1} MiB |",
        mib(c_peak),
        if c_next { "answered" } else { "failed" },
        mib(late_peak),
        mib(n_peak),
        mib(read_peak),
        mib(c_peak) - mib(n_peak),
        mib(late_peak) - mib(read_peak)
    )
}
