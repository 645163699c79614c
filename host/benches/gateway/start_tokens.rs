//! Row 13: what the tool list costs an agent's context at session start, per
//! exposure, with the 101-server / 1,287-tool catalog in a warm metadata
//! cache: the first `tools/list` answer's tools as JSON, in tokens as the
//! repo counts them (bytes / 4). No server is started.

use crate::shared::{CATALOG_TOOLS, environment, load_config};
use mcpw::gateway::{Exposure, Gateway, Session};
use mcpw::host::{Host, HostOptions};
use std::path::Path;
use std::sync::Arc;

/// The exposures measured (code mode lists one tool too, but starts the
/// script guest; its cost is row 10's).
const EXPOSURES: [Exposure; 4] = [
    Exposure::Proxy,
    Exposure::ToolSearch,
    Exposure::Auto,
    Exposure::Direct,
];

pub(crate) async fn row13_start_tokens(home: &Path) -> String {
    println!(
        "## 13. Tokens at session start: the first `tools/list`, 101 servers / 1,287 cached tools"
    );
    let env = environment(home);
    let mut options = HostOptions::for_env(&env);
    options.maintenance = false;
    options.metadata_cache = Some(home.join(".cache/mcpw/metadata.json"));
    let host = Arc::new(
        Host::start(load_config(home), env, options)
            .await
            .expect("Host::start with the catalog config"),
    );
    let mut tokens = Vec::new();
    for exposure in EXPOSURES {
        let session = Session::new(Gateway::new(host.clone(), exposure));
        let tools = session.tool_list().await.expect("the first tool list");
        let bytes = serde_json::to_vec(&tools).expect("an encodable list").len();
        let n = mcpw::results::tokens(bytes);
        println!(
            "{:<12} tools={:<5} {n:>7} tokens ({bytes} bytes)",
            exposure.name(),
            tools.len()
        );
        if exposure == Exposure::Direct {
            assert_eq!(
                tools.len(),
                CATALOG_TOOLS,
                "direct exposure lists every cached tool"
            );
        }
        tokens.push(n);
    }
    host.shutdown().await;
    println!();
    let [proxy, tool_search, auto, direct] = tokens[..] else {
        unreachable!("one count per exposure")
    };
    format!(
        "| 13 | tokens at session start (first `tools/list`), 101 servers / 1,287 cached tools \
         | tool-search {tool_search}; auto {auto} (it picks tool-search); proxy {proxy} \
         | direct {direct} | tool-search {:.2} % of direct |",
        100.0 * tool_search as f64 / direct as f64
    )
}
