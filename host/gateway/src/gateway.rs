//! `mcpw serve`: mcpw as an MCP server in front of every configured server.
//!
//! Exposures: `proxy` (one `mcp` tool, ~340 tokens however many tools
//! exist), `tool-search` (direct tools plus `ToolSearch`, which loads more on
//! demand and announces them with `notifications/tools/list_changed`),
//! `direct` (every tool), `code` (one tool that runs scripts), and `auto`
//! (direct while the tools fit a budget, else tool-search). Upstream prompts
//! are forwarded under prefixed names; progress notifications and
//! cancellation pass through calls.

mod app_host;
mod approval;
mod bootstrap;
mod calls;
pub mod code;
mod counts;
mod era;
mod exposures;
mod handler;
mod held;
mod hints;
pub mod http;
mod in_flight;
mod listen;
mod listing;
mod lists;
mod page;
mod peer_client;
mod proxy;
mod reads;
mod replicas;
mod request_logs;
mod resources;
mod results;
mod scope;
mod scoped;
mod session_events;
mod sign_in;
mod skills;
mod state;
mod stateless;
mod task_book;
mod tasks;
mod tool_call;
mod tool_search;
mod traced;
mod views;
mod watching;
mod wire;

pub use crate::config::{DEFAULT_AUTO_EXPOSURE_BUDGET, Exposure};
pub use in_flight::Gated;
pub use scope::ClientScope;
pub use state::{Gateway, Session};
