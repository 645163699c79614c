//! Row 10: code mode. Part one: what a script's start and its inner calls
//! cost, against the same calls through the `mcp` tool (official TypeScript
//! SDK client, alternating rounds). Part two: five multi-step tasks on
//! server-filesystem and server-memory, each done by one script and by the
//! same calls one at a time: the result tokens an agent reads (characters / 4)
//! and the wall time of the calls (the model's own time left out).

use crate::shared::{
    ROUNDS, SdkPath, home_with, mcpw_env_json, median, run_with_timeout, sdk_rounds,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Calls per path and round in part one.
const CALLS: usize = 200;
/// Files under `files/`: their sizes in bytes.
const SIZES: [usize; 12] = [
    1200, 48000, 3100, 770, 25000, 9100, 640, 31000, 5200, 15000, 2100, 400,
];
const LOGS: usize = 10;
const LOG_LINES: usize = 300;
const DOCS: usize = 8;

pub(crate) fn row10_code_mode(everything: &str, root: &Path) -> String {
    println!("## 10. Code mode: script start and inner calls; five multi-step tasks");
    let (home, data) = setup(everything, root);
    let (start, per_call, five) = latency(&home);
    let tasks = tasks(&home, &data);
    let filtering: Vec<f64> = tasks
        .iter()
        .filter(|t| t.filters)
        .map(|t| t.saved())
        .collect();
    let least = filtering.iter().copied().fold(f64::INFINITY, f64::min);
    format!(
        "| 10 | code mode: script start p50; added per inner call; 5 echo in one script vs one by one; result tokens saved on the filtering tasks | {start:.2} ms; {per_call:+.3} ms; {:.2} ms vs {:.2} ms ({:.2}×) | `mcp` tool calls one at a time | at least {:.0} % fewer tokens |",
        five.0,
        five.1,
        five.0 / five.1,
        least * 100.0
    )
}

/// A HOME with the filesystem server over a generated tree, the memory server
/// and server-everything.
fn setup(everything: &str, root: &Path) -> (PathBuf, PathBuf) {
    let data = root.join("code-data");
    for dir in ["files", "logs", "docs"] {
        std::fs::create_dir_all(data.join(dir)).expect("create the tree");
    }
    for (i, size) in SIZES.iter().enumerate() {
        std::fs::write(data.join(format!("files/f{i:02}.txt")), "x".repeat(*size)).unwrap();
    }
    for l in 0..LOGS {
        let lines: Vec<String> = (0..LOG_LINES)
            .map(|n| {
                let level = if (n + l) % 37 == 0 { "ERROR" } else { "INFO" };
                format!(
                    "2026-11-27T10:{:02}:{:02} {level} request {n} of worker {l}",
                    n / 60,
                    n % 60
                )
            })
            .collect();
        std::fs::write(data.join(format!("logs/app{l}.log")), lines.join("\n")).unwrap();
    }
    for d in 0..DOCS {
        let body = "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n".repeat(40);
        std::fs::write(
            data.join(format!("docs/doc{d}.md")),
            format!("# Title {d}\n{body}"),
        )
        .unwrap();
    }
    let s = crate::shared::servers();
    let home = home_with(
        &root.join("code"),
        json!({
            "fs": {"command": "node", "args": [s.filesystem(), data.display().to_string()]},
            "memory": {"command": "node", "args": [s.memory()], "env": {"MEMORY_FILE_PATH": root.join("code-memory.json").display().to_string()}},
            "e": {"command": "node", "args": [everything, "stdio"]}
        }),
    );
    (home, data)
}

fn serve(home: &Path) -> Value {
    json!({"command": env!("CARGO_BIN_EXE_mcpw"), "args": ["serve"], "env": mcpw_env_json(home)})
}

/// Script start (p50 of `return 1` less p50 of the status, which neither
/// calls a server), the added cost of one inner call over the same call
/// through `mcp`, and 5 sequential echo calls in one script against five
/// through `mcp` (p50, ms).
fn latency(home: &Path) -> (f64, f64, (f64, f64)) {
    let five = "for (let i = 0; i < 5; i++) await tools.e__echo({message: 'm' + i}); return 5";
    let echo = json!({"tool": "e__echo", "args": {"message": "ping"}});
    let path = |name: &'static str, args: Value| SdkPath {
        name,
        connect: serve(home),
        tool: "mcp",
        args: args.clone(),
        warm_args: args,
    };
    let paths = [
        path("status, `mcp({})`", json!({})),
        path("echo through `mcp`", echo),
        path("script `return 1`", json!({"code": "return 1"})),
        path("script: 5 sequential echo", json!({"code": five})),
    ];
    let stats = sdk_rounds(&paths, CALLS, ROUNDS, home);
    let p50 = |i: usize| median(&stats[i].iter().map(|s| s.p50).collect::<Vec<_>>());
    println!("| path | p50 ms (median of {ROUNDS} rounds × {CALLS} calls) |\n|---|---|");
    for (i, p) in paths.iter().enumerate() {
        println!("| {} | {:.3} |", p.name, p50(i));
    }
    let start = p50(2) - p50(0);
    let per_call = (p50(3) - p50(2)) / 5.0 - (p50(1) - p50(0));
    let one_by_one = 5.0 * p50(1);
    println!(
        "script start {start:.2} ms; each inner call adds {per_call:+.3} ms over a call through `mcp`; \
         5 echo: one script {:.2} ms, one by one {one_by_one:.2} ms (target ≤ 1.3× + 5 ms = {:.2} ms)\n",
        p50(3),
        1.3 * one_by_one + 5.0
    );
    (start, per_call, (p50(3), one_by_one))
}

/// One task: the script, and the calls an agent makes one at a time.
struct Task {
    name: &'static str,
    script: String,
    calls: Vec<(&'static str, Value)>,
    /// The script keeps only part of what it reads.
    filters: bool,
    tokens: (usize, usize),
    ms: (f64, f64),
}

impl Task {
    fn saved(&self) -> f64 {
        1.0 - self.tokens.0 as f64 / self.tokens.1 as f64
    }
}

fn tasks(home: &Path, data: &Path) -> Vec<Task> {
    let mut tasks = definitions(data);
    for t in &mut tasks {
        measure(home, t);
    }
    println!(
        "| task | result tokens: script / one at a time | saved | calls' wall time: script / one at a time |"
    );
    println!("|---|---|---|---|");
    for t in &tasks {
        println!(
            "| {} ({} calls) | {} / {} | {:.0} % | {:.1} / {:.1} ms |",
            t.name,
            t.calls.len(),
            t.tokens.0,
            t.tokens.1,
            t.saved() * 100.0,
            t.ms.0,
            t.ms.1
        );
    }
    println!();
    tasks
}

/// Runs the task both ways in one session (after a warm-up that connects the
/// servers and loads the script guest) and keeps tokens and times.
fn measure(home: &Path, task: &mut Task) {
    let calls: Vec<Value> = task
        .calls
        .iter()
        .map(|(tool, args)| json!({"op": "callTool", "name": "mcp", "arguments": {"tool": tool, "args": args}}))
        .collect();
    let plan = json!({"connect": serve(home), "steps": [
        {"op": "callTool", "name": "mcp", "arguments": {"code": "await tools.fs__list_allowed_directories({}); await tools.memory__read_graph({}); return 0"}},
        {"op": "sequence", "steps": [{"op": "callTool", "name": "mcp", "arguments": {"code": task.script}}]},
        {"op": "sequence", "steps": calls},
    ]});
    let mut cmd = Command::new("node");
    cmd.arg(crate::shared::servers().client())
        .arg(plan.to_string())
        .current_dir(home);
    let out = run_with_timeout(cmd, task.name, Duration::from_secs(300));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: {e}\n{}",
            task.name,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let (script, one) = (&v["results"][1], &v["results"][2]);
    let tokens = |results: &Value| -> usize {
        results["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| text(r).len().div_ceil(4))
            .sum()
    };
    for r in script["results"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(one["results"].as_array().into_iter().flatten())
    {
        assert_ne!(r["isError"], json!(true), "{}: {r}", task.name);
    }
    task.tokens = (tokens(script), tokens(one));
    task.ms = (
        script["ms"].as_f64().unwrap_or(0.0),
        one["ms"].as_f64().unwrap_or(0.0),
    );
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The five tasks over the generated tree.
fn definitions(data: &Path) -> Vec<Task> {
    let root = data.display().to_string();
    let at = |sub: &str| format!("{root}/{sub}");
    let mut by_size: Vec<(usize, String)> = SIZES
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, format!("f{i:02}.txt")))
        .collect();
    by_size.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    let top: Vec<String> = by_size.iter().take(3).map(|(_, n)| n.clone()).collect();
    let entities: Vec<Value> = by_size
        .iter()
        .take(3)
        .map(|(s, n)| json!({"name": n, "entityType": "file", "observations": [format!("{s} bytes")]}))
        .collect();
    vec![
        largest_files(&at, entities),
        error_lines(&at),
        joined(&at, &top),
        extensions(&root),
        titles(&root, &at),
    ]
}

/// The three largest files, stored as memory entities.
fn largest_files(at: &dyn Fn(&str) -> String, entities: Vec<Value>) -> Task {
    Task::new(
        "the three largest files, stored as memory entities",
        format!(
            r#"const dir = {dir};
const listing = (await tools.fs__list_directory_with_sizes({{path: dir}})).content;
const unit = {{B: 1, KB: 1024, MB: 1048576}};
const files = listing.split("\n").filter((l) => l.startsWith("[FILE]")).map((l) => {{
  const [, name, n, u] = /^\[FILE\] (\S+)\s+([\d.]+) (B|KB|MB)/.exec(l);
  return {{name, bytes: Math.round(Number(n) * unit[u])}};
}}).sort((a, b) => b.bytes - a.bytes).slice(0, 3);
await tools.memory__create_entities({{entities: files.map((f) => ({{name: f.name, entityType: "file", observations: [`${{f.bytes}} bytes`]}}))}});
return files.map((f) => f.name);"#,
            dir = json!(at("files"))
        ),
        vec![
            (
                "fs__list_directory_with_sizes",
                json!({"path": at("files")}),
            ),
            ("memory__create_entities", json!({"entities": entities})),
        ],
        true,
    )
}

/// The ERROR lines of every log.
fn error_lines(at: &dyn Fn(&str) -> String) -> Task {
    Task::new(
        "ERROR lines across 10 logs (grep)",
        format!(
            r#"const dir = {dir};
const names = (await tools.fs__list_directory({{path: dir}})).content.split("\n").filter((l) => l.startsWith("[FILE]")).map((l) => l.slice(7));
const texts = await Promise.all(names.map((n) => tools.fs__read_text_file({{path: `${{dir}}/${{n}}`}})));
return names.map((n, i) => {{ const hits = texts[i].content.split("\n").filter((l) => l.includes("ERROR")); return {{file: n, errors: hits.length, first: hits[0]}}; }});"#,
            dir = json!(at("logs"))
        ),
        std::iter::once(("fs__list_directory", json!({"path": at("logs")})))
            .chain((0..LOGS).map(|l| {
                (
                    "fs__read_text_file",
                    json!({"path": at(&format!("logs/app{l}.log"))}),
                )
            }))
            .collect(),
        true,
    )
}

/// The memory entities joined with their files' details.
fn joined(at: &dyn Fn(&str) -> String, top: &[String]) -> Task {
    Task::new(
        "memory entities joined with their files' details",
        format!(
            r#"const dir = {dir};
const graph = await tools.memory__read_graph({{}});
const files = graph.entities.filter((e) => e.entityType === "file");
return await Promise.all(files.map(async (e) => {{
  const info = (await tools.fs__get_file_info({{path: `${{dir}}/${{e.name}}`}})).content;
  return {{name: e.name, noted: e.observations[0], size: /size: (\d+)/.exec(info)[1], modified: /modified: (.*)/.exec(info)[1]}};
}}));"#,
            dir = json!(at("files"))
        ),
        std::iter::once(("memory__read_graph", json!({})))
            .chain(top.iter().map(|n| {
                (
                    "fs__get_file_info",
                    json!({"path": at(&format!("files/{n}"))}),
                )
            }))
            .collect(),
        // A join keeps what it reads: it does not filter.
        false,
    )
}

/// The files of each extension in the whole tree.
fn extensions(root: &str) -> Task {
    Task::new(
        "files per extension in the whole tree",
        format!(
            r#"const tree = JSON.parse((await tools.fs__directory_tree({{path: {dir}}})).content);
const counts = {{}};
const walk = (nodes) => nodes.forEach((n) => {{ if (n.type === "directory") walk(n.children); else {{ const ext = n.name.split(".").pop(); counts[ext] = (counts[ext] || 0) + 1; }} }});
walk(tree);
return counts;"#,
            dir = json!(root)
        ),
        vec![("fs__directory_tree", json!({"path": root}))],
        true,
    )
}

/// The title of every Markdown file.
fn titles(root: &str, at: &dyn Fn(&str) -> String) -> Task {
    Task::new(
        "the title of every Markdown file",
        format!(
            r#"const found = (await tools.fs__search_files({{path: {dir}, pattern: "**/*.md"}})).content.split("\n").filter(Boolean);
const heads = await Promise.all(found.map((p) => tools.fs__read_text_file({{path: p, head: 1}})));
return heads.map((h) => h.content.replace(/^# /, ""));"#,
            dir = json!(root)
        ),
        std::iter::once((
            "fs__search_files",
            json!({"path": root, "pattern": "**/*.md"}),
        ))
        .chain((0..DOCS).map(|d| {
            (
                "fs__read_text_file",
                json!({"path": at(&format!("docs/doc{d}.md")), "head": 1}),
            )
        }))
        .collect(),
        false,
    )
}

impl Task {
    fn new(
        name: &'static str,
        script: String,
        calls: Vec<(&'static str, Value)>,
        filters: bool,
    ) -> Task {
        Task {
            name,
            script,
            calls,
            filters,
            tokens: (0, 0),
            ms: (0.0, 0.0),
        }
    }
}
