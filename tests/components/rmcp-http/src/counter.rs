//! Tools that keep state in `wasi:keyvalue`: each request runs in a fresh
//! instance, so whatever outlives one lives in the host's store.

use crate::server::Probe;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{ErrorData, schemars, tool, tool_router};
use serde::Deserialize;

wit_bindgen::generate!({
    path: "../../../wit/servers",
    world: "wasi:keyvalue/imports",
    generate_all,
});

use self::wasi::keyvalue::{atomics, store};

#[derive(Deserialize, schemars::JsonSchema)]
struct NameArg {
    /// The counter's name.
    pub name: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NoteArg {
    /// Under which key.
    pub key: String,
    /// What to keep; omitted, the kept text is read back.
    pub text: Option<String>,
}

fn answer(outcome: Result<String, store::Error>) -> Result<CallToolResult, ErrorData> {
    Ok(match outcome {
        Ok(t) => CallToolResult::success(vec![ContentBlock::text(t)]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("keyvalue: {e:?}"))]),
    })
}

#[tool_router(router = counter_router, vis = "pub")]
impl Probe {
    #[tool(description = "Adds one to a named counter kept by the host, and says its value")]
    fn count(&self, Parameters(n): Parameters<NameArg>) -> Result<CallToolResult, ErrorData> {
        answer(store::open("counts").and_then(|b| atomics::increment(&b, &n.name, 1)).map(|v| format!("{} = {v}", n.name)))
    }

    #[tool(description = "Keeps a text under a key, or reads back the one kept")]
    fn note(&self, Parameters(n): Parameters<NoteArg>) -> Result<CallToolResult, ErrorData> {
        answer(store::open("notes").and_then(|b| match n.text {
            Some(t) => b.set(&n.key, t.as_bytes()).map(|()| format!("kept {}", n.key)),
            None => b.get(&n.key).map(|v| v.map_or("(nothing)".into(), |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned())),
        }))
    }
}
