//! jq projections (`select`): an agent's jq expression evaluated on JSON with
//! jaq. The host runs each one in a fresh instance under the script limits,
//! so an expression that loops or grows without end is stopped by the
//! sandbox; this module only has to be right, and its errors readable.

use jaq_core::load::{self, Arena, File, Loader, lex};
use jaq_core::{Ctx, Vars, compile, data};
use jaq_json::{Num, Val};
use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};
use std::fmt::Write as _;

/// Why [`select`] gave no value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectError {
    /// The expression is not valid jq (it does not parse, or names a filter
    /// or variable that does not exist).
    Syntax(String),
    /// It failed on this input, or the input or output is not JSON.
    Runtime(String),
    /// It needs something this guest does not offer (modules).
    Unsupported(String),
}

/// Most bytes of a message: a runtime error quotes values, which may be the
/// whole (large) input.
const MESSAGE_MAX: usize = 400;

/// Most arrays and objects nested in one another in an output: the host
/// reads the output with serde_json, which stops there (as it does reading
/// the input here).
const DEPTH_MAX: usize = 127;

/// Evaluates `expression` on `input` (JSON text): the single output as JSON
/// text, or a JSON array of the outputs when there are none or several.
pub fn select(expression: &str, input: String) -> Result<String, SelectError> {
    let filter = compile(expression)?;
    let value: Val = serde_json::from_str(&input)
        .map_err(|e| SelectError::Runtime(format!("the input is not JSON: {e}")))?;
    // The text is not needed any more: on a large input, the guest holds
    // less while the expression runs.
    drop(input);
    let outputs = run(&filter, value)?;
    let json = match outputs.as_slice() {
        [one] => serde_json::to_string(&Json(one, 0)),
        many => serde_json::to_string(&JsonSeq(many)),
    };
    json.map_err(|e| SelectError::Runtime(format!("the output cannot be written as JSON: {e}")))
}

type Filter = jaq_core::Filter<data::JustLut<Val>>;

/// Parses and compiles `expression` with jq's standard library; no modules.
fn compile(expression: &str) -> Result<Filter, SelectError> {
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let arena = Arena::default();
    let file = File {
        code: expression,
        path: (),
    };
    let modules = Loader::new(defs)
        .load(&arena, file)
        .map_err(|errors| load_error(expression, errors))?;
    jaq_core::Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errors| {
            let messages = errors.into_iter().flat_map(|(_, undefined)| undefined);
            let messages = messages.map(|(name, what)| {
                let shown = match what {
                    compile::Undefined::Filter(arity) => format!("{name}/{arity}"),
                    _ => name.to_string(),
                };
                format!(
                    "undefined {} `{shown}` {}",
                    what.as_str(),
                    at(expression, name)
                )
            });
            SelectError::Syntax(join(messages))
        })
}

fn load_error(expression: &str, errors: load::Errors<&str, ()>) -> SelectError {
    let mut syntax = Vec::new();
    let mut unsupported = Vec::new();
    for (_, error) in errors {
        match error {
            load::Error::Io(io) => unsupported.extend(
                io.into_iter()
                    .map(|(path, _)| format!("modules cannot be loaded here ({path:?})")),
            ),
            load::Error::Lex(lex) => {
                syntax.extend(lex.into_iter().map(|(expect, rest)| match expect {
                    lex::Expect::Delim(open) => {
                        format!("unclosed `{open}` {}", at(expression, open))
                    }
                    expect => format!("expected {} {}", expect_lex(&expect), at(expression, rest)),
                }))
            }
            load::Error::Parse(parse) => syntax.extend(parse.into_iter().map(|(expect, found)| {
                let shown = if found.is_empty() {
                    "nothing more".to_string()
                } else {
                    format!("`{found}`")
                };
                format!(
                    "expected {} but found {shown} {}",
                    expect.as_str(),
                    at(expression, found)
                )
            })),
        }
    }
    if syntax.is_empty() {
        SelectError::Unsupported(join(unsupported.into_iter()))
    } else {
        SelectError::Syntax(join(syntax.into_iter()))
    }
}

/// What the lexer expected, in words; never panics on a delimiter it does
/// not know (its own `as_str` would).
fn expect_lex(expect: &lex::Expect<&str>) -> &'static str {
    match expect {
        lex::Expect::Digit => "a digit",
        lex::Expect::Ident => "an identifier",
        lex::Expect::Delim(_) => "a closing delimiter",
        lex::Expect::Escape => "a string escape sequence",
        lex::Expect::Unicode => "four hexadecimal digits",
        lex::Expect::Token => "a token",
        _ => "something else",
    }
}

/// "at line L, column C" of `part`, a slice of `whole` (or its end when it
/// is not one).
fn at(whole: &str, part: &str) -> String {
    let start = part.as_ptr() as usize;
    let base = whole.as_ptr() as usize;
    let offset = if start >= base && start <= base + whole.len() {
        start - base
    } else {
        whole.len()
    };
    let before = &whole[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    if offset == whole.len() {
        "at the end of the expression".to_string()
    } else {
        format!("at line {line}, column {column}")
    }
}

fn join(messages: impl Iterator<Item = String>) -> String {
    let all: Vec<String> = messages.collect();
    bounded(&all.join("; "))
}

/// Runs `filter` on `input` and collects its outputs.
fn run(filter: &Filter, input: Val) -> Result<Vec<Val>, SelectError> {
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut outputs = Vec::new();
    for output in filter.id.run((ctx, input)) {
        match output {
            Ok(v) => outputs.push(v),
            Err(exn) => match exn.get_err() {
                Ok(error) => return Err(SelectError::Runtime(error_text(error))),
                // `halt` ends the expression: with code 0 after what it gave.
                Err(exn) => match exn.get_halt() {
                    Ok(0) => break,
                    Ok(code) => {
                        return Err(SelectError::Runtime(format!(
                            "the expression halted with exit code {code}"
                        )));
                    }
                    Err(_) => {
                        return Err(SelectError::Runtime(
                            "the expression ended abnormally".into(),
                        ));
                    }
                },
            },
        }
    }
    Ok(outputs)
}

/// An error's message: `error("…")` and most native filters fail with a
/// string, shown without its quotes as jq does; other errors describe
/// themselves (and quote the values they name).
fn error_text(error: jaq_core::Error<Val>) -> String {
    let shown = bounded(&error);
    if !shown.starts_with('"') {
        return shown;
    }
    match error.into_val() {
        Val::TStr(text) => bounded(&String::from_utf8_lossy(&text)),
        _ => shown,
    }
}

/// `value`'s text, cut to [`MESSAGE_MAX`] bytes; formatting stops there, so a
/// huge value is never written out whole.
fn bounded(value: &dyn std::fmt::Display) -> String {
    struct Cut(String);
    impl std::fmt::Write for Cut {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let room = MESSAGE_MAX - self.0.len();
            if s.len() <= room {
                self.0.push_str(s);
                return Ok(());
            }
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.0.push_str(&s[..end]);
            Err(std::fmt::Error)
        }
    }
    let mut cut = Cut(String::new());
    if write!(cut, "{value}").is_err() {
        cut.0.push('…');
    }
    cut.0
}

/// A jaq value written as JSON, at nesting depth `.1`.
struct Json<'a>(&'a Val, usize);

/// Several outputs, written as one array.
struct JsonSeq<'a>(&'a [Val]);

impl Serialize for JsonSeq<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for v in self.0 {
            seq.serialize_element(&Json(v, 1))?;
        }
        seq.end()
    }
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Json(value, depth) = *self;
        if depth >= DEPTH_MAX && matches!(value, Val::Arr(_) | Val::Obj(_)) {
            return Err(S::Error::custom(format!(
                "it nests arrays and objects deeper than {DEPTH_MAX} levels"
            )));
        }
        match value {
            Val::Null => s.serialize_unit(),
            Val::Bool(b) => s.serialize_bool(*b),
            Val::Num(n) => number(n, s),
            // jq has no byte strings: they are written as text, as is
            // invalid UTF-8 in a text string.
            Val::TStr(b) | Val::BStr(b) => s.serialize_str(&String::from_utf8_lossy(b)),
            Val::Arr(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a.iter() {
                    seq.serialize_element(&Json(v, depth + 1))?;
                }
                seq.end()
            }
            Val::Obj(o) => {
                let mut map = s.serialize_map(Some(o.len()))?;
                for (k, v) in o.iter() {
                    let Val::TStr(key) = k else {
                        return Err(S::Error::custom(format!(
                            "an object key is not a string: {}",
                            bounded(k)
                        )));
                    };
                    map.serialize_entry(&*String::from_utf8_lossy(key), &Json(v, depth + 1))?;
                }
                map.end()
            }
        }
    }
}

/// A number as JSON: integers exactly while they fit 128 bits, the rest as
/// floating point; NaN and the infinities as `null`, as jq writes them.
fn number<S: Serializer>(n: &Num, s: S) -> Result<S::Ok, S::Error> {
    match n {
        Num::Int(i) => s.serialize_i64(*i as i64),
        Num::BigInt(i) => {
            let text = i.to_string();
            match text.parse::<i128>() {
                Ok(i) => s.serialize_i128(i),
                Err(_) => float(text.parse().unwrap_or(f64::NAN), s),
            }
        }
        Num::Float(f) => float(*f, s),
        Num::Dec(d) => float(d.parse().unwrap_or(f64::NAN), s),
    }
}

fn float<S: Serializer>(f: f64, s: S) -> Result<S::Ok, S::Error> {
    if f.is_finite() {
        s.serialize_f64(f)
    } else {
        s.serialize_unit()
    }
}

#[cfg(test)]
mod tests;
