//! The thread that advances an engine's epoch while something runs on it,
//! parked otherwise so that an idle process costs nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::{self, Thread};
use std::time::Duration;
use wasmtime::Engine;

/// Advances `engine`'s epoch every tick while anything is [`Ticker::enter`]ed.
pub struct Ticker {
    active: Arc<AtomicUsize>,
    thread: Thread,
}

impl Ticker {
    /// A ticker thread named `name` for `engine`, one tick every `tick`.
    pub fn spawn(engine: &Engine, tick: Duration, name: &str) -> Ticker {
        let active = Arc::new(AtomicUsize::new(0));
        let weak = engine.weak();
        let running = active.clone();
        let thread = thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                loop {
                    if running.load(Ordering::Acquire) == 0 {
                        thread::park();
                        continue;
                    }
                    thread::sleep(tick);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => return,
                    }
                }
            })
            .expect("spawn an epoch ticker thread")
            .thread()
            .clone();
        Ticker { active, thread }
    }

    /// Ticks until the returned guard drops.
    pub fn enter(&self) -> Ticking {
        if self.active.fetch_add(1, Ordering::AcqRel) == 0 {
            self.thread.unpark();
        }
        Ticking(self.active.clone())
    }
}

/// Something running; see [`Ticker::enter`].
pub struct Ticking(Arc<AtomicUsize>);

impl Drop for Ticking {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
