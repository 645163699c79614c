//! `mcpw serve`: the gateway over stdio (default) or Streamable HTTP.

use anyhow::{Context, Result, bail};
use clap::Args;
use mcpw::config::ConfigSources;
use mcpw::gateway::http::{self, HttpOptions};
use mcpw::gateway::{Exposure, Gateway, Shared};
use mcpw::host::{Host, HostOptions};
use rmcp::ServiceExt;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP on ADDR (`PORT`, `:PORT` or `IP:PORT`; loopback unless a token is set) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Bearer token HTTP clients must send (default: $MCPW_TOKEN); required to bind beyond loopback.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// proxy (one `mcp` tool), tool-search, or direct (default: settings.exposure, else proxy).
    #[arg(long, value_name = "MODE")]
    exposure: Option<String>,
}

fn parse_addr(s: &str) -> Result<SocketAddr> {
    let s = s.trim();
    if let Ok(port) = s.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse()
        .with_context(|| format!("--http {s:?}: expected PORT, :PORT or IP:PORT"))
}

pub async fn serve(args: ServeArgs, sources: &ConfigSources) -> Result<ExitCode> {
    let cfg = super::load_config(sources);
    let exposure_name = args
        .exposure
        .clone()
        .or_else(|| {
            cfg.settings
                .raw
                .get("exposure")
                .and_then(|v| v.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "proxy".into());
    let Some(exposure) = Exposure::parse(&exposure_name) else {
        bail!("unknown exposure {exposure_name:?}: use proxy, tool-search or direct");
    };
    if args.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        bail!("--token is empty: give the bearer token clients must send");
    }
    let token = args.token.clone().or_else(|| {
        sources
            .env
            .get("MCPW_TOKEN")
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    });
    let http_addr = args.http.as_deref().map(parse_addr).transpose()?;
    if let Some(addr) = http_addr
        && !addr.ip().is_loopback()
        && token.is_none()
    {
        bail!("{}", http::ServeError::TokenRequired(addr));
    }
    let host =
        Arc::new(Host::start(cfg, sources.env.clone(), HostOptions::for_env(&sources.env)).await?);
    let starting = host.clone();
    tokio::spawn(async move { starting.connect_at_start().await });
    let shared = Shared::new(host.clone(), exposure);
    match http_addr {
        Some(addr) => {
            let options = HttpOptions { addr, token };
            let shutdown = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            http::serve(
                shared,
                options,
                |a| eprintln!("mcpw: serving MCP on http://{a}/mcp ({exposure_name})"),
                shutdown,
            )
            .await?;
        }
        None => {
            tracing::info!("serving MCP on stdio ({exposure_name})");
            let service = Gateway::new(shared)
                .serve(rmcp::transport::stdio())
                .await
                .context("MCP initialize on stdio")?;
            let _ = service.waiting().await;
        }
    }
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
