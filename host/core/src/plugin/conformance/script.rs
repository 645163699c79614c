//! The script role's checks: scripts against an echo toolbox, the guest's
//! description and declarations, a script that never ends, and jq
//! projections (`select`), which a guest may decline.

use super::{Suite, err};
use crate::plugin::script::{
    Done, ScriptControl, ScriptFailure, ScriptLimits, Scripter, SelectFailure, ToolInfo, Toolbox,
};
use crate::plugin::services::{CallOutcome, ServiceError};
use crate::plugin::{GuestModule, LimitHit, Role};
use std::sync::Arc;
use std::time::Duration;

const ROLE: Role = Role::Script;

/// Most characters the code tool's description may have: about 600 tokens.
const USAGE_MAX_CHARS: usize = 2400;

/// A toolbox with one tool, `echo`, that answers its arguments as text.
struct Echo;

fn echo_info() -> ToolInfo {
    ToolInfo {
        name: "echo".into(),
        server: "test".into(),
        original_name: "echo".into(),
        title: None,
        description: "Echoes its message.".into(),
        input_schema:
            r#"{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}"#
                .into(),
        output_schema: None,
        annotations: None,
        kind: crate::catalog::ToolKind::Tool,
    }
}

impl Toolbox for Echo {
    fn start(&self, name: &str, arguments: &str, done: Done) {
        done(match name {
            "echo" => Ok(CallOutcome {
                content: serde_json::json!([{"type": "text", "text": arguments}]).to_string(),
                structured_content: None,
                is_error: false,
            }),
            _ => Err(ServiceError::NotFound(format!("no tool named {name:?}"))),
        })
    }

    fn search(&self, _query: &str, _limit: u32) -> Result<Vec<ToolInfo>, ServiceError> {
        Ok(vec![echo_info()])
    }

    fn describe(&self, name: &str) -> Result<ToolInfo, ServiceError> {
        match name {
            "echo" => Ok(echo_info()),
            _ => Err(ServiceError::NotFound(format!("no tool named {name:?}"))),
        }
    }

    fn stop(&self) {}
}

/// Every script check, in order.
pub(super) fn checks(suite: &mut Suite, module: &Arc<GuestModule>) {
    let limits = ScriptLimits {
        cpu: Duration::from_millis(500),
        wall: Duration::from_secs(5),
        ..ScriptLimits::default()
    };
    let scripter = match Scripter::new(module.clone(), limits) {
        Ok(s) => s,
        Err(e) => return suite.run(ROLE, "loads", || Err(err(e))),
    };
    let run = |code: &str| {
        scripter
            .run(code, limits, Arc::new(Echo), &ScriptControl::default())
            .value
    };
    let expect = |code: &str, want: &dyn Fn(&Result<String, ScriptFailure>) -> bool| {
        let got = run(code);
        if want(&got) {
            Ok(())
        } else {
            Err(format!("{code:?} gave {got:?}"))
        }
    };
    suite.run(ROLE, "a script's value comes back as JSON", || {
        expect("return [1 + 1, 'a']", &|v| v.as_deref() == Ok("[2,\"a\"]"))
    });
    suite.run(
        ROLE,
        "a call reaches the toolbox and resolves to its text",
        || {
            expect("return await tools.echo({message: 'hi'})", &|v| {
                v.as_deref().is_ok_and(|v| v.contains("hi"))
            })
        },
    );
    suite.run(ROLE, "a syntax error is a syntax error", || {
        expect("return (", &|v| matches!(v, Err(ScriptFailure::Syntax(_))))
    });
    suite.run(ROLE, "a throw is an error with its message", || {
        expect(
            "throw new Error('boom')",
            &|v| matches!(v, Err(ScriptFailure::Thrown(m)) if m.contains("boom")),
        )
    });
    suite.run(ROLE, "an endless loop is stopped by the deadline", || {
        expect("while (true) {}", &|v| {
            matches!(v, Err(ScriptFailure::Limit(LimitHit::Deadline(_))))
        })
    });
    suite.run(ROLE, "describes itself within about 600 tokens", || {
        let usage = scripter.usage().map_err(err)?;
        match usage.chars().count() {
            0 => Err("the description is empty".into()),
            n if n > USAGE_MAX_CHARS => Err(format!("the description has {n} characters")),
            _ => Ok(()),
        }
    });
    suite.run(ROLE, "declares each tool it is given", || {
        let out = scripter.declare(&[echo_info(), echo_info()]).map_err(err)?;
        if out.iter().all(|d| d.contains("echo")) {
            Ok(())
        } else {
            Err(format!("declarations do not name the tool: {out:?}"))
        }
    });
    select_checks(suite, &scripter);
}

/// `select`: a guest that evaluates jq gives the jq answers, one that does
/// not says so (`unsupported`); either way it ends under the limits.
fn select_checks(suite: &mut Suite, scripter: &Scripter) {
    let input = serde_json::json!({"items": [{"name": "a", "size": 5}, {"name": "b", "size": 20}]});
    let expect =
        |expression: &str, want: &dyn Fn(&Result<serde_json::Value, SelectFailure>) -> bool| {
            let got = scripter.select(expression, &input);
            if want(&got) || matches!(got, Err(SelectFailure::Unsupported(_))) {
                Ok(())
            } else {
                Err(format!("select {expression:?} gave {got:?}"))
            }
        };
    suite.run(
        ROLE,
        "select gives its outputs as JSON, or says it does not select",
        || {
            expect(".items[] | select(.size > 10) | .name", &|v| {
                v.as_ref().is_ok_and(|v| v == "b")
            })?;
            expect(".items[].name", &|v| {
                v.as_ref()
                    .is_ok_and(|v| *v == serde_json::json!(["a", "b"]))
            })
        },
    );
    suite.run(ROLE, "a jq syntax error is a syntax error", || {
        expect(".items[", &|v| matches!(v, Err(SelectFailure::Syntax(_))))
    });
    suite.run(ROLE, "a jq runtime error is a runtime error", || {
        expect(".items + 1", &|v| {
            matches!(v, Err(SelectFailure::Runtime(_)))
        })
    });
    suite.run(ROLE, "an endless select is stopped by a limit", || {
        expect("def f: f; f", &|v| {
            matches!(v, Err(SelectFailure::Limit(_)))
        })
    });
}
