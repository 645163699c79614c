//! The engine's loop against a scripted host, natively.

use crate::engine::{Host, ScriptError, run};
use std::collections::VecDeque;

/// A host whose calls finish in the order they were started, answering each
/// with `answer(name, args)`.
struct Fake {
    started: Vec<(String, String)>,
    queue: VecDeque<u32>,
    answer: fn(&str, &str) -> String,
}

impl Host for Fake {
    fn start_call(&mut self, name: &str, arguments: &str) -> Result<u32, String> {
        if name == "refused" {
            return Err("over the limit".into());
        }
        self.started.push((name.into(), arguments.into()));
        let ticket = self.started.len() as u32;
        self.queue.push_back(ticket);
        Ok(ticket)
    }

    fn next_finished(&mut self) -> Option<(u32, String)> {
        let ticket = self.queue.pop_front()?;
        let (name, args) = &self.started[ticket as usize - 1];
        Some((ticket, (self.answer)(name, args)))
    }

    fn search(&mut self, query: &str, limit: u32) -> Result<String, String> {
        Ok(format!(
            r#"[{{"name":"echo","server":"s","declaration":"q={query} l={limit}"}}]"#
        ))
    }

    fn describe(&mut self, name: &str) -> Result<String, String> {
        if name == "echo" {
            Ok("tools.echo(args: { message: string }): Promise<string>".into())
        } else {
            Err(format!("no tool named {name:?}"))
        }
    }
}

fn echo(name: &str, args: &str) -> String {
    match name {
        "echo" => {
            let text = serde_json::json!(format!("echo {args}")).to_string();
            format!(r#"{{"content":[{{"type":"text","text":{text}}}],"structuredContent":null,"isError":false}}"#)
        }
        "structured" => r#"{"content":[],"structuredContent":{"n":[1,2,3]},"isError":false}"#.into(),
        "image" => r#"{"content":[{"type":"image","mimeType":"image/png","bytes":10}],"structuredContent":null,"isError":false}"#.into(),
        "broken" => r#"{"content":[{"type":"text","text":"disk full"}],"structuredContent":null,"isError":true}"#.into(),
        _ => r#"{"failure":"tool not found"}"#.into(),
    }
}

/// A script's value, its log, and the calls it started.
type Ran = (
    Result<String, ScriptError>,
    Vec<String>,
    Vec<(String, String)>,
);

fn script(code: &str) -> Ran {
    struct Shared(std::rc::Rc<std::cell::RefCell<Fake>>);
    impl Host for Shared {
        fn start_call(&mut self, n: &str, a: &str) -> Result<u32, String> {
            self.0.borrow_mut().start_call(n, a)
        }
        fn next_finished(&mut self) -> Option<(u32, String)> {
            self.0.borrow_mut().next_finished()
        }
        fn search(&mut self, q: &str, l: u32) -> Result<String, String> {
            self.0.borrow_mut().search(q, l)
        }
        fn describe(&mut self, n: &str) -> Result<String, String> {
            self.0.borrow_mut().describe(n)
        }
    }
    let fake = std::rc::Rc::new(std::cell::RefCell::new(Fake {
        started: Vec::new(),
        queue: VecDeque::new(),
        answer: echo,
    }));
    let outcome = run(Box::new(Shared(fake.clone())), code);
    let started = fake.borrow().started.clone();
    (outcome.value, outcome.logs, started)
}

#[test]
fn a_script_returns_its_value_as_json() {
    assert_eq!(
        script("return {a: [1, 'x']}").0.unwrap(),
        r#"{"a":[1,"x"]}"#
    );
    assert_eq!(script("1 + 1").0.unwrap(), "2");
    assert_eq!(script("const x = 1;").0.unwrap(), "null");
}

#[test]
fn a_call_resolves_to_its_text_or_its_structured_content() {
    let (value, _, started) = script("return await tools.echo({message: 'hi'})");
    assert_eq!(value.unwrap(), r#""echo {\"message\":\"hi\"}""#);
    assert_eq!(
        started,
        [("echo".to_string(), r#"{"message":"hi"}"#.to_string())]
    );
    let (value, _, _) = script("const r = await mcp.call('structured', {}); return r.n.length");
    assert_eq!(value.unwrap(), "3");
    let (value, _, _) = script("return await tools.image()");
    assert_eq!(
        value.unwrap(),
        r#"[{"type":"image","mimeType":"image/png","bytes":10}]"#
    );
}

#[test]
fn calls_awaited_together_all_start_before_any_is_awaited() {
    let (value, _, started) =
        script("const r = await Promise.all([1,2,3].map(i => tools.echo({i}))); return r.length");
    assert_eq!(value.unwrap(), "3");
    assert_eq!(started.len(), 3);
}

#[test]
fn a_tool_error_throws_with_the_tools_text() {
    let (value, _, _) = script("try { await tools.broken() } catch (e) { return e.message }");
    assert_eq!(value.unwrap(), r#""broken: disk full""#);
    let (value, _, _) = script("await tools.missing()");
    assert_eq!(
        value.unwrap_err(),
        ScriptError::Thrown("Error: missing: tool not found".into()),
        "no frames of the prelude"
    );
}

#[test]
fn a_call_the_host_refuses_rejects_at_once() {
    let (value, _, _) = script("await tools.refused()");
    assert!(matches!(value, Err(ScriptError::Thrown(m)) if m.contains("over the limit")));
}

#[test]
fn syntax_errors_and_throws_are_told_apart() {
    assert!(matches!(script("return (").0, Err(ScriptError::Syntax(_))));
    let (value, _, _) = script("throw new TypeError('bad')");
    let Err(ScriptError::Thrown(m)) = value else {
        panic!("{value:?}")
    };
    assert!(
        m.starts_with("TypeError: bad\n    at <main> (script:1:"),
        "{m}"
    );
}

#[test]
fn an_unhandled_rejection_fails_the_script() {
    let (value, _, started) = script("tools.broken(); return 1");
    assert_eq!(started.len(), 1);
    assert!(
        matches!(value, Err(ScriptError::Thrown(m)) if m.contains("unhandled rejection") && m.contains("disk full")),
    );
}

#[test]
fn a_promise_nothing_can_settle_is_a_stall() {
    let (value, _, _) = script("await new Promise(() => {})");
    assert!(matches!(value, Err(ScriptError::Stalled(_))));
}

#[test]
fn logs_are_kept_in_order_with_the_value() {
    let (value, logs, _) = script("console.log('a', 1, {b: 2}); console.error('c'); return 0");
    assert_eq!(value.unwrap(), "0");
    assert_eq!(logs, ["a 1 {\"b\":2}", "error: c"]);
}

#[test]
fn search_and_describe_reach_the_host() {
    let (value, _, _) = script("return (await mcp.search('files', {limit: 3}))[0].declaration");
    assert_eq!(value.unwrap(), r#""q=files l=3""#);
    let (value, _, _) = script("return mcp.describe('echo')");
    assert!(value.unwrap().contains("tools.echo"));
    assert!(
        matches!(script("mcp.describe('nope')").0, Err(ScriptError::Thrown(m)) if m.contains("no tool named"))
    );
}

#[test]
fn values_json_cannot_hold_are_refused() {
    assert!(matches!(
        script("const a = {}; a.a = a; return a").0,
        Err(ScriptError::InvalidValue(_))
    ));
    assert!(matches!(
        script("return 10n").0,
        Err(ScriptError::InvalidValue(_))
    ));
}

#[test]
fn deep_recursion_is_a_range_error_not_a_crash() {
    let (value, _, _) = script("function f(n) { return f(n + 1) } f(0)");
    let Err(ScriptError::Thrown(m)) = value else {
        panic!("{value:?}")
    };
    assert!(m.contains("recursive calls"), "{m}");
    assert!(
        m.contains("at f (script:1:") && m.contains('×') && m.lines().count() == 2,
        "{m}"
    );
}

#[test]
fn tools_is_not_a_thenable() {
    assert_eq!(
        script("const t = await tools; return typeof t.then")
            .0
            .unwrap(),
        r#""undefined""#
    );
}

#[test]
fn stacks_keep_the_scripts_frames_folded() {
    let raw = "RangeError: x\n    at f (script:1:39)\n    at f (script:1:39)\n    at settle (prelude:3:1)\n    at <main> (script:2:3)";
    assert_eq!(
        crate::engine::tidy_stack(raw),
        "RangeError: x\n    at f (script:1:39) (×2)\n    at <main> (script:2:3)"
    );
}
