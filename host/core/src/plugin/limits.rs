//! Sandbox limits of one guest store: a memory cap, table and instance caps, and
//! the per-call deadline. A limit hit is recorded so that the error can name it.

pub use crate::config::Limits;
use std::time::Duration;
use wasmtime::ResourceLimiter;

/// Which limit stopped a guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitHit {
    /// The guest tried to grow its memory past the cap.
    Memory {
        /// The cap, in bytes.
        cap: usize,
        /// The size it asked for.
        requested: usize,
    },
    /// The call ran past its deadline.
    Deadline(Duration),
    /// The guest tried to grow a table past the cap.
    TableElements(usize),
    /// A script ran past its wall time, calls included.
    WallTime(Duration),
    /// A script tried to make more calls than it may.
    Calls(u32),
    /// A script's value and logs were larger than it may return, in bytes.
    Output(usize),
}

impl std::fmt::Display for LimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitHit::Memory { cap, requested } => {
                write!(
                    f,
                    "memory limit of {} MiB (asked for {} MiB)",
                    cap >> 20,
                    requested.div_ceil(1 << 20)
                )
            }
            LimitHit::Deadline(d) => write!(f, "deadline of {} ms", d.as_millis()),
            LimitHit::TableElements(n) => write!(f, "table limit of {n} elements"),
            LimitHit::WallTime(d) => write!(f, "wall time of {} ms", d.as_millis()),
            LimitHit::Calls(n) => write!(f, "limit of {n} calls"),
            LimitHit::Output(n) => write!(f, "output limit of {} KiB", n >> 10),
        }
    }
}

/// Table elements a guest may have; far above what compiled Rust/JS/Python guests use.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// The [`ResourceLimiter`] of a guest store.
pub(crate) struct StoreLimiter {
    memory_cap: usize,
    memory_used: usize,
    pub(crate) hit: Option<LimitHit>,
}

impl StoreLimiter {
    pub(crate) fn new(limits: &Limits) -> Self {
        StoreLimiter {
            memory_cap: limits.memory_bytes,
            memory_used: 0,
            hit: None,
        }
    }
}

impl ResourceLimiter for StoreLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.memory_used - current.min(self.memory_used) + desired;
        if total > self.memory_cap {
            let hit = LimitHit::Memory {
                cap: self.memory_cap,
                requested: total,
            };
            self.hit = Some(hit);
            // An error (rather than `Ok(false)`) traps at once with a clear cause,
            // instead of handing the guest a -1 it may not check.
            wasmtime::bail!("guest exceeded its {hit}");
        }
        self.memory_used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            let hit = LimitHit::TableElements(MAX_TABLE_ELEMENTS);
            self.hit = Some(hit);
            wasmtime::bail!("guest exceeded its {hit}");
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        // A component instantiates a handful of core instances (guest, WASI adapter shims).
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        16
    }
}
