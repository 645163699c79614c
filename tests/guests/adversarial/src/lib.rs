//! A policy guest that misbehaves on request, so the host's sandbox can be tested
//! in obeyed/violated pairs. The request is carried by the input: a ranking
//! query, a tool name (naming) or `MCP_DIRECT_TOOLS` (direct tools).
//!
//! Commands: `loop`, `spin:N` (N iterations, then answer), `alloc:N` (N MiB,
//! touched), `panic`, `unreachable`, `recurse`, `catalog` / `lifecycle` / `calls`
//! (use that host import), `bad-index`, `dup`, `too-many`, `nan`, `unsorted`,
//! `count` (a per-instance call counter), `bad-name`, `dup-name`; and probes of
//! what the sandbox lets through, each scoring what it found: `env` (variables and
//! arguments seen), `fs` (1 if any file can be opened), `net` (1 if a socket
//! `net:PORT` (1 if a TCP connection to 127.0.0.1:PORT succeeds), `stdout`
//! (prints, then scores 1).

#![cfg(target_arch = "wasm32")]

wit_bindgen::generate!({ world: "policy", path: "../../../wit/since_v0.1.0" });

use exports::mcpw::plugin::direct_tools::{DirectOptions, Guest as DirectGuest};
use exports::mcpw::plugin::naming::{Guest as NamingGuest, NameOutcome, NamingOptions};
use exports::mcpw::plugin::ranking::{
    self, Guest as RankingGuest, GuestIndex, Hit, IndexOptions, SearchOptions,
};
use mcpw::plugin::types::{Entry, PluginError, Tool};
use mcpw::plugin::{calls, catalog, lifecycle};
use std::cell::Cell;
use std::hint::black_box;

thread_local! {
    static CALLS: Cell<u32> = const { Cell::new(0) };
}

#[allow(unconditional_recursion)]
fn recurse(n: u64) -> u64 {
    let buf = black_box([n; 64]);
    recurse(buf[0] + 1) + buf[63]
}

/// Acts out a sandbox command; returns false for anything else.
fn misbehave(cmd: &str) -> bool {
    if let Some(n) = cmd.strip_prefix("spin:") {
        let n: u64 = n.parse().unwrap_or(0);
        let mut x = 0u64;
        for i in 0..n {
            x = black_box(x.wrapping_add(i));
        }
        black_box(x);
        return false;
    }
    if let Some(mib) = cmd.strip_prefix("alloc:") {
        let bytes = mib.parse::<usize>().unwrap_or(0) << 20;
        black_box(vec![1u8; bytes]);
        return false;
    }
    match cmd {
        "loop" => loop {
            black_box(());
        },
        "panic" => panic!("adversarial guest panics on purpose"),
        "unreachable" => core::arch::wasm32::unreachable(),
        "recurse" => {
            black_box(recurse(0));
            false
        }
        _ => false,
    }
}

/// What the sandbox lets a guest see, as a number (0 = nothing).
fn probe(cmd: &str) -> Option<u32> {
    if let Some(port) = cmd.strip_prefix("net:") {
        return Some(
            std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap_or(9))).is_ok()
                as u32,
        );
    }
    Some(match cmd {
        "env" => (std::env::vars().count() + std::env::args().count()) as u32,
        "fs" => ["/", ".", "/etc/passwd"]
            .iter()
            .any(|p| std::fs::metadata(p).is_ok() || std::fs::read_dir(p).is_ok())
            as u32,
        "stdout" => {
            println!("a guest printing to stdout");
            eprintln!("a guest printing to stderr");
            1
        }
        _ => return None,
    })
}

/// Uses a host import; a denial comes back as the guest's error.
/// `lifecycle:SERVER` connects SERVER (scores its tool count); `calls:SERVER/TOOL`
/// calls TOOL with `{"message": "from a guest"}` (scores 1 unless it errs).
fn use_import(cmd: &str) -> Result<Option<u32>, PluginError> {
    if let Some(server) = cmd.strip_prefix("lifecycle:") {
        return Ok(Some(lifecycle::connect(server)?.tool_count));
    }
    if let Some((server, tool)) = cmd.strip_prefix("calls:").and_then(|t| t.split_once('/')) {
        let result = calls::call_tool(server, tool, r#"{"message": "from a guest"}"#)?;
        return Ok(Some(u32::from(
            !result.is_error && result.content.contains("from a guest"),
        )));
    }
    Ok(Some(match cmd {
        "catalog" => catalog::servers()?.len() as u32,
        "lifecycle" => {
            lifecycle::connect("any")?;
            1
        }
        "calls" => {
            calls::call_tool("any", "any", "{}")?;
            1
        }
        _ => return Ok(None),
    }))
}

struct Adversary;

impl NamingGuest for Adversary {
    fn names(tools: Vec<Tool>, _options: NamingOptions) -> Result<Vec<NameOutcome>, PluginError> {
        for t in &tools {
            misbehave(&t.name);
            use_import(&t.name)?;
        }
        Ok(tools
            .iter()
            .enumerate()
            .map(|(i, t)| match t.name.as_str() {
                "bad-name" => NameOutcome::Named("has space".into()),
                "dup-name" => NameOutcome::Named("same".into()),
                _ => NameOutcome::Named(format!("adv_{i}")),
            })
            .collect())
    }
}

impl DirectGuest for Adversary {
    fn select(tools: Vec<Entry>, options: DirectOptions) -> Result<Vec<u32>, PluginError> {
        let cmd = options.env_override.unwrap_or_default();
        misbehave(&cmd);
        use_import(&cmd)?;
        Ok(match cmd.as_str() {
            "bad-index" => vec![tools.len() as u32],
            "unsorted" if tools.len() > 1 => vec![1, 0],
            _ => Vec::new(),
        })
    }
}

struct Index {
    count: u32,
}

impl RankingGuest for Adversary {
    type Index = Index;
}

impl GuestIndex for Index {
    fn build(entries: Vec<Entry>, options: IndexOptions) -> Result<ranking::Index, PluginError> {
        misbehave(options.profile.as_deref().unwrap_or(""));
        Ok(ranking::Index::new(Index {
            count: entries.len() as u32,
        }))
    }

    fn search(&self, query: String, options: SearchOptions) -> Result<Vec<Hit>, PluginError> {
        misbehave(&query);
        let limit = options.limit.min(self.count);
        let hits = |n: u32| {
            (0..n)
                .map(|i| Hit {
                    index: i,
                    score: (n - i) as f32,
                })
                .collect::<Vec<_>>()
        };
        if let Some(n) = probe(&query) {
            return Ok(vec![Hit {
                index: 0,
                score: n as f32,
            }]);
        }
        if let Some(n) = use_import(&query)? {
            return Ok(vec![Hit {
                index: 0,
                score: n as f32,
            }]
            .into_iter()
            .take(limit as usize)
            .collect());
        }
        Ok(match query.as_str() {
            "bad-index" => vec![Hit {
                index: self.count + 5,
                score: 1.0,
            }],
            "dup" => vec![
                Hit {
                    index: 0,
                    score: 2.0,
                },
                Hit {
                    index: 0,
                    score: 1.0,
                },
            ],
            "too-many" => hits(self.count.min(options.limit + 1)),
            "nan" => vec![Hit {
                index: 0,
                score: f32::NAN,
            }],
            "unsorted" => vec![
                Hit {
                    index: 0,
                    score: 1.0,
                },
                Hit {
                    index: 1,
                    score: 2.0,
                },
            ],
            "count" => {
                let n = CALLS.with(|c| {
                    c.set(c.get() + 1);
                    c.get()
                });
                vec![Hit {
                    index: 0,
                    score: n as f32,
                }]
            }
            _ => hits(limit),
        })
    }
}

export!(Adversary);
