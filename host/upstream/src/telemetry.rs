//! Traces: OpenTelemetry spans of what the gateway does, exported over OTLP
//! (HTTP, protobuf or JSON) and set up by the standard `OTEL_*` variables.
//!
//! Off unless an OTLP endpoint is named (`OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or `OTEL_TRACES_EXPORTER=otlp`;
//! `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off. Off,
//! a span costs one load of a flag and nothing is allocated.
//!
//! Spans carry names, ids, times and outcomes, never arguments or results,
//! unless `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
//!
//! The trace context travels in the W3C `traceparent` format: taken from a
//! request's `_meta.traceparent` or its HTTP `traceparent` header, and passed
//! on in the `_meta` of every upstream request (and as a header to HTTP
//! servers).

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::collections::HashMap;
use std::sync::OnceLock;

pub use opentelemetry::KeyValue as Attribute;
use opentelemetry::trace::FutureExt as _;

/// The exporter, once set up; `None` when tracing is off.
static TRACING: OnceLock<Option<Tracing>> = OnceLock::new();

struct Tracing {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    content: bool,
}

/// Why tracing could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A protocol this build does not speak.
    #[error(
        "{var}={value}: this build exports traces over HTTP only; use http/protobuf or http/json (port 4318)"
    )]
    Protocol {
        /// The variable that names it.
        var: &'static str,
        /// What it says.
        value: String,
    },
    /// The exporter could not be built.
    #[error("cannot set up the OTLP exporter: {0}")]
    Exporter(String),
}

/// Flushes the spans not yet exported when dropped; keep it for the life of
/// the process.
#[must_use = "dropping it flushes and stops the exporter"]
pub struct Flush(());

impl Drop for Flush {
    fn drop(&mut self) {
        if let Some(Some(t)) = TRACING.get() {
            let _ = t.provider.shutdown();
        }
    }
}

/// Sets tracing up from `env` (the process's variables): whether it is on,
/// the endpoint, the protocol, the service name and content capture. The
/// SDK reads the other `OTEL_*` variables (headers, timeout, batching,
/// sampler, resource attributes) from the process's environment. Once per
/// process; later calls change nothing.
pub fn init(env: impl Fn(&str) -> Option<String>) -> Result<Flush, TelemetryError> {
    let mut failure = None;
    TRACING.get_or_init(|| match build(&env) {
        Ok(t) => t,
        Err(e) => {
            failure = Some(e);
            None
        }
    });
    if enabled() {
        mcpw_core::observe::install(Box::new(GuestSpans));
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(Flush(())),
    }
}

/// The plugin runtime's spans of calls into guests, as children of the
/// span the guest runs under.
struct GuestSpans;

impl mcpw_core::observe::Spans for GuestSpans {
    fn start(
        &self,
        name: String,
        attributes: Vec<(&'static str, mcpw_core::observe::AttributeValue)>,
    ) -> Box<dyn mcpw_core::observe::OpenSpan> {
        use mcpw_core::observe::AttributeValue::{Number, Text};
        Box::new(Span::child(name, || {
            attributes
                .into_iter()
                .map(|(key, value)| match value {
                    Text(t) => KeyValue::new(key, t),
                    Number(n) => KeyValue::new(key, n),
                })
                .collect()
        }))
    }
}

impl mcpw_core::observe::OpenSpan for Span {
    fn fail(&self, error_type: &'static str, message: String) {
        Span::fail(self, error_type, || message);
    }
}

fn build(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Tracing>, TelemetryError> {
    let set = |var: &str| env(var).filter(|v| !v.trim().is_empty());
    let is =
        |var: &str, value: &str| set(var).is_some_and(|v| v.trim().eq_ignore_ascii_case(value));
    if is("OTEL_SDK_DISABLED", "true") || is("OTEL_TRACES_EXPORTER", "none") {
        return Ok(None);
    }
    let wanted = is("OTEL_TRACES_EXPORTER", "otlp")
        || set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some();
    if !wanted {
        return Ok(None);
    }
    let protocol = protocol(env)?;
    use opentelemetry_otlp::WithExportConfig as _;
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol);
    // The endpoint as `env` says (the exporter itself would read the
    // process's variables): the traces' own URL as it is, the general one
    // with the traces' path.
    if let Some(url) = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        exporter = exporter.with_endpoint(url.trim());
    } else if let Some(url) = set("OTEL_EXPORTER_OTLP_ENDPOINT") {
        exporter =
            exporter.with_endpoint(format!("{}/v1/traces", url.trim().trim_end_matches('/')));
    }
    let exporter = exporter
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    // The SDK reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; the name
    // is mcpw unless they say otherwise.
    let mut resource = opentelemetry_sdk::Resource::builder();
    if set("OTEL_SERVICE_NAME").is_none()
        && !set("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| a.contains("service.name="))
    {
        resource = resource.with_service_name("mcpw");
    }
    let resource = resource
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("mcpw");
    Ok(Some(Tracing {
        provider,
        tracer,
        content: is("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
    }))
}

/// The OTLP protocol the variables ask for: traces' own, else the general
/// one, else http/protobuf (the specification's default).
fn protocol(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<opentelemetry_otlp::Protocol, TelemetryError> {
    use opentelemetry_otlp::Protocol;
    for var in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        let Some(value) = env(var).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        return match value.trim() {
            "http/protobuf" => Ok(Protocol::HttpBinary),
            "http/json" => Ok(Protocol::HttpJson),
            other => Err(TelemetryError::Protocol {
                var,
                value: other.to_string(),
            }),
        };
    }
    Ok(Protocol::HttpBinary)
}

fn tracing() -> Option<&'static Tracing> {
    TRACING.get().and_then(Option::as_ref)
}

/// Are spans being exported?
pub fn enabled() -> bool {
    tracing().is_some()
}

/// May spans carry arguments and results?
fn content_enabled() -> bool {
    tracing().is_some_and(|t| t.content)
}

/// Content for a span: at most this many bytes of it.
const CONTENT_MAX: usize = 4096;

/// `value` as a span attribute `key`, cut to `CONTENT_MAX` bytes, when
/// content may be recorded.
pub fn content(key: &'static str, value: &impl serde::Serialize) -> Option<KeyValue> {
    if !content_enabled() {
        return None;
    }
    let mut text = serde_json::to_string(value).ok()?;
    if text.len() > CONTENT_MAX {
        let mut end = CONTENT_MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    Some(KeyValue::new(key, text))
}

/// One operation's span. Ends when dropped; marks itself failed with
/// [`Span::fail`]. A no-op when tracing is off (and by default).
#[derive(Default)]
pub struct Span(Option<Context>);

impl Span {
    /// A span of `kind` under `parent`, with the attributes `attributes`
    /// makes (called only when tracing is on).
    pub fn start(
        name: impl Into<std::borrow::Cow<'static, str>>,
        kind: SpanKind,
        parent: &Context,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Span {
        let Some(t) = tracing() else {
            return Span(None);
        };
        let span = t
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes())
            .start_with_context(&t.tracer, parent);
        Span(Some(parent.with_span(span)))
    }

    /// An internal span under the current context's span.
    pub fn child(
        name: impl Into<std::borrow::Cow<'static, str>>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Span {
        Span::under_current(name, SpanKind::Internal, attributes)
    }

    /// A client span (a request to an upstream server) under the current
    /// context's span.
    pub fn client(
        name: impl Into<std::borrow::Cow<'static, str>>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Span {
        Span::under_current(name, SpanKind::Client, attributes)
    }

    fn under_current(
        name: impl Into<std::borrow::Cow<'static, str>>,
        kind: SpanKind,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Span {
        // Off: not even the current context is looked up.
        if !enabled() {
            return Span(None);
        }
        Span::start(name, kind, &Context::current(), attributes)
    }

    /// Is the span recorded (tracing on)?
    pub fn is_recording(&self) -> bool {
        self.0.is_some()
    }

    /// Adds attributes.
    pub fn set(&self, attributes: impl FnOnce() -> Vec<KeyValue>) {
        if let Some(cx) = &self.0 {
            cx.span().set_attributes(attributes());
        }
    }

    /// Marks the operation failed: `error.type` and an error status.
    pub fn fail(&self, error_type: &'static str, message: impl FnOnce() -> String) {
        if let Some(cx) = &self.0 {
            let span = cx.span();
            span.set_attribute(KeyValue::new("error.type", error_type));
            span.set_status(Status::error(message()));
        }
    }

    /// `f`, run in this span's context wherever it runs: for work handed to
    /// a blocking thread, whose own spans (a guest's, say) are then children
    /// of this one.
    pub fn carry<R, F: FnOnce() -> R>(&self, f: F) -> impl FnOnce() -> R + use<R, F> {
        let cx = self.0.clone();
        move || {
            let _attached = cx.map(Context::attach);
            f()
        }
    }

    /// Awaits `work` in this span's context, so that its own spans are
    /// children of this one; as it is when tracing is off.
    pub async fn run<F: Future>(&self, work: F) -> F::Output {
        match &self.0 {
            Some(cx) => work.with_context(cx.clone()).await,
            None => work.await,
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(cx) = &self.0 {
            cx.span().end();
        }
    }
}

/// `work`, polled in the current context wherever it is spawned.
pub fn carried<F: Future>(work: F) -> opentelemetry::trace::WithContext<F> {
    work.with_context(Context::current())
}

/// The context a `traceparent` (and `tracestate`) gives, when valid.
pub fn extract(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Context> {
    use opentelemetry::propagation::TextMapPropagator as _;
    let traceparent = traceparent?;
    let mut fields = HashMap::new();
    fields.insert("traceparent".to_string(), traceparent.to_string());
    if let Some(state) = tracestate {
        fields.insert("tracestate".to_string(), state.to_string());
    }
    let cx = TraceContextPropagator::new().extract(&fields);
    cx.span().span_context().is_valid().then_some(cx)
}

/// The `traceparent` of the span in `cx`, when there is one.
fn traceparent_of(cx: &Context) -> Option<String> {
    use opentelemetry::propagation::TextMapPropagator as _;
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut fields = HashMap::new();
    TraceContextPropagator::new().inject_context(cx, &mut fields);
    fields.remove("traceparent")
}

/// The current context's `traceparent`, to pass on to an upstream request.
pub fn current_traceparent() -> Option<String> {
    if !enabled() {
        return None;
    }
    traceparent_of(&Context::current())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn off_unless_an_endpoint_or_the_exporter_is_named() {
        assert!(build(&env(&[])).unwrap().is_none());
        assert!(
            build(&env(&[("OTEL_SERVICE_NAME", "x")]))
                .unwrap()
                .is_none()
        );
        let off = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ];
        assert!(build(&env(&off)).unwrap().is_none());
        let none = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ];
        assert!(build(&env(&none)).unwrap().is_none());
    }

    #[test]
    fn grpc_is_refused_with_what_to_use_instead() {
        let grpc = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ];
        let e = build(&env(&grpc)).err().expect("refused").to_string();
        assert!(e.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc"), "{e}");
        assert!(e.contains("http/protobuf"), "{e}");
        // The traces' own variable comes first.
        let own = [
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ];
        assert!(matches!(
            protocol(&env(&own)),
            Ok(opentelemetry_otlp::Protocol::HttpJson)
        ));
    }

    #[test]
    fn a_traceparent_round_trips_and_garbage_is_ignored() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let cx = extract(Some(tp), None).expect("valid");
        assert_eq!(traceparent_of(&cx).as_deref(), Some(tp));
        assert!(extract(Some("00-zz-b7ad6b7169203331-01"), None).is_none());
        assert!(extract(None, None).is_none());
    }
}
