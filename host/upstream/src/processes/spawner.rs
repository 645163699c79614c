//! Spawning a process group that dies with mcpw.
//!
//! On Linux the leader also gets SIGKILL the moment mcpw dies
//! (`PR_SET_PDEATHSIG`), before and independently of the group's watchdog.
//! That signal is tied to the *thread* that forked the child, not to the
//! process: a child forked on a tokio worker or on a blocking-pool thread
//! (which retires after 10 s idle) would be killed when that thread ends. So
//! every such spawn happens on one thread, started on first use, that lives as
//! long as mcpw. macOS and the other BSDs have no such signal; there the
//! watchdog alone ends the group (see `watchdog`).

use super::GroupGuard;
use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use std::io;
use std::sync::{OnceLock, mpsc};

type Job = Box<dyn FnOnce() + Send>;

/// The spawner thread's queue; `None` when the thread could not be started.
static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();

fn spawner() -> Option<&'static mpsc::Sender<Job>> {
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let thread = std::thread::Builder::new()
                .name("mcpw-spawner".into())
                .spawn(move || {
                    // The sender is static: this loop ends only with mcpw. A
                    // panicking job must not end the thread, and with it
                    // every child spawned here.
                    for job in rx {
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    }
                });
            match thread {
                Ok(_) => Some(tx),
                Err(e) => {
                    tracing::warn!("no spawner thread ({e}): servers get no parent-death signal");
                    None
                }
            }
        })
        .as_ref()
}

/// Spawns `command` as the leader of a new process group, with a watchdog in
/// the group (and, on Linux, a parent-death signal on the leader): the group
/// dies with mcpw, however mcpw dies, and when the guard is dropped.
pub async fn spawn_group(command: CommandWrap) -> io::Result<(Box<dyn ChildWrapper>, GroupGuard)> {
    let runtime = tokio::runtime::Handle::current();
    let job = move |tied: bool| {
        let mut command = command;
        // The child's pipes register with the caller's runtime.
        let _entered = runtime.enter();
        command.wrap(ProcessGroup::leader());
        if tied {
            die_with_this_thread(command.command_mut());
        }
        let _registering = super::spawning();
        let mut child = command.spawn()?;
        let Some(pid) = child.id() else {
            return Err(io::Error::other("exited at once"));
        };
        match GroupGuard::watched(pid) {
            Ok(guard) => Ok((child, guard)),
            Err(e) => {
                // Without its watchdog the group would not be sure to die with mcpw.
                let _ = child.start_kill();
                Err(io::Error::other(format!("cannot start its watchdog: {e}")))
            }
        }
    };
    let Some(queue) = spawner() else {
        return job(false);
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    // If the caller is gone by the time it is spawned, dropping the result
    // (the guard) kills the group.
    queue
        .send(Box::new(move || {
            let _ = tx.send(job(true));
        }))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    rx.await
        .map_err(|_| io::Error::other("the spawner thread dropped the spawn"))?
}

/// Makes the child get SIGKILL when the calling thread ends: call only on the
/// spawner thread, which lasts as long as mcpw.
#[cfg(target_os = "linux")]
fn die_with_this_thread(command: &mut tokio::process::Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the hook runs in the child between fork and exec, and makes
    // only async-signal-safe system calls; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // mcpw died before the prctl took effect: no signal will come.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_this_thread(_command: &mut tokio::process::Command) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A group spawned from a thread that then ends outlives that thread: the
    /// parent-death signal is tied to the spawner thread, not the caller's.
    #[test]
    fn a_child_outlives_the_thread_that_asked_for_it() {
        let (child, guard, mut control) = std::thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let mut sleep = tokio::process::Command::new("sleep");
            sleep.arg("300");
            let command = CommandWrap::from(sleep);
            let (child, guard) = runtime.block_on(spawn_group(command)).unwrap();
            // A control child tied to this thread: its death says the
            // thread's exit has signalled what it would.
            let mut control = std::process::Command::new("sleep");
            control.arg("300");
            // SAFETY: prctl is async-signal-safe.
            unsafe {
                control.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                    Ok(())
                });
            }
            (child, guard, control.spawn().unwrap())
        })
        .join()
        .unwrap();
        let ended = control.wait().unwrap();
        assert!(!ended.success(), "the control child was killed");
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", guard.pid())).unwrap();
        assert!(
            !stat
                .rsplit(')')
                .next()
                .unwrap()
                .trim_start()
                .starts_with('Z'),
            "killed with the thread that asked: {stat}"
        );
        drop(guard);
        drop(child);
    }
}
