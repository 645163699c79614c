//! Every process mcpw starts dies with mcpw, however mcpw dies.
//!
//! Each stdio server runs as the leader of its own process group, so that the
//! server and anything it starts are killed together: on close, on drop, and
//! when mcpw exits or receives SIGINT/SIGTERM/SIGHUP. The same registry holds
//! the short-lived helpers mcpw starts (secret commands, `npm exec`).
//!
//! An orderly exit is not enough: `kill -9` (or the OOM killer) runs no
//! handler, and a server that ignores stdin EOF and SIGTERM, or what a server
//! started, would be adopted by PID 1. So every group also holds a watchdog
//! that kills it when mcpw's end of a pipe closes (`watchdog`: any Unix), and
//! on Linux a server itself gets SIGKILL as its parent dies (`spawner`).
//!
//! What is not covered: a process that leaves its group (`setsid`, a daemon);
//! a set-user-ID server loses the parent-death signal on exec (the watchdog
//! remains); on macOS, a server spawned a moment before mcpw is killed, before
//! its watchdog starts; an interactive secret command, which stays in mcpw's
//! own group to reach the terminal, dies with the terminal's hangup, not on
//! `kill -9`. Windows would take a job object killed on close (process-wrap's
//! `job-object` feature, not enabled): this module is for Unix.

mod spawner;
mod watchdog;

pub use spawner::spawn_group;

use std::collections::BTreeSet;
use std::sync::Mutex;

static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

type Hook = Box<dyn FnOnce() + Send>;

/// Work that must not be lost when a signal ends mcpw (flushing statistics).
static EXIT_HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Runs `hook` before mcpw exits on a signal. Hooks run synchronously, in
/// the order registered, and should be quick.
pub fn at_signal_exit(hook: impl FnOnce() + Send + 'static) {
    EXIT_HOOKS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Box::new(hook));
}

/// Held from a spawn until the child's guard is registered.
static SPAWNING: Mutex<()> = Mutex::new(());

/// Hold this across spawning a child and registering its guard: an exit on a
/// signal waits for it, so a child spawned just before the signal is killed
/// too, not left running unregistered.
pub fn spawning() -> std::sync::MutexGuard<'static, ()> {
    SPAWNING.lock().unwrap_or_else(|p| p.into_inner())
}

fn groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

fn kill_group(pgid: i32) {
    #[cfg(unix)]
    // SAFETY: killpg only sends a signal; a group that is gone already yields ESRCH.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// Owns a server's process group; killing it (or dropping it) kills the group,
/// and so does mcpw's death, through the group's watchdog.
#[derive(Debug)]
pub struct GroupGuard {
    pgid: i32,
    /// The watchdog's pipe: closed, by drop or by mcpw's death, it kills the group.
    _watchdog: Option<std::io::PipeWriter>,
}

impl GroupGuard {
    /// Registers the group led by `pid`, and puts a watchdog in it; without
    /// one (logged) the group dies on mcpw's orderly exits only.
    pub fn new(pid: u32) -> GroupGuard {
        GroupGuard::watched(pid).unwrap_or_else(|e| {
            // EPERM: the group is gone already (a helper that finished at once).
            if e.raw_os_error() == Some(libc::EPERM) {
                tracing::debug!("process group {pid} ended before its watchdog started");
            } else {
                tracing::warn!(
                    "process group {pid} has no watchdog ({e}); it may outlive a killed mcpw"
                );
            }
            GroupGuard::register(pid, None)
        })
    }

    /// Registers the group led by `pid` with a watchdog in it, or fails.
    pub fn watched(pid: u32) -> std::io::Result<GroupGuard> {
        let pipe = watchdog::start(pid as i32)?;
        Ok(GroupGuard::register(pid, Some(pipe)))
    }

    fn register(pid: u32, watchdog: Option<std::io::PipeWriter>) -> GroupGuard {
        let pgid = pid as i32;
        groups().insert(pgid);
        GroupGuard {
            pgid,
            _watchdog: watchdog,
        }
    }

    /// The leader's process id.
    pub fn pid(&self) -> u32 {
        self.pgid as u32
    }

    /// Kills the whole group now.
    pub fn kill(self) {
        drop(self);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.pgid);
        groups().remove(&self.pgid);
    }
}

/// Processes registered on their own (not as a group).
static SINGLES: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn singles() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    SINGLES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Owns a helper process: killed when mcpw exits on a signal; a group it
/// leads is also killed on drop.
#[derive(Debug)]
pub enum Guard {
    /// The leader of its own process group.
    Group(GroupGuard),
    /// A process in mcpw's own group.
    Single(i32),
}

impl Guard {
    /// Registers `pid`, which leads its own group when `group`.
    pub fn new(pid: u32, group: bool) -> Guard {
        if group {
            Guard::Group(GroupGuard::new(pid))
        } else {
            singles().insert(pid as i32);
            Guard::Single(pid as i32)
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // A lone process is killed by its owner (`kill_on_drop`) and reaped
        // there; here it only leaves the list, so a recycled pid is never hit.
        if let Guard::Single(pid) = self {
            singles().remove(pid);
        }
    }
}

/// Is mcpw attached to a terminal (someone could answer a password prompt)?
pub fn at_a_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(0) == 1 || libc::isatty(2) == 1 }
}

/// Kills every server process group and helper still registered (at exit).
pub fn kill_all() {
    // Children being spawned are registered first.
    let _registered = spawning();
    let all: Vec<i32> = std::mem::take(&mut *groups()).into_iter().collect();
    for pgid in all {
        kill_group(pgid);
    }
    for pid in std::mem::take(&mut *singles()) {
        // SAFETY: kill only sends a signal.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// The signal that asked mcpw to stop (its conventional exit status), once one came.
static SIGNALLED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
/// A command is stopping by itself on a signal (see [`stop_requested`]).
static GRACEFUL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static STOP: tokio::sync::Notify = tokio::sync::Notify::const_new();
/// How long a command stopping by itself may take before mcpw exits anyway,
/// in seconds (10 unless [`set_grace`] says otherwise).
static GRACE_SECS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(10);

/// Lets a command that stops by itself take up to `grace` after a signal
/// (`serve --http` drains for a while first).
pub fn set_grace(grace: std::time::Duration) {
    GRACE_SECS.store(grace.as_secs().max(1), std::sync::atomic::Ordering::SeqCst);
}

/// Returns once SIGINT, SIGTERM or SIGHUP asks mcpw to stop. A command that
/// awaits this stops by itself (`serve` closes its connections and writes
/// what is pending) instead of being ended by the signal handler; a second
/// signal, or the grace period ([`set_grace`]) later, ends the process anyway.
pub async fn stop_requested() {
    use std::sync::atomic::Ordering;
    GRACEFUL.store(true, Ordering::SeqCst);
    loop {
        let notified = STOP.notified();
        if SIGNALLED.load(Ordering::SeqCst) != 0 {
            return;
        }
        notified.await;
    }
}

/// The exit status a signal asked for (130, 143 or 129), if one came.
pub fn signal_status() -> Option<u8> {
    match SIGNALLED.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        code => u8::try_from(code).ok(),
    }
}

/// Ends mcpw now: every server group killed, the exit hooks run.
fn exit_now(code: i32) -> ! {
    // Servers first: nothing a hook does may keep them alive.
    kill_all();
    let hooks = std::mem::take(&mut *EXIT_HOOKS.lock().unwrap_or_else(|p| p.into_inner()));
    for hook in hooks {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook));
    }
    std::process::exit(code);
}

/// On SIGINT, SIGTERM or SIGHUP (a closed terminal): a command that takes the
/// stop itself ([`stop_requested`]) is told, and given its grace period; otherwise
/// every server group is killed, the exit hooks run, and mcpw exits with the
/// conventional status (130 / 143 / 129). Call once, inside a tokio runtime.
pub fn exit_on_signals() {
    #[cfg(unix)]
    tokio::spawn(async {
        use std::sync::atomic::Ordering;
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            tracing::warn!(
                "cannot install signal handlers; servers may outlive an interrupted mcpw"
            );
            return;
        };
        let mut next = async || {
            tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
                _ = hup.recv() => 129,
            }
        };
        let code = next().await;
        SIGNALLED.store(code, Ordering::SeqCst);
        if !GRACEFUL.load(Ordering::SeqCst) {
            exit_now(code);
        }
        STOP.notify_waiters();
        // The command stops by itself; a second signal or a stop that takes
        // too long ends it here.
        let grace = GRACE_SECS.load(Ordering::SeqCst);
        tokio::select! {
            _ = next() => {}
            _ = tokio::time::sleep(std::time::Duration::from_secs(grace)) => tracing::warn!("stopping took over {grace} s; exiting"),
        }
        exit_now(code);
    });
}
