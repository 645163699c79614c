//! The rmcp floor of row 1: the bench re-executed as the smallest gateway rmcp
//! allows (one rmcp server forwarding `tools/call` to one rmcp client, on a
//! current-thread runtime with non-blocking stdio, as `mcpw serve` runs). What
//! it adds over a direct connection is what rmcp's own request path costs,
//! beside which mcpw's figure is read.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use std::os::fd::FromRawFd;

/// Set when the bench binary runs as this forwarder.
pub(crate) const ENV: &str = "MCPW_BENCH_FORWARDER";

struct Forward(RunningService<RoleClient, ()>);

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

impl ServerHandler for Forward {
    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.0.peer().list_tools(None).await.map_err(internal)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = self.0.peer().call_tool(request).await.map_err(internal)?;
        Ok(result.into())
    }

    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info
    }
}

/// One end of the client's socket pair, non-blocking (node gives its children
/// sockets as stdio).
fn socket(fd: i32) -> tokio::net::UnixStream {
    // SAFETY: `dup` returns a new descriptor that nothing else owns.
    let s = unsafe { std::os::unix::net::UnixStream::from_raw_fd(libc::dup(fd)) };
    s.set_nonblocking(true).expect("non-blocking stdio");
    tokio::net::UnixStream::from_std(s).expect("stdio must be a socket (node's child stdio)")
}

/// `<bench> program args...` with [`ENV`] set: forwards to the program.
pub(crate) fn main() -> ! {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let mut args = std::env::args_os().skip(1);
        let mut cmd = tokio::process::Command::new(args.next().expect("a command to run"));
        cmd.args(args).env_remove(ENV).kill_on_drop(true);
        let transport = rmcp::transport::TokioChildProcess::new(cmd).expect("start the server");
        let upstream = ().serve(transport).await.expect("initialize the server");
        let served = Forward(upstream)
            .serve((socket(0), socket(1)))
            .await
            .expect("initialize with the client");
        let _ = served.waiting().await;
    });
    std::process::exit(0)
}
