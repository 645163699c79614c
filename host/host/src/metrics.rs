//! Calls, errors and latency per server and tool, in the Prometheus text
//! format (`GET /metrics` of `mcpw serve --http`). Kept for every call, from
//! any path (`mcp`, ToolSearch, direct tools, the CLI), in memory only.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

/// The labels of every series: the server and the tool's own name there.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    tool: String,
}

/// 0.5 ms to about 16 s, doubling: a local stdio call to a slow remote one.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// The metrics of one mcpw process.
pub struct Metrics {
    registry: Registry,
    calls: Family<ToolLabels, Counter>,
    errors: Family<ToolLabels, Counter>,
    latency: Family<ToolLabels, Histogram, fn() -> Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Empty metrics, registered under `mcpw_`.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("mcpw");
        let calls = Family::<ToolLabels, Counter>::default();
        let errors = Family::<ToolLabels, Counter>::default();
        let latency: Family<ToolLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "tool_calls",
            "Tool calls made to upstream servers",
            calls.clone(),
        );
        registry.register(
            "tool_errors",
            "Tool calls that failed or answered with a tool error",
            errors.clone(),
        );
        registry.register(
            "tool_call_duration_seconds",
            "Time from the call to its result",
            latency.clone(),
        );
        Metrics {
            registry,
            calls,
            errors,
            latency,
        }
    }

    /// Counts one call of `tool` on `server`.
    pub fn record(&self, server: &str, tool: &str, elapsed: Duration, error: bool) {
        let labels = ToolLabels {
            server: server.to_string(),
            tool: tool.to_string(),
        };
        self.calls.get_or_create(&labels).inc();
        if error {
            self.errors.get_or_create(&labels).inc();
        }
        self.latency
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// Everything, in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_errors_and_latency_per_server_and_tool() {
        let m = Metrics::new();
        m.record("s", "echo", Duration::from_millis(2), false);
        m.record("s", "echo", Duration::from_millis(3), true);
        m.record("t", "add", Duration::from_secs(1), false);
        let text = m.render();
        assert!(
            text.contains(r#"mcpw_tool_calls_total{server="s",tool="echo"} 2"#),
            "{text}"
        );
        assert!(text.contains(r#"mcpw_tool_errors_total{server="s",tool="echo"} 1"#));
        assert!(!text.contains(r#"mcpw_tool_errors_total{server="t""#));
        assert!(text.contains(r#"mcpw_tool_call_duration_seconds_count{server="t",tool="add"} 1"#));
        assert!(
            text.contains(
                r#"mcpw_tool_call_duration_seconds_bucket{le="0.004",server="s",tool="echo"} 2"#
            ),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }
}
