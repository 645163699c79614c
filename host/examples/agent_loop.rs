//! An agent loop embedding mcpw as a library.
//!
//! `cargo run --example agent_loop [CONFIG.json]` — without a config it uses
//! server-everything through npx. Each "task" stands in for what a model would
//! decide: search the catalog, read the best tool's parameters, call it.

use mcpw::host::{Host, HostEvent};
use mcpw::plugin::SearchOptions;
use mcpw::present::{self, Content};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = match std::env::args().nth(1) {
        Some(path) => Host::from_config_file(path).await?,
        None => {
            Host::from_config_value(json!({"mcpServers": {"everything": {
                "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
            }}}))
            .await?
        }
    };

    // Watch what happens to servers while the agent works.
    let mut events = host.events();
    tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            match event {
                HostEvent::StatusChanged(server) => eprintln!("[event] {server}: status changed"),
                HostEvent::CatalogChanged(server) => eprintln!("[event] {server}: tools changed"),
                HostEvent::ResourceUpdated { server, uri } => {
                    eprintln!("[event] {server}: {uri} changed")
                }
                _ => {}
            }
        }
    });

    // First run: connect servers whose tools are not cached yet.
    host.bootstrap(|server, result| {
        eprintln!(
            "[bootstrap] {server}: {}",
            if result.is_ok() { "ok" } else { "failed" }
        )
    })
    .await;
    println!("{} tools available", host.tools().await?.len());

    // What a model would decide, task by task: a query, then the arguments.
    let tasks = [
        ("add two numbers", json!({"a": 19, "b": 23})),
        (
            "echo back the input string",
            json!({"message": "hello from an agent"}),
        ),
    ];
    for (query, args) in tasks {
        let hits = host
            .search(
                query,
                SearchOptions {
                    limit: 3,
                    ..Default::default()
                },
            )
            .await?;
        let Some((best, score)) = hits.first() else {
            println!("\n{query:?}: nothing found");
            continue;
        };
        println!("\n{query:?} → {} (score {score})", best.name);
        println!(
            "{}",
            present::format_schema(best.tool.input_schema.object(), "  ")
        );
        let outcome = host.call(&best.name, args.as_object().cloned()).await?;
        for block in &outcome.content {
            if let Content::Text { text } = block {
                println!("  = {text}");
            }
        }
    }

    for s in host.status() {
        println!("{}: {:?}, {} tools", s.name, s.state, s.tool_count);
    }
    host.shutdown().await;
    Ok(())
}
