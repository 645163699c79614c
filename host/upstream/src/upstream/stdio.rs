//! Stdio servers: a child process in its own process group, which dies with
//! mcpw however mcpw dies (see `processes`), its stderr kept in a bounded
//! buffer for error messages (and shown live with `debug: true`), its stdout
//! watched for what the MCP codec would drop silently.

mod watch;

pub(crate) use watch::Seen;

use super::{ConnectContext, ConnectError, npx};
use crate::config::{ServerConfig, Transport};
use crate::processes::{self, GroupGuard};
use crate::secrets;
use process_wrap::tokio::CommandWrap;
use rmcp::RoleClient;
use rmcp::transport::async_rw::AsyncRwTransport;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

/// The most stderr kept per server.
const STDERR_KEEP_BYTES: usize = 8 * 1024;

/// The last lines a server wrote to stderr, and what was wrong with its
/// stdout if anything.
#[derive(Default)]
pub(crate) struct StderrTail {
    lines: Mutex<(VecDeque<String>, usize)>,
    stdout: Mutex<Option<String>>,
}

/// mcpw's own secrets, which a server does not inherit (its `env` may still
/// set them): a server that shows its environment, as server-everything's
/// `get-env` does, would hand them to every client.
const WITHHELD: &[&str] = &[
    "MCPW_TOKEN",
    crate::team_state::ENV,
    crate::auth::store::KEY_ENV,
];

/// The transport to a stdio server: rmcp's line codec over its watched pipes.
pub(crate) type StdioTransport =
    AsyncRwTransport<RoleClient, watch::Watched<ChildStdout>, ChildStdin>;

impl StderrTail {
    /// Records what was wrong with stdout; the first note stays unless `replace`.
    pub(super) fn note(&self, text: String, replace: bool) {
        let mut note = self.stdout.lock().unwrap_or_else(|p| p.into_inner());
        if replace || note.is_none() {
            *note = Some(text);
        }
    }

    /// What was wrong with the server's stdout, if anything.
    pub(crate) fn stdout_note(&self) -> Option<String> {
        self.stdout
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn push(&self, line: String) {
        let mut guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let (lines, bytes) = &mut *guard;
        let line: String = line.chars().take(1024).collect();
        *bytes += line.len();
        lines.push_back(line);
        while *bytes > STDERR_KEEP_BYTES && lines.len() > 1 {
            if let Some(old) = lines.pop_front() {
                *bytes -= old.len();
            }
        }
    }

    /// A line of the server's standard error: kept, and in mcpw's log with
    /// the server's `debug`.
    pub(super) fn heard(&self, server: &str, debug: bool, line: String) {
        if debug {
            tracing::info!(target: "mcpw::server_stderr", server = %server, "{line}");
        }
        self.push(line);
    }

    /// The kept lines.
    pub(crate) fn text(&self) -> String {
        let guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        guard.0.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// What to run for a stdio server: its command, or the binary of an `npx`
/// package, installed first when npm's cache lacks it. The install has its
/// own limit ([`npx::INSTALL_LIMIT`]): only the server's own start counts
/// against `startupTimeoutMs`.
pub(crate) async fn program(
    config: &ServerConfig,
    ctx: &ConnectContext,
) -> Result<(String, Vec<String>), ConnectError> {
    let Transport::Stdio { command, args, .. } = &config.transport else {
        unreachable!("program is only asked of stdio servers")
    };
    let is_npx = std::path::Path::new(command)
        .file_name()
        .is_some_and(|n| n == "npx");
    if !is_npx {
        return Ok((command.clone(), args.clone()));
    }
    match npx::resolve(args, &ctx.env, &ctx.server).await? {
        Some((resolution, extra)) => {
            tracing::debug!(server = %ctx.server, "npx resolved to {}", resolution.bin_path.display());
            Ok(resolution.command(&extra))
        }
        None => Ok((command.clone(), args.clone())),
    }
}

/// Starts `program` (from [`program`]) as the server's process.
pub(crate) async fn spawn(
    config: &ServerConfig,
    ctx: &ConnectContext,
    (program, args): (String, Vec<String>),
    progress: super::handler::ProgressRoutes,
) -> Result<(StdioTransport, Arc<StderrTail>, GroupGuard), ConnectError> {
    let Transport::Stdio {
        command, env, cwd, ..
    } = &config.transport
    else {
        unreachable!("spawn is only called for stdio servers")
    };
    let env =
        secrets::resolve_all(env, "env", &ctx.server, &ctx.redact, Some(&ctx.secrets)).await?;
    if let Some(dir) = cwd
        && !std::path::Path::new(dir).is_dir()
    {
        return Err(ConnectError::Spawn {
            command: command.clone(),
            message: format!("the working directory {dir} (`cwd`) does not exist"),
        });
    }
    let mut cmd = tokio::process::Command::new(&program);
    let inherited = ctx.env.vars().filter(|(k, _)| !WITHHELD.contains(k));
    cmd.args(&args).env_clear().envs(inherited).envs(env);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut child, group) = processes::spawn_group(CommandWrap::from(cmd))
        .await
        .map_err(|e| ConnectError::Spawn {
            command: program.clone(),
            message: e.to_string(),
        })?;
    let (stdin, stdout, stderr) = (
        child.stdin().take(),
        child.stdout().take(),
        child.stderr().take(),
    );
    // Reaped when it exits; killing is the group guard's job. (Started after
    // the watchdog's launcher, a member of the group, was reaped.)
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
        unreachable!("stdin and stdout were piped")
    };
    let (transport, tail) = lines(stdout, stdin, progress, Arc::default(), None);
    if let Some(stderr) = stderr {
        follow_stderr(stderr, tail.clone(), ctx.server.clone(), config.debug);
    }
    Ok((transport, tail, group))
}

/// Keeps a server's standard error in `tail` as it comes (see
/// [`StderrTail::heard`]).
pub(super) fn follow_stderr(
    stderr: impl tokio::io::AsyncRead + Send + Unpin + 'static,
    tail: Arc<StderrTail>,
    server: String,
    debug: bool,
) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tail.heard(&server, debug, line);
        }
    });
}

/// The most one message from a server may take: a result of 64 MiB, with
/// its JSON escapes, comes through (and is then cut to the agent's budget).
pub(crate) const MAX_MESSAGE_BYTES: usize = 128 << 20;

/// Newline-delimited JSON-RPC over a read and a write half, with progress
/// routed as it is read, `seen` told each message, and the notes of a line
/// too long kept in the tail.
pub(super) fn lines<R, W>(
    read: R,
    write: W,
    progress: super::handler::ProgressRoutes,
    tail: Arc<StderrTail>,
    seen: Option<Seen>,
) -> (
    AsyncRwTransport<RoleClient, watch::Watched<R>, W>,
    Arc<StderrTail>,
)
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let read = watch::Watched::new(read, tail.clone(), MAX_MESSAGE_BYTES, progress).telling(seen);
    let transport = AsyncRwTransport::new(read, write).with_max_line_length(MAX_MESSAGE_BYTES);
    (transport, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_is_bounded_and_keeps_the_end() {
        let tail = StderrTail::default();
        for i in 0..10_000 {
            tail.push(format!("line {i}"));
        }
        let text = tail.text();
        assert!(text.len() <= STDERR_KEEP_BYTES + 1024);
        assert!(text.ends_with("line 9999"));
    }
}
