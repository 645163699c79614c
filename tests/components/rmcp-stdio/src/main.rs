//! A small MCP server on rmcp for the tests of component servers: tools that
//! reach for what the sandbox grants or refuses (files, environment, memory,
//! time), a resource and a prompt. Speaks MCP on its standard input and
//! output, as a stdio server does.

mod pipes;
mod server;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let (input, output) = pipes::stdio();
        let running = rmcp::ServiceExt::serve(server::Probe::new(), (input, output))
            .await
            .expect("the MCP session starts");
        let _ = running.waiting().await;
    });
}
