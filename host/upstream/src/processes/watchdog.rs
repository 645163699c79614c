//! A watchdog in each process group mcpw owns, so that the group dies with mcpw
//! however mcpw dies, `kill -9` included, on every Unix.
//!
//! mcpw keeps the write end of a pipe; the watchdog, a shell in the group,
//! blocks reading the other end. Nobody ever writes, so the read returns only
//! at end of file, which comes when the last write end closes: when mcpw exits
//! or is killed (the kernel closes its descriptors), or when the guard is
//! dropped. The watchdog then sends SIGKILL to its whole group, itself
//! included. This reaches what the leader started (which a parent-death signal
//! of the leader does not) and works where there is no such signal (macOS).
//!
//! The write end is close-on-exec, so no other child of mcpw holds it open.
//! The watchdog is started by a shell that exits at once: the watchdog is not
//! mcpw's child, so mcpw never has to reap it, nor can a wait for it collide
//! with the waits for the group's other members. A process that leaves the
//! group (`setsid`, `setpgid`: daemons) is out of its reach.

use std::io::{self, PipeWriter};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// Reads fd 3 (the pipe) until end of file, then kills the group. In a
/// shell without job control, the background list's stdin would be
/// /dev/null: hence fd 3. `kill` and `read` are builtins, so nothing on PATH
/// is needed.
const SCRIPT: &str = "exec 3<&0 </dev/null; { while read -r line <&3; do :; done; kill -9 0; } &";

/// Starts a watchdog in process group `pgid`; it kills the group once the
/// returned write end is closed.
pub(super) fn start(pgid: i32) -> io::Result<PipeWriter> {
    let (reader, writer) = io::pipe()?;
    let mut launcher = Command::new("/bin/sh");
    launcher
        .args(["-c", SCRIPT])
        .env_clear()
        .current_dir("/")
        .stdin(reader)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(pgid);
    let status = launcher.spawn()?.wait()?;
    // Our copy of the read end goes with the command.
    drop(launcher);
    if !status.success() {
        return Err(io::Error::other(format!(
            "the watchdog's launcher failed ({status})"
        )));
    }
    Ok(writer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn alive(pid: i32) -> bool {
        // Zombies count as gone: they run nothing.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    }

    /// The watchdog's end of file alone (no guard, no killpg by mcpw) kills the
    /// leader and what it started, even when they ignore SIGTERM.
    #[test]
    #[cfg(target_os = "linux")]
    fn closing_the_write_end_kills_the_whole_group() {
        let mut leader = Command::new("/bin/sh")
            .args(["-c", "trap '' TERM HUP; sleep 300 & echo $!; wait"])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(leader.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let child: i32 = line.trim().parse().unwrap();
        let writer = start(leader.id() as i32).unwrap();
        assert!(alive(child) && alive(leader.id() as i32));
        drop(writer);
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(child) {
            assert!(
                Instant::now() < deadline,
                "the grandchild outlived the pipe"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!leader.wait().unwrap().success(), "the leader was killed");
    }
}
