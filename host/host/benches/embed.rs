//! What search by meaning costs in the model (`cargo bench -p mcpw-host --bench
//! embed`), with all-MiniLM-L6-v2 as a registry package ships it:
//!
//! 1. loading the model;
//! 2. a query's vector, the dev queries one at a time on this thread (what a
//!    search waits for): wall time and this thread's CPU time, p50 / p99;
//! 3. the bench catalog's 1,287 tool texts (`server name: description`)
//!    embedded cold in one call, as a background run does: wall and process
//!    CPU time;
//! 4. the process's peak resident memory.
//!
//! The search itself (the guest's fusion at 1.3k and 10k tools) is measured by
//! `mcpw plugin bench --model M [--scale 8]`.

use mcpw_test_support::servers::servers;
use mcpw_test_support::stats::{ms, percentile, proc_kb};
use std::time::{Duration, Instant};

/// Rounds over the 150 dev queries.
const ROUNDS: usize = 5;

fn main() {
    let workspace = mcpw_test_support::workspace();
    let dir = servers(env!("CARGO_TARGET_TMPDIR")).minilm();

    let started = Instant::now();
    let model = mcpw_host::embed::Model::load(&dir).expect("the model loads");
    println!("load: {:.0?}", started.elapsed());

    let queries: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(workspace.join("tests/fixtures/queries_dev.json"))
            .expect("the dev queries"),
    )
    .expect("the dev queries are JSON");
    let queries: Vec<String> = queries
        .iter()
        .map(|q| q["query"].as_str().expect("a query").to_string())
        .collect();
    for q in queries.iter().take(10) {
        model.embed(&[q]).expect("warm-up");
    }
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for q in &queries {
            let (w0, c0) = (Instant::now(), thread_cpu());
            let v = model.embed(&[q]).expect("a query's vector");
            cpu.push(thread_cpu() - c0);
            wall.push(w0.elapsed());
            assert_eq!(v[0].len(), 384);
        }
    }
    wall.sort();
    cpu.sort();
    println!(
        "query vector ({} queries): wall p50 {:.2} ms p99 {:.2} ms, CPU p50 {:.2} ms p99 {:.2} ms",
        wall.len(),
        ms(percentile(&wall, 0.5)),
        ms(percentile(&wall, 0.99)),
        ms(percentile(&cpu, 0.5)),
        ms(percentile(&cpu, 0.99)),
    );

    let tools = mcpw_core::catalog::load_catalog(&workspace.join("tests/fixtures/catalog.json"))
        .expect("the catalog");
    let texts: Vec<String> = tools
        .iter()
        .map(|t| {
            let name = t.name.replace(['_', '-'], " ");
            format!("{} {name}: {}", t.server, t.description)
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (w0, c0) = (Instant::now(), process_cpu());
    let vectors = model.embed(&texts).expect("the catalog's vectors");
    assert_eq!(vectors.len(), texts.len());
    println!(
        "catalog ({} texts, cold): wall {:.1} s, CPU {:.1} s",
        texts.len(),
        w0.elapsed().as_secs_f64(),
        (process_cpu() - c0).as_secs_f64()
    );
    println!(
        "peak RSS: {} MiB",
        proc_kb(std::process::id(), "VmHWM") / 1024
    );
}

fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn thread_cpu() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn process_cpu() -> Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}
