//! What an agent meets in a session of the gateway: code mode, a big result
//! cut to a preview and read back, guards' refusals, and an approval asked
//! of its client. Each follows from a line of the demo's config.

use super::session::{Reply, Session};
use super::step;
use anyhow::Result;
use serde_json::json;

/// The code-mode script: it reads a 10 KB document and keeps a few names,
/// so the agent reads a line instead of the document.
const SCRIPT: &str = r#"const doc = await tools.everything__get_features_md({});
const section = doc.split("\n## ").find((s) => s.startsWith("Tools"));
const names = [...section.matchAll(/^- `([\w-]+)`/gm)].map((m) => m[1]);
await tools.memory__create_entities({entities: [
  {name: "server-everything", entityType: "server", observations: names}]});
return {read: doc.length, tools: names.length, first: names.slice(0, 3)};"#;

/// The big result's budget, in tokens (the demo's `resultBudget`).
pub(crate) const BUDGET: usize = 300;

/// The tool whose result is over its budget.
pub(crate) const BIG: &str = "everything__get_features_md";

/// Where the read-back starts, well past the preview's head.
const READ_AT: usize = 4000;

/// Prints `text` indented under a section, cut to `lines` lines.
fn quote(text: &str, lines: usize) -> Result<()> {
    let all: Vec<&str> = text.lines().collect();
    for line in all.iter().take(lines) {
        outln!("    │ {line}");
    }
    if all.len() > lines {
        outln!("    │ … ({} more lines)", all.len() - lines);
    }
    Ok(())
}

/// A call's answer on one line.
fn answer(reply: &Reply) -> &str {
    reply.text.lines().next().unwrap_or_default()
}

/// The script through the session's `code` tool: its value and its calls.
pub(crate) async fn code_mode(session: &Session) -> Result<()> {
    step("code mode: a script calls two tools; the agent reads only what it returns")?;
    quote(SCRIPT, 10)?;
    let reply = session.call("code", json!({"code": SCRIPT})).await;
    let Some(done) = reply.structured.filter(|_| !reply.is_error) else {
        outln!("  error: {}", reply.text);
        return Ok(());
    };
    outln!("  value: {}", done["value"]);
    let calls: Vec<String> = done["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let (tool, outcome) = (&c["tool"], &c["outcome"]);
            format!(
                "{} {}",
                tool.as_str().unwrap_or("?"),
                outcome.as_str().unwrap_or("?")
            )
        })
        .collect();
    outln!("  inner calls: {}", calls.join(", "));
    Ok(())
}

/// A result over its budget arrives as a preview; the agent reads on by
/// the id the preview names.
pub(crate) async fn big_result(session: &Session) -> Result<()> {
    step(&format!(
        "a big result: {BIG} over its budget of {BUDGET} tokens, as a preview"
    ))?;
    let preview = session.call(BIG, json!({})).await;
    quote(&preview.text, 40)?;
    let Some(id) = preview
        .links
        .iter()
        .find_map(|uri| uri.strip_prefix("mcpw://results/"))
    else {
        outln!("  (no result was kept)");
        return Ok(());
    };
    let args = json!({"id": id, "offset": READ_AT, "limit": 300});
    outln!("  read back: read_result {args}");
    let read = session.call("read_result", args).await;
    quote(&read.text, 12)?;
    Ok(())
}

/// Guards: the example guard guest refuses a call that would send a
/// credential out; a rate limit of one call an hour refuses the second call.
pub(crate) async fn guard(session: &Session) -> Result<()> {
    step(
        "guards refuse calls: settings.guards [the example guard guest], and mcpServers.everything.rateLimit {\"get-sum\": \"1/h\"}",
    )?;
    let leak = json!({"message": "deploy with AKIAIOSFODNN7EXAMPLE"});
    let reply = session.call("everything__echo", leak.clone()).await;
    outln!("  everything__echo {leak} → {}", answer(&reply));
    let args = json!({"a": 1, "b": 2});
    for _ in 0..2 {
        let reply = session.call("everything__get-sum", args.clone()).await;
        outln!("  everything__get-sum {args} → {}", answer(&reply));
    }
    Ok(())
}

/// A call the config says the user approves: the client is asked, and the
/// demo answers for the user.
pub(crate) async fn approval(session: &Session) -> Result<()> {
    step("approval: mcpServers.memory.approve {\"delete_*\": \"all\"} asks the user")?;
    let args = json!({"entityNames": ["server-everything"]});
    outln!("  memory__delete_entities {args}");
    let reply = session.call("memory__delete_entities", args).await;
    for asked in session.questions() {
        outln!("  the client is asked:");
        quote(&asked.message, 4)?;
        outln!("    │ [{}]", asked.choices.join("] ["));
        outln!("  (the demo answers: {})", asked.answer);
    }
    outln!("  → {}", answer(&reply));
    Ok(())
}
