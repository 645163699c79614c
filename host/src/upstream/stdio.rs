//! Stdio servers: a child process in its own process group, its stderr kept in a
//! bounded buffer for error messages (and shown live with `debug: true`).

use super::processes::GroupGuard;
use super::{ConnectContext, ConnectError, npx, secrets};
use crate::config::{ServerConfig, Transport};
use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::transport::TokioChildProcess;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The most stderr kept per server.
const STDERR_KEEP_BYTES: usize = 8 * 1024;

/// The last lines a server wrote to stderr.
#[derive(Default)]
pub struct StderrTail {
    lines: Mutex<(VecDeque<String>, usize)>,
}

impl StderrTail {
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

    /// The kept lines.
    pub fn text(&self) -> String {
        let guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        guard.0.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

pub async fn spawn(
    config: &ServerConfig,
    ctx: &ConnectContext,
) -> Result<(TokioChildProcess, Arc<StderrTail>, GroupGuard), ConnectError> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &config.transport
    else {
        unreachable!("spawn is only called for stdio servers")
    };
    let env = secrets::resolve_all(env, "env", &ctx.server).await?;
    let is_npx = std::path::Path::new(command)
        .file_name()
        .is_some_and(|n| n == "npx");
    let (program, args) = match is_npx {
        true => match npx::resolve(args, &ctx.env).await {
            Some((resolution, extra)) => {
                tracing::debug!(server = %ctx.server, "npx resolved to {}", resolution.bin_path.display());
                resolution.command(&extra)
            }
            None => (command.clone(), args.clone()),
        },
        false => (command.clone(), args.clone()),
    };
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&args).env_clear().envs(ctx.env.vars()).envs(env);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader());
    let (process, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ConnectError::Spawn {
            command: program.clone(),
            message: e.to_string(),
        })?;
    let pid = process.id().ok_or_else(|| ConnectError::Spawn {
        command: program.clone(),
        message: "exited at once".into(),
    })?;
    let group = GroupGuard::new(pid);
    let tail = Arc::new(StderrTail::default());
    if let Some(stderr) = stderr {
        let (tail, server, debug) = (tail.clone(), ctx.server.clone(), config.debug);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if debug {
                    tracing::info!(target: "mcpw::server_stderr", server = %server, "{line}");
                }
                tail.push(line);
            }
        });
    }
    Ok((process, tail, group))
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
