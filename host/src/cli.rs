//! Command-line interface. Output for people goes to stdout; logs go to stderr.

#[macro_use]
mod macros {
    /// Writes a line to stdout, returning write errors (a closed pipe) instead of
    /// panicking as `println!` does.
    macro_rules! outln {
        ($($arg:tt)*) => {{
            use std::io::Write as _;
            writeln!(std::io::stdout().lock(), $($arg)*)?
        }};
    }
}

mod add_cmd;
mod auth_cmd;
mod catalog_cmd;
mod component_cmd;
mod config_cmd;
mod demo_cmd;
mod doctor_cmd;
mod elicit;
mod embedding;
mod one_shot;
mod plugin_cmd;
mod serve_cmd;
mod servers_cmd;
mod shell_cmd;
mod skills_cmd;
mod trust_cmd;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use mcpw::config::{Config, ConfigSources};
use mcpw::plugin::{CompileCache, Policy, StaticServices};
use one_shot::{load_config, print_json, start};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// mcpw: every MCP server behind one gateway, with policy in WebAssembly guests.
#[derive(Parser)]
#[command(name = "mcpw", version, about)]
struct Cli {
    /// Config file to use instead of $MCPW_CONFIG / ~/.config/mcpw/mcp.json.
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug). MCPW_LOG takes a tracing filter.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Also read another client's MCP config (pi, cursor, claude-code, claude-desktop,
    /// codex, windsurf, vscode), as `"imports"` in the config does; repeatable.
    /// MCPW_IMPORT takes a comma-separated list.
    #[arg(long = "import", global = true, value_name = "CLIENT")]
    imports: Vec<String>,
    /// Share the metadata cache, failures, statistics, logins and sessions with other
    /// mcpw processes through Redis (redis://HOST:PORT[/DB]); default $MCPW_SHARED_STATE,
    /// else settings.sharedState.
    #[arg(long, global = true, value_name = "URL")]
    shared_state: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve every configured server to an MCP client (stdio, or Streamable HTTP with --http).
    Serve(serve_cmd::ServeArgs),
    /// A tour on real MCP servers from npm (built-in config; yours is not touched).
    Demo,
    /// Show or check the merged configuration.
    #[command(subcommand)]
    Config(config_cmd::ConfigCommand),
    /// Inspect policy guests.
    #[command(subcommand)]
    Plugin(plugin_cmd::PluginCommand),
    /// Name every tool of a catalog file with the naming guest.
    Names(catalog_cmd::NamesArgs),
    /// Search a catalog file with the ranking guest.
    Search(catalog_cmd::SearchArgs),
    /// Status of every configured server.
    Status(servers_cmd::StatusArgs),
    /// Every tool of the configured servers (connects servers with nothing cached).
    Tools(servers_cmd::ToolsArgs),
    /// A tool's description and parameters.
    Describe(servers_cmd::DescribeArgs),
    /// Call a tool.
    Call(servers_cmd::CallArgs),
    /// Connect (or reconnect) a server now and refresh its cached tools.
    Connect(servers_cmd::ConnectArgs),
    /// Calls per tool, recorded with settings.captureStats.
    Stats(servers_cmd::StatsArgs),
    /// The metadata cache.
    #[command(subcommand)]
    Cache(servers_cmd::CacheCommand),
    /// Log in to servers that ask for OAuth, log out, and see what mcpw holds.
    #[command(subcommand)]
    Auth(auth_cmd::AuthCommand),
    /// A project's servers wait for your approval: list them, approve them, take approvals back.
    Trust(trust_cmd::TrustArgs),
    /// The servers' skills: list them, or export them as local skill folders.
    #[command(subcommand)]
    Skills(skills_cmd::SkillsCommand),
    /// Search the MCP Registry for servers, by words and by meaning.
    Find(add_cmd::FindArgs),
    /// Add a server from the MCP Registry, a package or a URL, after one trial connection.
    Add(add_cmd::AddArgs),
    /// Remove a server `mcpw add` added, leaving the file as it was.
    Remove(add_cmd::RemoveArgs),
    /// Why a client does not see a server: every client's config files, each server
    /// live, the gateway's services; each problem with its remedy. Read-only.
    Doctor(doctor_cmd::DoctorArgs),
    /// Print the completion script of a shell (bash, zsh, fish, elvish, powershell).
    Completions(shell_cmd::CompletionsArgs),
    /// Print mcpw's man page (roff), or write one page per command into a directory.
    Man(shell_cmd::ManArgs),
}

pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    // Traces, when the OTEL_* variables ask for them; flushed at the end.
    let _traces = mcpw::telemetry::init(|var| std::env::var(var).ok())
        .inspect_err(|e| tracing::warn!("traces are off: {e}"))
        .ok();
    let mut sources = ConfigSources::for_process(cli.config.clone());
    if !cli.imports.is_empty() {
        // Through the environment, where MCPW_IMPORT is read: one path for both.
        let mut all: Vec<String> = sources
            .env
            .get("MCPW_IMPORT")
            .into_iter()
            .map(String::from)
            .collect();
        all.extend(cli.imports.iter().cloned());
        sources.env = sources.env.with("MCPW_IMPORT", all.join(","));
    }
    if let Some(url) = &cli.shared_state {
        sources.env = sources.env.with(mcpw::team_state::ENV, url.clone());
    }
    let result = match cli.command {
        Command::Config(cmd) => config_cmd::run(cmd, &sources),
        Command::Plugin(cmd) => plugin_cmd::run(cmd, &sources),
        Command::Names(args) => catalog_cmd::names(args, &sources),
        Command::Search(args) => catalog_cmd::search(args, &sources),
        Command::Cache(cmd) => servers_cmd::cache(cmd, &sources),
        Command::Stats(args) => servers_cmd::stats(args, &sources),
        Command::Trust(args) => trust_cmd::run(args, &sources),
        Command::Demo => with_runtime(demo_cmd::demo(&sources)),
        // One stdio session: one runtime thread, so that a message handed from
        // task to task never has to wake another thread.
        Command::Serve(args) if args.on_stdio() => {
            with_runtime_on(Flavor::OneThread, serve_cmd::serve(args, &sources))
        }
        Command::Serve(args) => with_runtime(serve_cmd::serve(args, &sources)),
        Command::Status(args) => with_runtime(servers_cmd::status(args, &sources)),
        Command::Tools(args) => with_runtime(servers_cmd::tools(args, &sources)),
        Command::Describe(args) => with_runtime(servers_cmd::describe(args, &sources)),
        Command::Call(args) => with_runtime(servers_cmd::call(args, &sources)),
        Command::Connect(args) => with_runtime(servers_cmd::connect(args, &sources)),
        Command::Auth(cmd) => with_runtime(auth_cmd::run(cmd, &sources)),
        Command::Skills(cmd) => with_runtime(skills_cmd::run(cmd, &sources)),
        Command::Find(args) => add_cmd::find(args, &sources),
        Command::Add(args) => add_cmd::add(args, &sources),
        Command::Remove(args) => with_runtime(add_cmd::remove(args, &sources)),
        Command::Doctor(args) => with_runtime(doctor_cmd::doctor(args, &sources)),
        Command::Completions(args) => shell_cmd::completions(args, cli_command()),
        Command::Man(args) => shell_cmd::man(args, cli_command()),
    };
    match result {
        Ok(code) => code,
        // A closed pipe (`mcpw names | head`) is the reader's choice, not an error.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            // The chain, without repeating a cause its error already quotes.
            let mut message = e.to_string();
            for cause in e.chain().skip(1).map(ToString::to_string) {
                if !message.contains(&cause) {
                    message = format!("{message}: {cause}");
                }
            }
            eprintln!("mcpw: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The command line's definition, for what is made from it.
fn cli_command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Runs a command that talks to servers. Every server process group is killed
/// on the way out, and on SIGINT/SIGTERM.
pub(crate) fn with_runtime(command: impl Future<Output = Result<ExitCode>>) -> Result<ExitCode> {
    with_runtime_on(Flavor::Threads, command)
}

enum Flavor {
    /// A worker per core.
    Threads,
    /// Everything async on the calling thread (blocking work still has its own threads).
    OneThread,
}

fn with_runtime_on(
    flavor: Flavor,
    command: impl Future<Output = Result<ExitCode>>,
) -> Result<ExitCode> {
    let runtime = match flavor {
        Flavor::Threads => tokio::runtime::Builder::new_multi_thread(),
        Flavor::OneThread => tokio::runtime::Builder::new_current_thread(),
    }
    .enable_all()
    .build()
    .context("start the async runtime")?;
    let result = runtime.block_on(async {
        mcpw::processes::exit_on_signals();
        command.await
    });
    mcpw::processes::kill_all();
    // A command that stopped on a signal exits with the signal's status.
    match mcpw::processes::signal_status() {
        Some(code) => result.map(|_| ExitCode::from(code)),
        None => result,
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn,rmcp=off,mcpw::server_stderr=info,mcpw::progress=info",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MCPW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colours only for a person at a terminal: under `serve`, stderr ends up
    // in the MCP client's log file.
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

fn compile_cache(sources: &ConfigSources) -> CompileCache {
    CompileCache::new(Some(sources.env.cache_dir().join("guests")))
}

/// The policy from the config, with `overrides` replacing the configured guests.
fn load_policy(
    cfg: &Config,
    sources: &ConfigSources,
    services: StaticServices,
    overrides: &[(mcpw::plugin::Role, PathBuf)],
) -> Result<Policy> {
    let mut pc = mcpw::plugin::PolicyConfig::of(cfg, compile_cache(sources));
    for (role, path) in overrides {
        pc.guests.insert(*role, path.clone());
    }
    Policy::load(&pc, Arc::new(services)).context("cannot load the policy guests")
}
