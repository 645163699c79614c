//! `mcpw serve --http` in the background, for the tests and benchmarks that
//! talk to it over HTTP.

use crate::isolated_mcpw;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `mcpw serve --http` in the background with its config and caches under
/// `home`, killed on drop.
pub struct Serving {
    child: Child,
    port: u16,
}

impl Serving {
    /// `mcpw serve --http 127.0.0.1:0 ARGS` (no `--http` when `args` has
    /// one), the binary at `bin` isolated in `home` (see [`isolated_mcpw`]),
    /// once it has said where it listens.
    pub fn start(bin: impl AsRef<OsStr>, home: &Path, args: &[&str]) -> Serving {
        Serving::start_with(bin, home, args, &[])
    }

    /// [`Serving::start`] with more environment variables.
    pub fn start_with(
        bin: impl AsRef<OsStr>,
        home: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Serving {
        let mut cmd = isolated_mcpw(bin, home);
        cmd.arg("serve").args(args).envs(env.iter().copied());
        // Port 0: mcpw binds a free port itself and says which, so no other
        // process can take it between a pick and the bind.
        if !args.contains(&"--http") {
            cmd.args(["--http", "127.0.0.1:0"]);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads stderr to its end (so that mcpw never blocks on it), handing
        // on the port of its "serving MCP on http://ADDR/mcp" line.
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                // SHOW_MCPW_LOG=1 (with --nocapture) shows what mcpw logged.
                if std::env::var_os("SHOW_MCPW_LOG").is_some() {
                    eprintln!("mcpw: {line}");
                }
                let port = line
                    .split("serving MCP on http://")
                    .nth(1)
                    .and_then(|rest| rest.split('/').next())
                    .and_then(|addr| addr.rsplit(':').next())
                    .and_then(|p| p.parse::<u16>().ok());
                if let Some(port) = port {
                    let _ = tx.send(port);
                }
            }
        });
        let port = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("mcpw serve to say where it listens");
        Serving { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn at(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `within` for mcpw to exit.
    pub fn exited(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // SAFETY: signalling our child so it shuts down its servers.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}
