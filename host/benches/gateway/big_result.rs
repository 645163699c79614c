//! Row 5: a 10 MB tool result (`misbehave.mjs ok`, tool `big`) directly,
//! through the byte relay and through `mcpw serve --exposure direct`.

use crate::shared::{Relay, SdkPath, mcpw_env_json, median, sdk_rounds};
use serde_json::json;
use std::path::Path;

const BIG_BYTES: usize = 10_000_000;
const BIG_CALLS_PER_ROUND: usize = 8;
/// More rounds than the other rows: 10 MB calls are noisy and few.
const BIG_ROUNDS: usize = 5;

pub(crate) fn row5_big_result(misbehave: &str, home: &Path, relay: &Relay) -> String {
    println!(
        "## 5. A {BIG_BYTES}-byte tool result (misbehave.mjs `big`), TS SDK client, {BIG_CALLS_PER_ROUND} calls × {BIG_ROUNDS} alternating rounds"
    );
    let big = json!({"bytes": BIG_BYTES});
    let small = json!({"bytes": 1});
    let paths = [
        SdkPath {
            name: "direct",
            connect: json!({"command": "node", "args": [misbehave, "ok"]}),
            tool: "big",
            args: big.clone(),
            warm_args: small.clone(),
        },
        SdkPath {
            name: "byte relay",
            connect: relay.connect(&["node", misbehave, "ok"]),
            tool: "big",
            args: big.clone(),
            warm_args: small.clone(),
        },
        SdkPath {
            name: "mcpw serve --exposure direct",
            connect: json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve", "--exposure", "direct"],
                            "env": mcpw_env_json(home)}),
            tool: "m__big",
            args: big,
            warm_args: small,
        },
    ];
    let stats = sdk_rounds(&paths, BIG_CALLS_PER_ROUND, BIG_ROUNDS, home);
    let p50: Vec<f64> = stats
        .iter()
        .map(|s| median(&s.iter().map(|x| x.p50).collect::<Vec<_>>()))
        .collect();
    for (i, p) in paths.iter().enumerate() {
        let rounds: Vec<String> = stats[i].iter().map(|s| format!("{:.1}", s.p50)).collect();
        println!(
            "{:<34} p50 {:>8.1} ms   p50 per round: {}",
            p.name,
            p50[i],
            rounds.join(" ")
        );
    }
    println!(
        "mcpw/relay p50 = {:.2}×; mcpw/direct = {:.2}×\n",
        p50[2] / p50[1],
        p50[2] / p50[0]
    );
    format!(
        "| 5 | A 10 MB tool result (one text block), stdio, TS SDK client ({BIG_CALLS_PER_ROUND} calls × {BIG_ROUNDS} rounds; p50 = median of the rounds' p50) \
         | `mcpw serve --exposure direct`: p50 {:.1} ms | byte relay p50 {:.1} ms; direct p50 {:.1} ms | {:.2}× the relay ({:.2}× direct) |",
        p50[2],
        p50[1],
        p50[0],
        p50[2] / p50[1],
        p50[2] / p50[0]
    )
}
