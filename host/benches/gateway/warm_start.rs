//! Row 4: warm start of `mcpw serve` (stdio) to the first `tools/list` answer,
//! per exposure, with the 1,287-tool warm cache; RSS after it.

use crate::shared::{
    CATALOG_TOOLS, TAG_ENV, mcpw_command, median, mib, ms, percentile, proc_kb, tag,
};
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const WARM_START_RUNS: usize = 10;

/// Spawn → first `tools/list` answer; then the child's RSS (kB) and the tool count.
async fn warm_start_once(home: &Path, exposure: &str) -> (Duration, u64, usize) {
    let mut cmd: tokio::process::Command =
        mcpw_command(home, &["serve", "--exposure", exposure]).into();
    cmd.env(TAG_ENV, tag()).kill_on_drop(true);
    let t = Instant::now();
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcpw serve");
    let pid = transport.id().expect("mcpw serve's pid");
    let client = match tokio::time::timeout(Duration::from_secs(60), ().serve(transport)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => panic!("mcpw serve --exposure {exposure}: initialize failed: {e}"),
        Err(_) => panic!("mcpw serve --exposure {exposure}: no initialize answer in 60 s"),
    };
    let tools = client
        .list_tools(None)
        .await
        .unwrap_or_else(|e| panic!("mcpw serve --exposure {exposure}: tools/list failed: {e}"));
    let elapsed = t.elapsed();
    let rss = proc_kb(pid, "VmRSS");
    let _ = client.cancel().await;
    (elapsed, rss, tools.tools.len())
}

pub(crate) async fn row4_warm_start(home: &Path, servers: usize) -> String {
    println!(
        "## 4. Warm start: spawn `mcpw serve` (stdio) → first `tools/list` answer, {servers} servers / 1,287 cached tools, {WARM_START_RUNS} runs each"
    );
    let exposures = ["proxy", "tool-search", "direct"];
    warm_start_once(home, "proxy").await; // compiles and caches the default guest if needed
    let mut samples: Vec<(Vec<Duration>, Vec<u64>, usize)> = exposures
        .iter()
        .map(|_| (Vec::new(), Vec::new(), 0))
        .collect();
    for round in 0..WARM_START_RUNS {
        for k in 0..exposures.len() {
            let i = (k + round) % exposures.len();
            let (d, rss, tools) = warm_start_once(home, exposures[i]).await;
            samples[i].0.push(d);
            samples[i].1.push(rss);
            samples[i].2 = tools;
        }
    }
    assert_eq!(
        samples[2].2, CATALOG_TOOLS,
        "direct exposure lists every cached tool"
    );
    let mut cells = Vec::new();
    for (name, (mut d, rss, tools)) in exposures.iter().zip(samples) {
        d.sort();
        let rss = median(&rss.iter().map(|&k| mib(k)).collect::<Vec<_>>());
        println!(
            "{name:<12} tools={tools:<5} p50 {:>7.1} ms   max {:>7.1} ms   RSS median {rss:.1} MiB",
            ms(percentile(&d, 0.5)),
            ms(*d.last().expect("samples"))
        );
        cells.push(format!(
            "{name} p50 {:.0} ms / max {:.0} ms, {rss:.1} MiB",
            ms(percentile(&d, 0.5)),
            ms(*d.last().expect("samples"))
        ));
    }
    println!();
    format!(
        "| 4 | Warm start of `mcpw serve` (stdio) to the first `tools/list` answer, {servers} servers / 1,287 tools in the warm cache, none started ({WARM_START_RUNS} runs) \
         | {} | — (no server process is started) | — |",
        cells.join("; ")
    )
}
