//! Native evaluation of the ranking profiles on a catalog and labelled queries,
//! for working on the ranking without a wasm round trip:
//! `cargo run -p mcpw-guest-default --release --example eval -- CATALOG QUERIES [PROFILE] [--misses]`
//! Metrics as `mcpw plugin bench` (top 10). `--dump FILE` writes each query's
//! top 100 with scores as JSON, for offline score-fusion experiments.

use mcpw_guest_default::model::{Entry, Tool};
use mcpw_guest_default::ranking::{Index, IndexOptions, SearchOptions};
use serde_json::Value;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let catalog: Value = serde_json::from_str(&std::fs::read_to_string(&args[0]).unwrap()).unwrap();
    let queries: Value = serde_json::from_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let profile = args.get(2).filter(|a| !a.starts_with("--")).cloned();
    let misses = args.iter().any(|a| a == "--misses");
    let dump_to = args
        .iter()
        .position(|a| a == "--dump")
        .and_then(|i| args.get(i + 1).cloned());
    let mut dump = Vec::new();
    let mut entries = Vec::new();
    for s in catalog["servers"].as_array().unwrap() {
        let server = s["name"].as_str().unwrap();
        for t in s["tools"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            let mut tool = Tool::new(server, name, t["description"].as_str().unwrap_or(""));
            tool.input_schema = t
                .get("inputSchema")
                .map(|v| v.to_string())
                .unwrap_or_else(|| "{}".into());
            entries.push(Entry {
                name: format!("{}__{}", server.replace('-', "_"), name),
                tool,
            });
        }
    }
    let ids: Vec<String> = entries
        .iter()
        .map(|e| format!("{}/{}", e.tool.server, e.tool.name))
        .collect();
    let t = Instant::now();
    let index = Index::build(
        entries,
        IndexOptions {
            profile,
            ..Default::default()
        },
    )
    .unwrap();
    let build_ms = t.elapsed().as_secs_f64() * 1000.0;
    let (mut r1, mut r5, mut mrr, mut ndcg) = (0.0, 0.0, 0.0, 0.0);
    let qs = queries.as_array().unwrap();
    let mut times = Vec::new();
    for q in qs {
        let text = q["query"].as_str().unwrap();
        let rel: Vec<&str> = q["relevant"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let t = Instant::now();
        let hits = index
            .search(
                text,
                &SearchOptions {
                    limit: if dump_to.is_some() { 100 } else { 10 },
                    ..Default::default()
                },
            )
            .unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e6);
        if dump_to.is_some() {
            let top: Vec<Value> = hits
                .iter()
                .map(|h| serde_json::json!([ids[h.index as usize], h.score]))
                .collect();
            dump.push(serde_json::json!({"query": text, "hits": top}));
        }
        let hits = &hits[..hits.len().min(10)];
        let ranked: Vec<&str> = hits
            .iter()
            .map(|h| ids[h.index as usize].as_str())
            .collect();
        let is_rel = |id: &&str| rel.contains(id);
        r1 += ranked.first().is_some_and(&is_rel) as u8 as f64;
        r5 += ranked.iter().take(5).filter(|d| is_rel(d)).count() as f64 / rel.len().min(5) as f64;
        mrr += ranked
            .iter()
            .position(&is_rel)
            .map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
        let dcg: f64 = ranked
            .iter()
            .enumerate()
            .filter(|(_, d)| is_rel(d))
            .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
            .sum();
        let idcg: f64 = (0..rel.len().min(10))
            .map(|i| 1.0 / (i as f64 + 2.0).log2())
            .sum();
        ndcg += dcg / idcg;
        let this_r5 =
            ranked.iter().take(5).filter(|d| is_rel(d)).count() as f64 / rel.len().min(5) as f64;
        if args.iter().any(|a| a == "--recall") && this_r5 < 1.0 {
            let missing: Vec<&&str> = rel
                .iter()
                .filter(|r| !ranked.iter().take(5).any(|d| d == *r))
                .collect();
            println!(
                "R@5 {this_r5:.2}  {text:<50} missing {missing:?}  top5 {:?}",
                &ranked[..ranked.len().min(5)]
            );
        }
        if misses && !ranked.first().is_some_and(&is_rel) {
            let found = ranked
                .iter()
                .position(&is_rel)
                .map_or("--".to_string(), |p| (p + 1).to_string());
            println!(
                "{found:>3}  {text:<50} want {:?}  got {:?}",
                &rel[..rel.len().min(2)],
                &ranked[..ranked.len().min(3)]
            );
        }
    }
    if let Some(path) = dump_to {
        std::fs::write(&path, serde_json::to_string(&dump).unwrap()).unwrap();
    }
    let n = qs.len() as f64;
    times.sort_by(f64::total_cmp);
    println!(
        "R@1 {:.3}  R@5 {:.3}  MRR@10 {:.3}  nDCG@10 {:.3}   build {build_ms:.1} ms  query p50 {:.0} µs p99 {:.0} µs",
        r1 / n,
        r5 / n,
        mrr / n,
        ndcg / n,
        times[times.len() / 2],
        times[(times.len() as f64 * 0.99) as usize]
    );
}
