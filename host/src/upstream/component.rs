//! A connection to a component server: its instance started in this
//! process (see [`crate::components`]), spoken to over its pipes as to a
//! stdio server.

use super::{ConnectContext, ConnectError, Connection, Routes, stdio};
use crate::config::permissions::Permissions;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream};

impl Connection {
    /// Starts the component in `file` and initializes over its pipes.
    pub(super) async fn instance(
        file: &str,
        permissions: &Permissions,
        debug: bool,
        ctx: &ConnectContext,
        routes: &Routes,
    ) -> Result<(Connection, Arc<stdio::StderrTail>), ConnectError> {
        let env = crate::secrets::resolve_all(
            &permissions.env,
            "permissions.env",
            &ctx.server,
            &ctx.redact,
        )
        .await?;
        let tail = Arc::new(stdio::StderrTail::default());
        let noted = tail.clone();
        let from = crate::components::Start {
            file,
            permissions,
            env: &env,
            cache_dir: ctx.env.cache_dir().join("components"),
            server: &ctx.server,
        };
        let instance = crate::components::start(from, move |why| noted.note(why, true))
            .await
            .map_err(|message| ConnectError::Spawn {
                command: file.to_string(),
                message,
            })?;
        follow_stderr(instance.stderr, tail.clone(), ctx.server.clone(), debug);
        let progress = routes.progress.clone();
        let (transport, tail) = stdio::lines(instance.read, instance.write, progress, tail);
        let mut conn = Connection::over_lines(transport, tail.clone(), None, ctx, routes).await?;
        conn.instance = Some(instance.stop);
        Ok((conn, tail))
    }
}

/// Keeps the component's standard error in the tail, and in mcpw's log with `debug`.
fn follow_stderr(stderr: DuplexStream, tail: Arc<stdio::StderrTail>, server: String, debug: bool) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            match debug {
                true => tracing::info!(target: "mcpw::server_stderr", server = %server, "{line}"),
                false => tracing::debug!(target: "mcpw::server_stderr", server = %server, "{line}"),
            }
            tail.push(line);
        }
    });
}
