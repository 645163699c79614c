//! A server's `elicitation/create` during `mcpw call`, answered by the person
//! at the terminal: a form field by field (defaults applied on an empty line,
//! choices offered by number), or a URL to open. Without a terminal the request
//! is declined with a message that names the server and what it asked, unless
//! `--answers-from-stdin` says the answers are piped in, a line per question.

use mcpw::downstream::LocalElicitor;
use serde_json::{Map, Value, json};
use std::io::{BufRead, IsTerminal, Write};

/// Where questions go and answers come from.
pub(crate) trait Prompter {
    /// Shows a line.
    fn say(&mut self, text: &str);
    /// Asks; `None` at the end of input.
    fn ask(&mut self, prompt: &str) -> Option<String>;
}

struct Terminal;

impl Prompter for Terminal {
    fn say(&mut self, text: &str) {
        eprintln!("{text}");
    }

    fn ask(&mut self, prompt: &str) -> Option<String> {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
        }
    }
}

/// The elicitor of `mcpw call`.
pub(crate) struct CallElicitor {
    /// Read the answers from stdin even when it is not a terminal.
    pub answers_from_stdin: bool,
}

impl LocalElicitor for CallElicitor {
    fn elicit(&self, server: &str, params: &Value) -> Value {
        let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if !terminal && !self.answers_from_stdin {
            eprintln!(
                "mcpw: server \"{server}\" asked for input ({}); declined: no terminal to ask at",
                summary(params)
            );
            return json!({"action": "decline"});
        }
        answer(server, params, &mut Terminal)
    }
}

/// What a request asks, in a few words.
fn summary(params: &Value) -> String {
    let message = params["message"].as_str().unwrap_or_default();
    if let Some(url) = params["url"].as_str() {
        return format!("\"{message}\", open {url}");
    }
    let fields: Vec<&str> = params["requestedSchema"]["properties"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    format!("\"{message}\", fields: {}", fields.join(", "))
}

/// The choices of a field: (value, label).
fn choices(schema: &Value) -> Vec<(Value, String)> {
    if let Some(values) = schema["enum"].as_array() {
        let names = schema["enumNames"].as_array();
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| v.as_str().map_or(v.to_string(), str::to_string));
                (v.clone(), label)
            })
            .collect();
    }
    schema["oneOf"]
        .as_array()
        .or(schema["anyOf"].as_array())
        .map(|options| {
            options
                .iter()
                .filter_map(|o| {
                    let v = o.get("const")?.clone();
                    let label = o["title"].as_str().map_or(v.to_string(), str::to_string);
                    Some((v, label))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One answer read as the field's type; `Err` says what is wrong.
fn parse(schema: &Value, input: &str) -> Result<Value, String> {
    let multi = schema["type"] == "array";
    let options = choices(if multi { &schema["items"] } else { schema });
    let pick = |word: &str| -> Result<Value, String> {
        let word = word.trim();
        if let Ok(n) = word.parse::<usize>()
            && (1..=options.len()).contains(&n)
        {
            return Ok(options[n - 1].0.clone());
        }
        options
            .iter()
            .find(|(v, label)| v.as_str() == Some(word) || label == word)
            .map(|(v, _)| v.clone())
            .ok_or_else(|| format!("pick one of 1-{}", options.len()))
    };
    if multi {
        let picked: Result<Vec<Value>, String> = input.split(',').map(pick).collect();
        return picked.map(Value::Array);
    }
    if !options.is_empty() {
        return pick(input);
    }
    match schema["type"].as_str() {
        Some("integer") => input
            .trim()
            .parse::<i64>()
            .map(|n| json!(n))
            .map_err(|_| "a whole number, please".into()),
        Some("number") => input
            .trim()
            .parse::<f64>()
            .map(|n| json!(n))
            .map_err(|_| "a number, please".into()),
        Some("boolean") => match input.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Ok(json!(true)),
            "n" | "no" | "false" | "0" => Ok(json!(false)),
            _ => Err("yes or no, please".into()),
        },
        _ => Ok(json!(input)),
    }
}

/// Asks for the form (or the URL) through `io`; returns an `ElicitResult`.
pub(crate) fn answer(server: &str, params: &Value, io: &mut dyn Prompter) -> Value {
    let message = params["message"].as_str().unwrap_or_default();
    io.say(&format!("\nServer \"{server}\" asks: {message}"));
    if let Some(url) = params["url"].as_str() {
        io.say(&format!("  open {url}"));
        return match io.ask("  Opened it? [y/N] ") {
            Some(a) if a.trim().eq_ignore_ascii_case("y") => json!({"action": "accept"}),
            _ => json!({"action": "decline"}),
        };
    }
    let schema = &params["requestedSchema"];
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    let empty = Map::new();
    for (name, field) in schema["properties"].as_object().unwrap_or(&empty) {
        let title = field["title"].as_str().unwrap_or(name);
        if let Some(d) = field["description"].as_str() {
            io.say(&format!("  {title}: {d}"));
        }
        let multi = field["type"] == "array";
        let options = choices(if multi { &field["items"] } else { field });
        for (i, (_, label)) in options.iter().enumerate() {
            io.say(&format!("    {}) {label}", i + 1));
        }
        let default = field.get("default");
        let hint = match (default, multi) {
            (Some(d), _) => format!(" [{d}]"),
            (None, true) => " (numbers, comma-separated)".into(),
            (None, false) => String::new(),
        };
        loop {
            let Some(input) = io.ask(&format!("  {title}{hint}: ")) else {
                return json!({"action": "cancel"});
            };
            if input.trim().is_empty() {
                if let Some(d) = default {
                    content.insert(name.clone(), d.clone());
                    break;
                }
                if !required.contains(&name.as_str()) {
                    break;
                }
                io.say("    required");
                continue;
            }
            match parse(field, &input) {
                Ok(v) => {
                    content.insert(name.clone(), v);
                    break;
                }
                Err(why) => io.say(&format!("    {why}")),
            }
        }
    }
    match io.ask("  Send this? [Y/n] ") {
        Some(a) if a.trim().eq_ignore_ascii_case("n") => json!({"action": "decline"}),
        None => json!({"action": "cancel"}),
        _ => json!({"action": "accept", "content": content}),
    }
}

/// Who approves a call of `mcpw call` where settings ask: the person at the
/// terminal (or the next line of stdin with `--answers-from-stdin`). With
/// neither, nobody can be asked, and `approveWithoutClient` decides.
pub(crate) struct CallApprover {
    /// Read the answer from stdin even when it is not a terminal.
    pub answers_from_stdin: bool,
}

impl mcpw::host::pipeline::Approver for CallApprover {
    fn cannot_ask(&self) -> Option<String> {
        let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        (!terminal && !self.answers_from_stdin).then(|| {
            "there is no terminal to ask at (--answers-from-stdin reads the answer from stdin)"
                .into()
        })
    }

    fn ask<'a>(
        &'a self,
        question: &'a mcpw::host::pipeline::Question,
    ) -> futures::future::BoxFuture<'a, Result<mcpw::host::pipeline::Answer, String>> {
        let question = question.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || approve(&question, &mut Terminal))
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// Asks `prompter` about one call: allowed only by a yes.
fn approve(
    question: &mcpw::host::pipeline::Question,
    prompter: &mut dyn Prompter,
) -> mcpw::host::pipeline::Answer {
    let arguments = question
        .arguments
        .as_ref()
        .map_or_else(|| "{}".into(), |a| Value::Object(a.clone()).to_string());
    prompter.say(&format!(
        "Allow the call of {} (tool \"{}\" of server \"{}\")? Approval is asked because {}.\nArguments: {arguments}",
        question.name, question.tool, question.server, question.why
    ));
    match prompter.ask("Allow? [y/N] ").as_deref().map(str::trim) {
        Some("y" | "Y" | "yes" | "Yes") => mcpw::host::pipeline::Answer::Once,
        _ => mcpw::host::pipeline::Answer::Deny,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpw::host::pipeline::Answer;

    /// Scripted answers; what was said is kept.
    struct Script(Vec<&'static str>, Vec<String>);

    impl Prompter for Script {
        fn say(&mut self, text: &str) {
            self.1.push(text.to_string());
        }
        fn ask(&mut self, prompt: &str) -> Option<String> {
            self.1.push(prompt.to_string());
            (!self.0.is_empty()).then(|| self.0.remove(0).to_string())
        }
    }

    fn form() -> Value {
        json!({"message": "Your details", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer"},
            "status": {"type": "string", "enum": ["active", "inactive"], "enumNames": ["Active", "Inactive"]},
            "verified": {"type": "boolean", "default": true},
            "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]}}
        }, "required": ["age"]}})
    }

    #[test]
    fn defaults_fill_empty_answers_and_choices_go_by_number_or_name() {
        let mut io = Script(vec!["", "x", "", "41", "2", "", "1, b", "y"], vec![]);
        let got = answer("up", &form(), &mut io);
        assert_eq!(
            got,
            json!({"action": "accept", "content": {"name": "John Doe", "age": 41,
                   "status": "inactive", "verified": true, "tags": ["a", "b"]}})
        );
        assert!(
            io.1.iter().any(|l| l.contains("a whole number")),
            "{:?}",
            io.1
        );
        assert!(io.1.iter().any(|l| l == "    required"), "{:?}", io.1);
        assert!(io.1.iter().any(|l| l.contains("2) Inactive")), "{:?}", io.1);
        assert!(io.1[0].contains("Server \"up\" asks: Your details"));
    }

    #[test]
    fn the_end_of_input_cancels_and_no_declines() {
        assert_eq!(
            answer("up", &form(), &mut Script(vec![""], vec![]))["action"],
            "cancel"
        );
        let no = Script(vec!["", "1", "1", "", "1", "n"], vec![]);
        assert_eq!(answer("up", &form(), &mut { no })["action"], "decline");
        let url = json!({"message": "Sign in", "mode": "url", "url": "https://example.com/x"});
        assert_eq!(
            answer("up", &url, &mut Script(vec!["y"], vec![]))["action"],
            "accept"
        );
    }

    #[test]
    fn a_summary_names_the_fields_or_the_url() {
        assert_eq!(
            summary(&form()),
            "\"Your details\", fields: name, age, status, verified, tags"
        );
    }

    #[test]
    fn a_call_is_approved_by_a_yes_alone() {
        let question = mcpw::host::pipeline::Question {
            name: "fs__delete".into(),
            server: "fs".into(),
            tool: "delete".into(),
            arguments: json!({"path": "/tmp/x"}).as_object().cloned(),
            why: "it may change or delete data".into(),
        };
        for (line, answer) in [
            ("y", Answer::Once),
            ("yes", Answer::Once),
            ("", Answer::Deny),
            ("n", Answer::Deny),
        ] {
            let mut io = Script(vec![line], vec![]);
            assert_eq!(approve(&question, &mut io), answer, "{line:?}");
            assert!(io.1[0].contains("fs__delete"), "{:?}", io.1);
            assert!(io.1[0].contains(r#"{"path":"/tmp/x"}"#), "{:?}", io.1);
        }
        let mut ended = Script(vec![], vec![]);
        assert_eq!(approve(&question, &mut ended), Answer::Deny);
    }
}
