//! The guard role's checks: it answers a plain read and a plain result
//! quickly, keeps its answers within the contract (JSON objects where JSON is
//! due), and decides the same way twice.

use super::{Suite, err};
use crate::plugin::guard::{Guard, GuardedCall};
use crate::plugin::{GuestModule, Role};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROLE: Role = Role::Guard;

/// How long one verdict may take before the check calls the guard slow: it
/// runs on every call.
const QUICK: Duration = Duration::from_millis(50);

fn call(tool: &str, arguments: &str) -> GuardedCall {
    GuardedCall {
        server: "test".into(),
        tool: tool.into(),
        name: format!("test__{tool}"),
        arguments: arguments.into(),
        annotations: Some(r#"{"readOnlyHint":true}"#.into()),
        client: "conformance".into(),
        session: 1,
    }
}

/// Every guard check, in order.
pub(super) fn checks(suite: &mut Suite, module: &Arc<GuestModule>) {
    let guard = match Guard::new(module.clone()) {
        Ok(g) => g,
        Err(e) => return suite.run(ROLE, "loads", || Err(err(e))),
    };
    let read = call("read_file", r#"{"path":"notes.txt"}"#);
    let result = r#"{"content":[{"type":"text","text":"hello"}],"isError":false}"#;
    suite.run(ROLE, "decides on a call within the contract", || {
        guard.before(&read).map(|_| ()).map_err(err)
    });
    suite.run(ROLE, "decides on a result within the contract", || {
        guard.after(&read, result).map(|_| ()).map_err(err)
    });
    suite.run(ROLE, "decides the same way twice", || {
        let verdict = || guard.before(&read).map(|v| format!("{v:?}")).map_err(err);
        let kept = || {
            guard
                .after(&read, result)
                .map(|v| format!("{v:?}"))
                .map_err(err)
        };
        let (a, b, c, d) = (verdict()?, verdict()?, kept()?, kept()?);
        if a == b && c == d {
            Ok(())
        } else {
            Err(format!("{a:?} then {b:?}; {c:?} then {d:?}"))
        }
    });
    suite.run(ROLE, "takes odd input without failing", || {
        let odd = call("", r#"{"x":"\u0000 ünï 🔧","nested":{"deep":[1,[2,[3]]]}}"#);
        guard.before(&odd).map_err(err)?;
        let big = format!(
            r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#,
            "word ".repeat(200_000)
        );
        guard.after(&odd, &big).map(|_| ()).map_err(err)
    });
    suite.run(ROLE, "answers within 50 ms a call", || {
        let start = Instant::now();
        for _ in 0..10 {
            guard.before(&read).map_err(err)?;
            guard.after(&read, result).map_err(err)?;
        }
        let each = start.elapsed() / 20;
        if each <= QUICK {
            Ok(())
        } else {
            Err(format!("{} ms a verdict", each.as_millis()))
        }
    });
}
