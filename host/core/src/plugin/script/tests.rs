//! The embedded script guest's jq projections through [`Scripter::select`]:
//! each obeyed limit beside its violation, and a Scripter that goes on after
//! a select was stopped.

use super::select::memory_for;
use super::{ScriptLimits, Scripter, SelectFailure};
use crate::plugin::{
    CompileCache, Grants, GuestModule, LimitHit, Limits, LoadOptions, StaticServices,
};
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The JavaScript guest (`guest-example/javascript`, which the `mcpw`
/// crate embeds), built for these tests where the build scripts build
/// guests (`<target>/guests`).
fn script_guest() -> Vec<u8> {
    let out = std::path::Path::new(env!("OUT_DIR"));
    // OUT_DIR = <target>/<profile>/build/<package>-<hash>/out
    let target = out.ancestors().nth(4).unwrap().join("guests");
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest.ancestors().nth(2).unwrap();
    let wasm = mcpw_guest_build::build_into(workspace, "mcpw-guest-javascript", &target);
    std::fs::read(wasm).unwrap()
}

/// The JavaScript guest, compiled once for all these tests.
fn module() -> Arc<GuestModule> {
    static MODULE: OnceLock<Arc<GuestModule>> = OnceLock::new();
    MODULE
        .get_or_init(|| {
            // The compile cache is kept between runs (private to this user).
            let dir = std::env::temp_dir().join(format!(
                "mcpw-test-guests-{}",
                // SAFETY: geteuid has no preconditions.
                unsafe { libc::geteuid() }
            ));
            let options = LoadOptions {
                limits: Limits::default(),
                grants: Grants::none(),
                services: Arc::new(StaticServices::default()),
                cache: CompileCache::new(Some(dir)),
            };
            GuestModule::load("javascript", &script_guest(), options).unwrap()
        })
        .clone()
}

/// A scripter whose guest may run for `cpu` and use `memory_mb`.
fn scripter(cpu: Duration, memory_mb: usize) -> Arc<Scripter> {
    let limits = ScriptLimits {
        cpu,
        memory_bytes: memory_mb << 20,
        ..ScriptLimits::default()
    };
    Scripter::new(module(), limits).unwrap()
}

#[test]
fn select_projects_a_value_and_keeps_key_order() {
    let scripter = scripter(Duration::from_secs(5), 64);
    let input = json!({"items": [
        {"zeta": 1, "name": "a", "size": 5},
        {"zeta": 2, "name": "b", "size": 20},
    ]});
    assert_eq!(scripter.select(".items[1].name", &input), Ok(json!("b")));
    assert_eq!(
        scripter.select(".items[] | {name}", &input),
        Ok(json!([{"name": "a"}, {"name": "b"}]))
    );
    assert_eq!(
        scripter.select(".items | map(select(.size > 10)) | length", &input),
        Ok(json!(1))
    );
    let first = scripter.select(".items[0]", &input).unwrap();
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["zeta", "name", "size"]);
}

#[test]
fn select_errors_say_what_to_change() {
    let scripter = scripter(Duration::from_secs(5), 64);
    let syntax = scripter.select(".items[", &json!({})).unwrap_err();
    assert!(matches!(syntax, SelectFailure::Syntax(_)), "{syntax:?}");
    assert!(
        syntax.to_string().starts_with("select: syntax error: "),
        "{syntax}"
    );
    let runtime = scripter
        .select(".a + 1", &json!({"a": "text"}))
        .unwrap_err();
    assert!(
        matches!(&runtime, SelectFailure::Runtime(m) if m.contains("text")),
        "{runtime:?}"
    );
}

#[test]
fn a_select_within_its_limits_finishes_and_a_runaway_one_is_stopped() {
    let scripter = scripter(Duration::from_millis(500), 64);
    // Obeyed: a loop that ends, and an array that fits.
    assert_eq!(
        scripter.select("[range(100000)] | length", &Value::Null),
        Ok(json!(100000))
    );
    // Violated: an endless recursion, then an endless array.
    let endless = scripter.select("def f: f; f", &Value::Null);
    assert_eq!(
        endless,
        Err(SelectFailure::Limit(LimitHit::Deadline(
            Duration::from_millis(500)
        )))
    );
    let huge = scripter.select("[range(1e12)]", &Value::Null);
    assert!(matches!(huge, Err(SelectFailure::Limit(_))), "{huge:?}");
    let text = huge.unwrap_err().to_string();
    assert!(
        text.starts_with("select stopped: it exceeded its "),
        "{text}"
    );
    // The scripter goes on: each select has an instance of its own.
    assert_eq!(scripter.select(".a", &json!({"a": 1})), Ok(json!(1)));
}

#[test]
fn a_large_input_gets_the_memory_it_needs() {
    // About 64 MB of JSON each, as a large tool result might be: objects
    // with text, and small values, whose parsed form is largest for its text.
    let objects: Vec<Value> = (0..400_000)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "text": "x".repeat(120)}))
        .collect();
    let small: Vec<Value> = (0..3_500_000).map(|i| json!([i, true, null])).collect();
    let scripter = scripter(Duration::from_secs(20), 64);
    for input in [json!({ "items": objects }), json!({ "items": small })] {
        let size = input.to_string().len();
        assert!(size > 60 << 20, "{size} bytes");
        let items = input["items"].as_array().unwrap();
        assert_eq!(
            scripter.select(".items | length", &input),
            Ok(json!(items.len()))
        );
        assert_eq!(
            scripter.select(".items[-1]", &input).as_ref(),
            items.last().ok_or(&SelectFailure::Guest("no items".into()))
        );
    }
}

#[test]
fn select_memory_grows_with_the_input_within_a_cap() {
    let script = 64 << 20;
    assert_eq!(
        memory_for(script, 1000),
        script,
        "a small input: the script limit"
    );
    assert!(memory_for(script, 64 << 20) >= 4 * (64 << 20));
    assert_eq!(memory_for(script, usize::MAX), 1 << 30);
    assert_eq!(
        memory_for(2 << 30, usize::MAX),
        2 << 30,
        "a larger script limit stands"
    );
}
