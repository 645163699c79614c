//! Row 11: what guards cost. `echo` calls through `mcpw serve --exposure
//! direct` with no guard, with the example redaction guard, and with it and
//! the audit trail; a 1 MB text result with and without the guard (the
//! guard reads every string of a result: its cost grows with the size).

use crate::shared::{ROUNDS, SdkPath, home_with, mcpw_env_json, median, sdk_rounds};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Calls per path and round.
const CALLS: usize = 200;
/// The big result's size.
const BIG: usize = 1_000_000;

/// The example guard, built for wasm32-wasip2.
fn redactor() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    mcpw_guest_build::build_into(
        &workspace,
        "mcpw-guest-guard",
        &workspace.join("target/guests"),
    )
}

/// A HOME with server-everything (`e`) and misbehave.mjs (`m`) under `settings`.
fn home(root: &Path, name: &str, everything: &str, misbehave: &str, settings: Value) -> PathBuf {
    let home = home_with(
        &root.join(name),
        json!({"e": {"command": "node", "args": [everything, "stdio"]},
               // The guard's cost on a whole result: no result budget.
               "m": {"command": "node", "args": [misbehave, "ok"], "resultBudget": 0}}),
    );
    let file = home.join(".config/mcpw/mcp.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    config["settings"] = settings;
    std::fs::write(&file, config.to_string()).unwrap();
    home
}

pub(crate) fn row11_guards(everything: &str, misbehave: &str, root: &Path) -> String {
    println!("## 11. Guards: a call's cost with the example redaction guard, and the audit trail");
    let guard = redactor();
    let guarded = json!({"guards": [guard]});
    let audited = json!({"guards": [guard], "audit": {"path": root.join("guards-audit.jsonl")}});
    let homes = [
        home(root, "guards-none", everything, misbehave, json!({})),
        home(root, "guards-on", everything, misbehave, guarded),
        home(root, "guards-audit", everything, misbehave, audited),
    ];
    // The warm-up call's result is printed whole by the client: keep it small.
    let path = |name: &'static str, home: &Path, tool: &'static str, args: Value| SdkPath {
        name,
        connect: json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", "direct"],
                        "env": mcpw_env_json(home)}),
        tool,
        warm_args: if tool == "m__big" {
            json!({"bytes": 10})
        } else {
            args.clone()
        },
        args,
    };
    let echo = json!({"message": "ping"});
    let big = json!({"bytes": BIG});
    let paths = [
        path("echo, no guard", &homes[0], "e__echo", echo.clone()),
        path("echo, redaction guard", &homes[1], "e__echo", echo.clone()),
        path("echo, guard + audit trail", &homes[2], "e__echo", echo),
        path("1 MB text, no guard", &homes[0], "m__big", big.clone()),
        path("1 MB text, redaction guard", &homes[1], "m__big", big),
    ];
    let n = |i: usize| if i >= 3 { CALLS / 10 } else { CALLS };
    let mut stats = vec![Vec::new(); paths.len()];
    for round in 0..ROUNDS {
        for k in 0..paths.len() {
            let i = (k + round) % paths.len();
            stats[i].extend(sdk_rounds(std::slice::from_ref(&paths[i]), n(i), 1, root).remove(0));
        }
    }
    let p50 = |i: usize| median(&stats[i].iter().map(|s| s.p50).collect::<Vec<_>>());
    println!("| path | p50 ms (median of {ROUNDS} rounds) |\n|---|---|");
    for (i, p) in paths.iter().enumerate() {
        println!("| {} | {:.3} |", p.name, p50(i));
    }
    let mb = BIG as f64 / 1_000_000.0;
    let (guard_cost, audit_cost) = (p50(1) - p50(0), p50(2) - p50(1));
    let per_mb = (p50(4) - p50(3)) / mb;
    println!(
        "the guard adds {guard_cost:+.3} ms to a small call; the audit line {audit_cost:+.3} ms; \
         the guard on a large result {per_mb:+.2} ms per MB\n"
    );
    format!(
        "| 11 | guards: added to an `echo` by the redaction guard; by the audit trail; by the guard on a large result | {guard_cost:+.3} ms; {audit_cost:+.3} ms; {per_mb:+.2} ms/MB | no guard, no trail | {:.2}× a small call |",
        p50(1) / p50(0)
    )
}
