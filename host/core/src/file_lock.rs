//! Advisory file locks taken with a deadline: a lock another process holds
//! (hung, or just slow) costs a bounded wait and an error, never a hang.

use std::fs::{File, TryLockError};
use std::time::{Duration, Instant};

/// How long to wait for a lock that is held before giving up.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(2);

/// Takes `file`'s exclusive lock, waiting at most `wait`; blocking, so off
/// the async threads. A lock still held then is a `TimedOut` error.
pub fn lock_within(file: &File, wait: Duration) -> std::io::Result<()> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(5);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::Error(e)) => return Err(e),
            Err(TryLockError::WouldBlock) if Instant::now() >= deadline => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "another process has held its lock for over {} ms",
                        wait.as_millis()
                    ),
                ));
            }
            Err(TryLockError::WouldBlock) => {
                std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
                pause = (pause * 2).min(Duration::from_millis(100));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_lock_is_taken_and_a_held_one_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .unwrap()
        };
        let (a, b) = (open(), open());
        lock_within(&a, Duration::from_millis(50)).unwrap();
        let started = Instant::now();
        let err = lock_within(&b, Duration::from_millis(100)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(100));
        drop(a);
        lock_within(&b, Duration::from_millis(50)).unwrap();
    }
}
