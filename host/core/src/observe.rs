//! How the plugin runtime tells of its work to whoever embeds it: a span
//! per call into a guest, when the embedder (the host, which exports traces)
//! installs [`Spans`]; nothing otherwise. The runtime itself knows no
//! tracing system, so a guest author's test kit carries none.

use std::sync::OnceLock;

/// A value of a span's attribute.
#[derive(Clone, Debug, PartialEq)]
pub enum AttributeValue {
    /// Text.
    Text(String),
    /// A whole number.
    Number(i64),
}

/// Makes a span for each call into a guest.
pub trait Spans: Send + Sync {
    /// A span named `name` with `attributes`, open until the returned value
    /// is dropped; made on the thread the guest runs on.
    fn start(
        &self,
        name: String,
        attributes: Vec<(&'static str, AttributeValue)>,
    ) -> Box<dyn OpenSpan>;
}

/// A span that is open until dropped.
pub trait OpenSpan {
    /// Marks the call failed: `error_type` (`guest_limit`, `guest_trap`)
    /// and why.
    fn fail(&self, error_type: &'static str, message: String);
}

static SPANS: OnceLock<Box<dyn Spans>> = OnceLock::new();

/// Installs where spans go, once per process; later calls are ignored.
pub fn install(spans: Box<dyn Spans>) {
    let _ = SPANS.set(spans);
}

/// A span of a call into a guest, if spans are installed; `attributes` is
/// called only then.
pub(crate) fn start(
    name: impl FnOnce() -> String,
    attributes: impl FnOnce() -> Vec<(&'static str, AttributeValue)>,
) -> Option<Box<dyn OpenSpan>> {
    let spans = SPANS.get()?;
    Some(spans.start(name(), attributes()))
}
