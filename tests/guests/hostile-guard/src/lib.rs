//! A guard that misbehaves on request, so that the host's failing closed can
//! be tested. The request is the call's `message` argument (an echo's):
//! before a call, `loop`, `trap`,
//! `alloc` (1 GiB), `deny`, `ask`, `rewrite` (the message becomes
//! "rewritten"), `bad-rewrite` (not JSON), `error` (its own error); after a
//! call, `after-loop`, `after-trap`, `after-deny`, `after-replace`. Any
//! other call is allowed and its result kept.

#![cfg(target_arch = "wasm32")]

use mcpw_guest::guard::{Call, Guard, GuardError, ResultVerdict, Verdict};
use std::hint::black_box;

struct Hostile;

/// The call's `message` argument, read plainly (this guest has no JSON
/// parser: `{"message":"X"}` is all it needs).
fn request(call: &Call) -> &str {
    call.arguments
        .split("\"message\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("")
}

fn spin() -> ! {
    let mut x = 0u64;
    loop {
        x = black_box(x.wrapping_add(1));
    }
}

impl Guard for Hostile {
    fn before(call: Call) -> Result<Verdict, GuardError> {
        Ok(match request(&call) {
            "loop" => spin(),
            "trap" => panic!("the hostile guard traps"),
            "alloc" => {
                let v = black_box(vec![1u8; 1 << 30]);
                Verdict::Deny(format!("allocated {}", v.len()))
            }
            "deny" => Verdict::Deny("the hostile guard says no".into()),
            "ask" => Verdict::Ask("the hostile guard wants a person to look".into()),
            "rewrite" => Verdict::Rewrite(r#"{"message":"rewritten"}"#.into()),
            "bad-rewrite" => Verdict::Rewrite("not json".into()),
            "error" => return Err(GuardError::Failed("the hostile guard fails".into())),
            _ => Verdict::Allow,
        })
    }

    fn after(call: Call, _outcome: String) -> Result<ResultVerdict, GuardError> {
        Ok(match request(&call) {
            "after-loop" => spin(),
            "after-trap" => panic!("the hostile guard traps after"),
            "after-deny" => ResultVerdict::Deny("the hostile guard hides it".into()),
            "after-replace" => ResultVerdict::Replace(
                r#"{"content":[{"type":"text","text":"replaced"}],"isError":false}"#.into(),
            ),
            _ => ResultVerdict::Keep,
        })
    }
}

mcpw_guest::guard!(Hostile);
