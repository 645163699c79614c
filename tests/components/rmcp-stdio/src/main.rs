//! A small MCP server on rmcp for the tests of component servers: tools that
//! reach for what the sandbox grants or refuses (files, environment, memory,
//! time, the network), a resource and a prompt. Speaks MCP on its standard
//! input and output, as a stdio server does; built natively too, for the
//! benchmarks' comparison.

#[cfg(target_os = "wasi")]
mod pipes;
mod server;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        #[cfg(target_os = "wasi")]
        let (input, output) = pipes::stdio();
        #[cfg(not(target_os = "wasi"))]
        let (input, output) = (tokio::io::stdin(), tokio::io::stdout());
        let running = rmcp::ServiceExt::serve(server::Probe::new(), (input, output))
            .await
            .expect("the MCP session starts");
        let _ = running.waiting().await;
    });
}
