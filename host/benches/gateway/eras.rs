//! Row 15: what a client of 2026-07-28 pays for its calls being held. Such a
//! client takes no requests from a server, so mcpw runs each of its tool
//! calls in a task of its own, ready to hand questions back as the call's
//! `inputRequired` (`gateway/held.rs`); a client of the handshake era is
//! answered on its request's own task. The official Python SDK's `Client`,
//! in `auto` mode (2026-07-28) and in `legacy` mode (2025-11-25), makes
//! sequential calls to a Python SDK server over stdio, directly and through
//! `mcpw serve` (stdio, direct exposure), in alternating rounds. The held
//! path's cost is what mcpw adds for the one mode less what it adds for the
//! other, which leaves out what the SDK itself spends on each revision.

use crate::shared::servers;
use crate::shared::{ROUNDS, home_with, median, run_with_timeout};
use mcpw_test_support::isolated_mcpw;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// Calls per path and round.
const CALLS: usize = 300;

struct Path4 {
    name: &'static str,
    mode: &'static str,
    through_mcpw: bool,
}

const PATHS: [Path4; 4] = [
    Path4 {
        name: "direct, legacy (2025-11-25)",
        mode: "legacy",
        through_mcpw: false,
    },
    Path4 {
        name: "direct, auto (2026-07-28)",
        mode: "auto",
        through_mcpw: false,
    },
    Path4 {
        name: "mcpw, legacy (2025-11-25)",
        mode: "legacy",
        through_mcpw: true,
    },
    Path4 {
        name: "mcpw, auto (2026-07-28, held)",
        mode: "auto",
        through_mcpw: true,
    },
];

pub(crate) fn row15_eras(root: &Path) -> String {
    println!(
        "## 15. The held path: Python SDK client in both eras, sequential calls over stdio, {CALLS} calls × {ROUNDS} alternating rounds"
    );
    let python = servers().python_bin("python");
    let server = mcpw_test_support::workspace().join("tests/servers/py_logging_server.py");
    let server = server.display().to_string();
    let home = home_with(
        &root.join("eras"),
        json!({"py": {"command": &python, "args": [&server]}}),
    );
    let mut p50 = vec![Vec::new(); PATHS.len()];
    for round in 0..ROUNDS {
        for k in 0..PATHS.len() {
            let i = (k + round) % PATHS.len();
            let target = match PATHS[i].through_mcpw {
                true => json!([env!("CARGO_BIN_EXE_mcpw"), "serve", "--exposure", "direct"]),
                false => json!([&python, &server]),
            };
            let tool = if PATHS[i].through_mcpw {
                "py__logged_tool"
            } else {
                "logged_tool"
            };
            p50[i].push(timed(&python, &home, PATHS[i].mode, &target, tool));
        }
    }
    report(&p50)
}

/// p50 (ms) of [`CALLS`] sequential calls of `tool`, measured in the client.
fn timed(python: &str, home: &Path, mode: &str, target: &Value, tool: &str) -> f64 {
    let plan = json!({"bench": {"tool": tool, "args": {}, "n": CALLS}});
    let script = mcpw_test_support::workspace().join("tests/servers/py_client.py");
    let mut cmd = isolated_mcpw(python, home);
    cmd.arg(script)
        .args([mode, &target.to_string(), &plan.to_string()])
        .current_dir(home);
    let what = format!("the Python SDK client ({mode}, {target})");
    let out = run_with_timeout(cmd, &what, Duration::from_secs(300));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: no JSON on stdout ({e}):\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["bench"]["p50"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what} failed: {v}"))
}

fn report(p50: &[Vec<f64>]) -> String {
    for (path, rounds) in PATHS.iter().zip(p50) {
        let each: Vec<String> = rounds.iter().map(|v| format!("{v:.3}")).collect();
        println!(
            "{:<32} p50 {:>7.3} ms   per round: {}",
            path.name,
            median(rounds),
            each.join(" ")
        );
    }
    // Added per round (same round, same machine state), then the median.
    let added = |mode: usize| {
        median(
            &(0..ROUNDS)
                .map(|r| p50[mode + 2][r] - p50[mode][r])
                .collect::<Vec<_>>(),
        )
    };
    let (legacy, auto) = (added(0), added(1));
    println!(
        "mcpw adds p50 {legacy:+.3} ms for a legacy client, {auto:+.3} ms for a 2026-07-28 one: the held path {:+.3} ms\n",
        auto - legacy
    );
    format!(
        "| 15 | The held path: sequential calls of the Python SDK client to a Python SDK server over stdio ({CALLS} calls × {ROUNDS} rounds) \
         | through `mcpw serve --exposure direct`: p50 {:.3} ms (2026-07-28) / {:.3} ms (2025-11-25) \
         | direct: p50 {:.3} / {:.3} ms | mcpw adds {auto:+.3} ms (2026-07-28), {legacy:+.3} ms (2025-11-25): the held path {:+.3} ms |",
        median(&p50[3]),
        median(&p50[2]),
        median(&p50[1]),
        median(&p50[0]),
        auto - legacy
    )
}
