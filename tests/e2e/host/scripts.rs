//! Code mode from Rust: `Host::run_script` against a real server, its value,
//! its calls, a lowered limit and a cancellation.

use crate::common::{ConfigDirs, host};
use crate::servers::servers;
use mcpw::plugin::LimitHit;
use mcpw::plugin::script::{ScriptControl, ScriptFailure, ScriptLimits};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_runs_a_script_against_its_tools() {
    let dirs = ConfigDirs::new();
    let everything =
        json!({"everything": {"command": "node", "args": [servers().everything(), "stdio"]}});
    let host = Arc::new(host(&dirs, everything, |_| {}).await);
    let report = host
        .run_script(
            "const r = await Promise.all([1, 2].map((i) => tools.everything__echo({message: `m${i}`}))); \
             console.log('two'); return r",
            None,
            ScriptControl::default(),
        )
        .await
        .unwrap();
    assert_eq!(report.value.as_deref(), Ok(r#"["Echo: m1","Echo: m2"]"#));
    assert_eq!(report.logs, ["two"]);
    assert_eq!(report.calls.len(), 2);
    assert!(
        report.calls.iter().all(|c| c.outcome == "ok"),
        "{:?}",
        report.calls
    );

    // A lower limit for one script.
    let limits = ScriptLimits {
        cpu: Duration::from_millis(200),
        ..host.config().settings.script_limits
    };
    let report = host
        .run_script("for (;;) {}", Some(limits), ScriptControl::default())
        .await
        .unwrap();
    assert_eq!(
        report.value,
        Err(ScriptFailure::Limit(LimitHit::Deadline(
            Duration::from_millis(200)
        )))
    );

    // Cancelled while it computes.
    let control = ScriptControl::default();
    let cancel = control.clone();
    let running = {
        let host = host.clone();
        tokio::spawn(async move { host.run_script("for (;;) {}", None, control).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    let report = running.await.unwrap().unwrap();
    assert_eq!(report.value, Err(ScriptFailure::Cancelled));
}
