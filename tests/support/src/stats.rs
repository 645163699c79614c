//! Statistics and process readings for the benchmarks.

use std::time::Duration;

/// The `p` quantile (0–1) of sorted samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    assert!(!sorted.is_empty(), "percentile of no samples");
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A value from `/proc/<pid>/status` in kB (`VmRSS`, `VmHWM`), 0 if unreadable.
pub fn proc_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
