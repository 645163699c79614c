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

    // Binary content comes as a reference the host reads back.
    let report = host
        .run_script(
            "const r = await tools['everything__get-tiny-image']({}); \
             return r.find((b) => b.type === 'image')",
            None,
            ScriptControl::default(),
        )
        .await
        .unwrap();
    let image: serde_json::Value = serde_json::from_str(report.value.as_deref().unwrap()).unwrap();
    let kept = host.kept(image["uri"].as_str().unwrap()).expect("kept");
    assert_eq!(kept.mime_type, "image/png");
    assert_eq!(image["bytes"], kept.bytes(), "{image}");
    assert!(kept.base64.starts_with("iVBORw0KGgo"), "a PNG");

    // No host clock: time stands at the Unix epoch.
    let report = host
        .run_script(
            "return [Date.now(), new Date().getUTCFullYear()]",
            None,
            ScriptControl::default(),
        )
        .await
        .unwrap();
    assert_eq!(report.value.as_deref(), Ok("[0,1970]"));

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

/// A toolbox that holds every call until the test lets it finish.
#[derive(Default)]
struct Held {
    pending: std::sync::Mutex<Vec<mcpw::plugin::script::Done>>,
    started: std::sync::Condvar,
    most: std::sync::atomic::AtomicUsize,
}

impl mcpw::plugin::script::Toolbox for Held {
    fn start(&self, _name: &str, _arguments: &str, done: mcpw::plugin::script::Done) {
        let mut pending = self.pending.lock().unwrap();
        pending.push(done);
        self.most
            .fetch_max(pending.len(), std::sync::atomic::Ordering::SeqCst);
        self.started.notify_all();
    }
    fn search(
        &self,
        _: &str,
        _: u32,
    ) -> Result<Vec<mcpw::plugin::script::ToolInfo>, mcpw::plugin::ServiceError> {
        Ok(Vec::new())
    }
    fn describe(
        &self,
        name: &str,
    ) -> Result<mcpw::plugin::script::ToolInfo, mcpw::plugin::ServiceError> {
        Err(mcpw::plugin::ServiceError::NotFound(name.into()))
    }
    fn stop(&self) {}
}

#[test]
fn calls_awaited_together_run_together_up_to_the_concurrency_limit() {
    use mcpw::plugin::{GuestModule, LoadOptions, StaticServices};
    let options = LoadOptions {
        limits: mcpw::plugin::Limits::default(),
        grants: Default::default(),
        services: Arc::new(StaticServices::default()),
        cache: crate::common::cache(),
    };
    let module =
        GuestModule::load("javascript", mcpw::guests::DEFAULT_SCRIPT_GUEST, options).unwrap();
    let limits = ScriptLimits {
        concurrency: 4,
        ..ScriptLimits::default()
    };
    let scripter = mcpw::plugin::script::Scripter::new(module, limits).unwrap();
    let held = Arc::new(Held::default());
    let toolbox = held.clone();
    let run = std::thread::spawn(move || {
        let code =
            "return (await Promise.all(Array.from({length: 10}, (_, i) => tools.t({i})))).length";
        scripter.run(code, limits, toolbox, &ScriptControl::default())
    });
    let mut finished = 0;
    while finished < 10 {
        // Waits until as many calls as may run at once have started.
        let want = 4.min(10 - finished);
        let guard = held.pending.lock().unwrap();
        let mut guard = held.started.wait_while(guard, |p| p.len() < want).unwrap();
        let batch: Vec<_> = guard.drain(..).collect();
        drop(guard);
        finished += batch.len();
        for done in batch {
            done(Ok(mcpw::plugin::CallOutcome {
                content: r#"[{"type":"text","text":"ok"}]"#.into(),
                structured_content: None,
                is_error: false,
            }));
        }
    }
    let report = run.join().unwrap();
    assert_eq!(report.value.as_deref(), Ok("10"));
    assert_eq!(
        held.most.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "four calls at once, never more"
    );
}
