//! Row 12: big results. Ten large results of real servers (server-filesystem,
//! server-memory, mcp-server-git), called through the host: the tokens an
//! agent reads with no budget, with the default budget's preview, with a jq
//! projection, and written as TOON; what cutting a result costs per MB; and
//! what the store holds once all ten are kept.

use crate::shared::servers;
use mcpw::results;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Instant;

/// One measured result: the call, and the projection an agent would ask.
struct Case {
    what: &'static str,
    tool: &'static str,
    args: Value,
    select: &'static str,
}

/// The data the servers read: a tree of 20,000 files, a 5 MB log, a git
/// history, a memory graph of 2,000 entities.
fn data(root: &Path) -> std::path::PathBuf {
    let data = root.join("big-results-data");
    for d in 0..20 {
        let dir = data.join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..1000 {
            std::fs::write(dir.join(format!("f{f:04}.txt")), format!("{f}")).unwrap();
        }
    }
    let log: String = (0..90_000)
        .map(|i| {
            format!(
                "2026-11-27T08:{:02}:{:02}Z INFO request {i} served in {} ms\n",
                i / 60 % 60,
                i % 60,
                i % 97
            )
        })
        .collect();
    std::fs::write(data.join("server.log"), log).unwrap();
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/catalog.json");
    std::fs::copy(catalog, data.join("catalog.json")).unwrap();
    data
}

fn cases(data: &Path) -> Vec<Case> {
    let p = |rel: &str| data.join(rel).display().to_string();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .display()
        .to_string();
    vec![
        Case {
            what: "fs directory_tree, 20,000 entries",
            tool: "fs__directory_tree",
            args: json!({"path": p("")}),
            select: "[.[] | {name, files: (.children // [] | length)}]",
        },
        Case {
            what: "fs read_text_file, 5 MB log",
            tool: "fs__read_text_file",
            args: json!({"path": p("server.log")}),
            select: "",
        },
        Case {
            what: "fs read_text_file, 860 KB tool catalog (JSON)",
            tool: "fs__read_text_file",
            args: json!({"path": p("catalog.json")}),
            select: "[.servers[] | {server: .name, tools: (.tools | length)}]",
        },
        Case {
            what: "fs search_files *.txt (20,000 paths)",
            tool: "fs__search_files",
            args: json!({"path": p(""), "pattern": "**/*.txt"}),
            select: "",
        },
        Case {
            what: "fs list_directory_with_sizes, 1,000 files",
            tool: "fs__list_directory_with_sizes",
            args: json!({"path": p("d00")}),
            select: "",
        },
        Case {
            what: "fs read_multiple_files, 2,000 files",
            tool: "fs__read_multiple_files",
            args: json!({"paths": (0..2000).map(|f| p(&format!("d{:02}/f{:04}.txt", f / 1000, f % 1000))).collect::<Vec<_>>()}),
            select: "",
        },
        Case {
            what: "memory read_graph, 2,000 entities",
            tool: "memory__read_graph",
            args: json!({}),
            select: "[.entities[] | .name] | .[:100]",
        },
        Case {
            what: "memory search_nodes, 2,000 hits",
            tool: "memory__search_nodes",
            args: json!({"query": "file"}),
            select: "[.entities[] | select(.entityType == \"file\") | .name] | length",
        },
        Case {
            what: "git git_log, 600 commits",
            tool: "git__git_log",
            args: json!({"repo_path": repo, "max_count": 600}),
            select: "",
        },
        Case {
            what: "memory open_nodes, 500 entities",
            tool: "memory__open_nodes",
            args: json!({"names": (0..500).map(|i| format!("file-{i}")).collect::<Vec<_>>()}),
            select: "[.entities[] | {name, observations: (.observations | length)}]",
        },
    ]
}

/// Tokens of a result as the client gets it.
fn tokens(result: &Value) -> usize {
    results::tokens(results::json_size(result))
}

pub(crate) fn row12_big_results(root: &Path) -> String {
    println!(
        "## 12. Big results: tokens an agent reads of 10 large real results, and what cutting them costs"
    );
    let data = data(root);
    let (rt, host) = start(root, &data);
    let store = mcpw::kept::Store::new(Default::default());
    let shelf = store.shelf();
    println!("| Result | Whole | Preview (10,000-token budget) | Projection | TOON | Cut in |");
    println!("|---|---|---|---|---|---|");
    let (mut whole_sum, mut preview_sum, mut bytes_sum, mut cut_secs) = (0, 0, 0usize, 0.0);
    for case in cases(&data) {
        let (whole, shown, size, took) = measure(&rt, &host, &shelf, &case);
        whole_sum += whole;
        preview_sum += shown;
        bytes_sum += size;
        cut_secs += took;
    }
    let per_mb = cut_secs * 1e3 / (bytes_sum as f64 / (1 << 20) as f64);
    let held = store.held();
    println!(
        "\nAll ten: {whole_sum} tokens whole, {preview_sum} with the budget ({:.1} %); cutting costs {per_mb:.1} ms per MB of result; the store holds {:.1} MB for them.\n",
        100.0 * preview_sum as f64 / whole_sum as f64,
        held as f64 / (1 << 20) as f64
    );
    rt.block_on(host.shutdown());
    format!(
        "| 12 | 10 large real results: tokens read with the default budget | {preview_sum} tokens ({per_mb:.1} ms/MB to cut) | {whole_sum} tokens whole | {:.1} % |",
        100.0 * preview_sum as f64 / whole_sum as f64
    )
}

/// A host over the three servers, the memory graph filled: 2,000 entities
/// of three observations each.
fn start(root: &Path, data: &Path) -> (tokio::runtime::Runtime, mcpw::host::Host) {
    let home = root.join("big-results-home");
    let fs = |budget: Value| json!({"command": "node", "args": [servers().filesystem(), data.display().to_string()], "resultBudget": budget});
    let config = json!({"mcpServers": {
        "fs": fs(Value::Null),
        "memory": {"command": "node", "args": [servers().memory()],
                   "env": {"MEMORY_FILE_PATH": root.join("memory.jsonl").display().to_string()}},
        "git": {"command": servers().python_bin("mcp-server-git")},
    }});
    std::fs::create_dir_all(home.join(".config/mcpw")).unwrap();
    std::fs::write(home.join(".config/mcpw/mcp.json"), config.to_string()).unwrap();
    let env = mcpw::paths::Environment::from_pairs([
        ("HOME", home.display().to_string()),
        ("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB.to_string()),
    ]);
    let sources = mcpw::config::ConfigSources {
        user_value: None,
        user_file: None,
        project_dir: Some(home.clone()),
        env: env.clone(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let host = rt.block_on(async {
        let mut options = mcpw::host::HostOptions::for_env(&env);
        options.maintenance = false;
        mcpw::host::Host::start(mcpw::config::load(&sources), env.clone(), options)
            .await
            .unwrap()
    });
    let entities: Vec<Value> = (0..2000)
        .map(|i| json!({"name": format!("file-{i}"), "entityType": if i % 4 == 0 { "module" } else { "file" },
                        "observations": [format!("{} bytes", i * 37), format!("owner team-{}", i % 9), "reviewed"]}))
        .collect();
    rt.block_on(host.call(
        "memory__create_entities",
        json!({"entities": entities}).as_object().cloned(),
    ))
    .unwrap();
    (rt, host)
}

/// Calls `case`'s tool and prints its row; (tokens whole, tokens shown
/// with the default budget, bytes, seconds the cut took).
fn measure(
    rt: &tokio::runtime::Runtime,
    host: &mcpw::host::Host,
    shelf: &mcpw::kept::Shelf,
    case: &Case,
) -> (usize, usize, usize, f64) {
    let out = rt
        .block_on(host.call(case.tool, case.args.as_object().cloned()))
        .unwrap_or_else(|e| panic!("{}: {e}", case.what));
    let raw = out.mcp_result;
    let whole = tokens(&raw);
    let size = results::json_size(&raw);
    // The gateway's note takes about 600 bytes of the budget.
    let started = Instant::now();
    let preview = results::preview(
        &raw,
        results::DEFAULT_BUDGET * results::CHARS_PER_TOKEN,
        600,
    );
    let took = started.elapsed().as_secs_f64();
    let shown = (tokens(&preview.result) + 150).min(whole);
    results::keep(shelf, &raw, case.tool.into());
    let input = json_of(&raw);
    let projected = match (&input, case.select) {
        (Some(v), s) if !s.is_empty() => {
            let v = rt
                .block_on(host.select(s, v))
                .unwrap_or_else(|e| panic!("{}: {e}", case.what));
            format!("{}", results::tokens(v.to_string().len()))
        }
        _ => "—".into(),
    };
    let toon = input.as_ref().map_or("—".into(), |v| {
        let t = results::encode::encode(v, mcpw::config::results::Format::Toon).unwrap();
        let json = results::tokens(v.to_string().len());
        format!(
            "{} ({:.0} % of JSON)",
            results::tokens(t.len()),
            100.0 * results::tokens(t.len()) as f64 / json.max(1) as f64
        )
    });
    let what = case.what;
    println!(
        "| {what} | {whole} | {shown} | {projected} | {toon} | {:.1} ms |",
        took * 1e3
    );
    (whole, shown, size, took)
}

/// A result's JSON: its one text block when that parses as JSON, or its
/// structured content when it has no text. (A text that is not JSON, with
/// a structured copy of itself, has none worth a projection or TOON.)
fn json_of(raw: &Value) -> Option<Value> {
    let texts: Vec<&str> = raw["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect();
    match texts.as_slice() {
        [] => raw
            .get("structuredContent")
            .filter(|s| !s.is_null())
            .cloned(),
        [one] => results::parse_json(one),
        // Prose (a log, a file): no JSON to project or write as TOON.
        _ => None,
    }
}
