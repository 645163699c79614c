//! Calls, errors and latency per server and tool, in the Prometheus text
//! format (`GET /metrics` of `mcpw serve --http`). Kept for every call, from
//! any path (`mcp`, ToolSearch, direct tools, the CLI), in memory only. The
//! calls of a client with a token or groups are counted again by its
//! token's name and its groups: bounded sets, where a person's id is not.

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

/// The labels of a client's calls: its token's name or its groups (one of
/// them empty), and the server and tool.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClientLabels {
    token: String,
    groups: String,
    server: String,
    tool: String,
}

/// Who made a call, as `/metrics` may name it.
pub struct ClientLabel<'a> {
    /// The token's name (empty for a principal).
    pub token: &'a str,
    /// The principal's groups, joined by `,` (empty for a token).
    pub groups: &'a str,
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
    client_calls: Family<ClientLabels, Counter>,
    client_errors: Family<ClientLabels, Counter>,
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
        let client_calls = Family::<ClientLabels, Counter>::default();
        let client_errors = Family::<ClientLabels, Counter>::default();
        registry.register(
            "client_tool_calls",
            "Tool calls by the clients of tokens and groups",
            client_calls.clone(),
        );
        registry.register(
            "client_tool_errors",
            "Tool calls by the clients of tokens and groups that failed",
            client_errors.clone(),
        );
        Metrics {
            registry,
            calls,
            errors,
            latency,
            client_calls,
            client_errors,
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

    /// Counts one call of `tool` on `server` by `client` too.
    pub fn record_client(&self, client: ClientLabel<'_>, server: &str, tool: &str, error: bool) {
        let labels = ClientLabels {
            token: client.token.to_string(),
            groups: client.groups.to_string(),
            server: server.to_string(),
            tool: tool.to_string(),
        };
        self.client_calls.get_or_create(&labels).inc();
        if error {
            self.client_errors.get_or_create(&labels).inc();
        }
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

    #[test]
    fn a_clients_calls_are_counted_by_token_and_by_groups() {
        let m = Metrics::new();
        let ci = ClientLabel {
            token: "ci",
            groups: "",
        };
        let dev = ClientLabel {
            token: "",
            groups: "dev,ops",
        };
        m.record_client(ci, "s", "echo", false);
        m.record_client(dev, "s", "echo", true);
        let text = m.render();
        let line = |token: &str, groups: &str, n: u32| {
            format!(
                r#"mcpw_client_tool_calls_total{{token="{token}",groups="{groups}",server="s",tool="echo"}} {n}"#
            )
        };
        assert!(text.contains(&line("ci", "", 1)), "{text}");
        assert!(text.contains(&line("", "dev,ops", 1)), "{text}");
        assert!(text.contains(r#"mcpw_client_tool_errors_total{token="",groups="dev,ops""#));
        assert!(!text.contains(r#"mcpw_client_tool_errors_total{token="ci""#));
    }
}
