//! The server: tools that reach for files, the environment, memory and
//! time, a resource and a prompt.

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, prompt, prompt_handler, prompt_router, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

#[derive(Debug, Clone)]
pub struct Probe {
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Message {
    /// The text to send back.
    pub message: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct PathArg {
    /// A file path.
    pub path: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct WriteArg {
    /// A file path.
    pub path: String,
    /// What to write.
    pub text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct KeyArg {
    /// An environment variable's name.
    pub key: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct SizeArg {
    /// MiB to allocate and touch.
    pub mib: u32,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct MillisArg {
    /// Milliseconds to compute for.
    pub ms: u64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct FloodArg {
    /// MiB to write to standard output with no newline.
    pub mib: u32,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct AddressArg {
    /// `host:port` to connect to.
    pub address: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct TopicArg {
    /// What to write about.
    pub topic: String,
}

fn text(t: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(t)]))
}

fn failed(t: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::error(vec![ContentBlock::text(t)]))
}

#[tool_router]
impl Probe {
    #[allow(dead_code)]
    pub fn new() -> Self {
        Self { tool_router: Self::tool_router(), prompt_router: Self::prompt_router() }
    }

    /// The server with `more` tools beside its own.
    #[allow(dead_code)]
    pub fn with_tools(more: ToolRouter<Self>) -> Self {
        Self { tool_router: Self::tool_router() + more, prompt_router: Self::prompt_router() }
    }

    #[tool(description = "Echoes a message back")]
    fn echo(&self, Parameters(m): Parameters<Message>) -> Result<CallToolResult, ErrorData> {
        text(format!("Echo: {}", m.message))
    }

    #[tool(description = "Reads a text file")]
    fn read_file(&self, Parameters(p): Parameters<PathArg>) -> Result<CallToolResult, ErrorData> {
        match std::fs::read_to_string(&p.path) {
            Ok(t) => text(t),
            Err(e) => failed(format!("cannot read {}: {e}", p.path)),
        }
    }

    #[tool(description = "Writes a text file")]
    fn write_file(&self, Parameters(w): Parameters<WriteArg>) -> Result<CallToolResult, ErrorData> {
        match std::fs::write(&w.path, &w.text) {
            Ok(()) => text(format!("wrote {} bytes to {}", w.text.len(), w.path)),
            Err(e) => failed(format!("cannot write {}: {e}", w.path)),
        }
    }

    #[tool(description = "Reads an environment variable")]
    fn env(&self, Parameters(k): Parameters<KeyArg>) -> Result<CallToolResult, ErrorData> {
        match std::env::var(&k.key) {
            Ok(v) => text(v),
            Err(_) => failed(format!("{} is not set", k.key)),
        }
    }

    #[tool(description = "Allocates and touches memory")]
    fn allocate(&self, Parameters(s): Parameters<SizeArg>) -> Result<CallToolResult, ErrorData> {
        let bytes = s.mib as usize * 1024 * 1024;
        let mut block: Vec<u8> = Vec::new();
        if block.try_reserve_exact(bytes).is_err() {
            return failed(format!("cannot allocate {} MiB", s.mib));
        }
        block.resize(bytes, 1);
        text(format!("allocated {} MiB", block.len() / (1024 * 1024)))
    }

    #[tool(description = "Writes `mib` MiB to standard output with no newline, then answers: its answer ends that line")]
    fn flood(&self, Parameters(f): Parameters<FloodArg>) -> Result<CallToolResult, ErrorData> {
        use std::io::Write;
        let block = [b'x'; 64 * 1024];
        let mut out = std::io::stdout().lock();
        for _ in 0..f.mib * 16 {
            if let Err(e) = out.write_all(&block) {
                return failed(format!("cannot write to stdout: {e}"));
            }
        }
        let _ = out.flush();
        text(format!("flooded {} MiB", f.mib))
    }

    #[tool(description = "Opens a TCP connection and says whether it could")]
    fn connect(&self, Parameters(a): Parameters<AddressArg>) -> Result<CallToolResult, ErrorData> {
        match std::net::TcpStream::connect(&a.address) {
            Ok(_) => text(format!("connected to {}", a.address)),
            Err(e) => failed(format!("cannot connect to {}: {e}", a.address)),
        }
    }

    #[tool(description = "Computes for a while without answering")]
    fn spin(&self, Parameters(m): Parameters<MillisArg>) -> Result<CallToolResult, ErrorData> {
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_millis() < m.ms as u128 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        text(format!("spun {} ms ({x})", m.ms))
    }
}

#[prompt_router]
impl Probe {
    #[prompt(description = "Asks for a haiku about a topic")]
    fn haiku(&self, Parameters(t): Parameters<TopicArg>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, format!("Write a haiku about {}.", t.topic))]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for Probe {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_prompts().enable_resources().build())
            .with_instructions("A probe of the sandbox it runs in.")
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let about = Resource::new("probe://about", "about");
        Ok(ListResourcesResult::with_all_items(vec![about]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match request.uri.as_str() {
            "probe://about" => Ok(ReadResourceResult::new(vec![ResourceContents::text(
                "a probe built with rmcp for wasm32-wasip2",
                request.uri,
            )])
            .into()),
            other => Err(ErrorData::resource_not_found(format!("no resource {other}"), None)),
        }
    }
}
