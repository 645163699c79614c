//! A server in this process and a connector to it, for lifecycle tests that
//! need no process: tools `echo`, `hang` (never answers), `add_tool` (adds
//! one, then says the list changed) and `flood` (says so `count` times).

use super::super::Connector;
use crate::config::ServerConfig;
use crate::upstream::{ConnectContext, ConnectError, Connection, Listing};
use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig as ServerInfo, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What every connection to the fake server shares, and what it counts.
#[derive(Default)]
pub(crate) struct Fake {
    /// Tools added by `add_tool`.
    added: Mutex<Vec<String>>,
    /// `tools/list` requests answered.
    pub lists: AtomicUsize,
    /// How long a `tools/list` takes.
    pub list_delay: Mutex<Duration>,
    /// Each connection's switch to stop its server reading, as a stopped
    /// process would.
    frozen: Mutex<Vec<Frozen>>,
    /// Connections whose server side still runs.
    pub live: AtomicUsize,
    /// Connection attempts.
    pub opens: AtomicUsize,
    /// The servers attempts were for, in order.
    pub opened: Mutex<Vec<String>>,
    /// Whose login each attempt was made with (`None`: the shared one), in order.
    pub owners: Mutex<Vec<Option<String>>>,
    /// Principals with no login: their attempts are refused as a server
    /// that wants one refuses.
    pub logged_out: Mutex<Vec<String>>,
    /// The server side of every connection, to end them as a crash would.
    servers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Attempts under way now, and the most there ever were at once.
    opening: AtomicUsize,
    pub most_opening: AtomicUsize,
    /// Attempts fail.
    pub fail: AtomicBool,
    /// Attempts wait until this is `true`.
    gate: Option<tokio::sync::watch::Sender<bool>>,
}

impl Fake {
    /// A fake whose connection attempts wait for [`Fake::open_gate`].
    pub(crate) fn gated() -> Fake {
        Fake {
            gate: Some(tokio::sync::watch::channel(false).0),
            ..Fake::default()
        }
    }

    pub(crate) fn open_gate(&self) {
        if let Some(gate) = &self.gate {
            gate.send_replace(true);
        }
    }

    /// Stops (`true`) or resumes the reading of every server connected so far.
    pub(crate) fn freeze(&self, frozen: bool) {
        self.frozen
            .lock()
            .unwrap()
            .iter()
            .for_each(|f| f.set(frozen));
    }

    /// Ends every server so far, as a crash would: their connections close.
    pub(crate) fn kill(&self) {
        self.servers
            .lock()
            .unwrap()
            .drain(..)
            .for_each(|t| t.abort());
    }

    pub(crate) fn opening(&self) -> usize {
        self.opening.load(Ordering::SeqCst)
    }

    pub(crate) fn count(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::SeqCst)
    }
}

fn tool(name: &str) -> Tool {
    serde_json::from_value(serde_json::json!({
        "name": name, "description": format!("the {name} tool"),
        "inputSchema": {"type": "object"},
    }))
    .expect("a valid tool")
}

/// The server side of one connection.
struct Handler(Arc<Fake>);

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerInfo {
        let mut info = ServerInfo::default();
        info.capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.0.lists.fetch_add(1, Ordering::SeqCst);
        let delay = *self.0.list_delay.lock().unwrap();
        tokio::time::sleep(delay).await;
        let mut tools: Vec<Tool> = ["echo", "hang", "add_tool", "flood"]
            .into_iter()
            .map(tool)
            .collect();
        tools.extend(self.0.added.lock().unwrap().iter().map(|n| tool(n)));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arg = |key: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|a| a.get(key))
                .cloned()
                .unwrap_or_default()
        };
        match &*request.name {
            "hang" => std::future::pending::<()>().await,
            "add_tool" => {
                let name = arg("name").as_str().unwrap_or("added").to_string();
                self.0.added.lock().unwrap().push(name);
                let _ = context.peer.notify_tool_list_changed().await;
            }
            "flood" => {
                for _ in 0..arg("count").as_u64().unwrap_or(1) {
                    let _ = context.peer.notify_tool_list_changed().await;
                }
            }
            _ => {}
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("done")]).into())
    }
}

/// Connects every server name to a fake server of `fake`'s.
pub(crate) struct FakeConnector(pub Arc<Fake>);

impl FakeConnector {
    async fn attempt(
        &self,
        config: &ServerConfig,
        ctx: &ConnectContext,
    ) -> Result<(Connection, Listing), ConnectError> {
        let fake = &self.0;
        if let Some(gate) = &fake.gate {
            let mut open = gate.subscribe();
            let _ = open.wait_for(|open| *open).await;
        }
        let owner = ctx.owner.as_deref().map(str::to_string);
        if owner.is_some_and(|o| fake.logged_out.lock().unwrap().contains(&o)) {
            return Err(ConnectError::NeedsAuth {
                status: 401,
                hint: "log in".into(),
                challenge: None,
            });
        }
        if fake.fail.load(Ordering::SeqCst) {
            return Err(ConnectError::Protocol {
                message: "the fake server refuses".into(),
                stderr: None,
            });
        }
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (their_read, their_write) = tokio::io::split(theirs);
        let frozen = Frozen::default();
        fake.frozen.lock().unwrap().push(frozen.clone());
        let their_read = FreezableRead {
            inner: their_read,
            frozen,
        };
        let server = Handler(fake.clone());
        let counted = fake.clone();
        counted.live.fetch_add(1, Ordering::SeqCst);
        let task = tokio::spawn(async move {
            // Counted down however the server ends, an abort too.
            let _live = Live(counted);
            if let Ok(running) = server.serve((their_read, their_write)).await {
                let _ = running.waiting().await;
            }
        });
        fake.servers.lock().unwrap().push(task);
        let (read, write) = tokio::io::split(ours);
        let timeout = Duration::from_millis(config.startup_timeout_ms);
        Connection::over_stream(read, write, ctx, timeout).await
    }
}

impl Connector for FakeConnector {
    fn open<'a>(
        &'a self,
        config: &'a ServerConfig,
        ctx: &'a ConnectContext,
    ) -> BoxFuture<'a, Result<(Connection, Listing), ConnectError>> {
        Box::pin(async move {
            let fake = &self.0;
            fake.opens.fetch_add(1, Ordering::SeqCst);
            fake.opened.lock().unwrap().push(ctx.server.clone());
            let owner = ctx.owner.as_deref().map(str::to_string);
            fake.owners.lock().unwrap().push(owner);
            let now = fake.opening.fetch_add(1, Ordering::SeqCst) + 1;
            fake.most_opening.fetch_max(now, Ordering::SeqCst);
            let result = self.attempt(config, ctx).await;
            fake.opening.fetch_sub(1, Ordering::SeqCst);
            result
        })
    }
}

/// One running server, counted in [`Fake::live`] until dropped.
struct Live(Arc<Fake>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether the servers read, and who waits for them to again.
#[derive(Clone, Default)]
struct Frozen(Arc<Mutex<(bool, Vec<std::task::Waker>)>>);

impl Frozen {
    fn set(&self, frozen: bool) {
        let mut state = self.0.lock().unwrap();
        state.0 = frozen;
        if !frozen {
            state.1.drain(..).for_each(|w| w.wake());
        }
    }
}

/// A server's input, which reads nothing while frozen.
struct FreezableRead<R> {
    inner: R,
    frozen: Frozen,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for FreezableRead<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        {
            let mut state = self.frozen.0.lock().unwrap();
            if state.0 {
                state.1.push(cx.waker().clone());
                return std::task::Poll::Pending;
            }
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}
