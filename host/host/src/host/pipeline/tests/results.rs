//! Every result through the guards after (a resource tool's reading, a
//! read, a prompt, a task's result), and the arguments the observers are
//! told of: those the guards let through.

use super::*;
use rmcp::model::ContentBlock;
use serde_json::json;

fn passing() -> Before {
    Before::Run {
        rewritten: None,
        ask: None,
    }
}

fn reading(text: &str) -> RawResult {
    let read = json!({"contents": [{"uri": "notes://a", "mimeType": "text/plain", "text": text}]});
    RawResult::Resource(serde_json::from_value(read).unwrap())
}

/// The text of a reading's first contents.
fn read_text(raw: &RawResult) -> String {
    let RawResult::Resource(r) = raw else {
        panic!("not a reading: {raw:?}")
    };
    let r = serde_json::to_value(r).unwrap();
    r["contents"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn shown(stages: &Fake) -> (GuardedCall, Value) {
    let (call, result) = stages.shown.lock().unwrap()[0].clone();
    (call, serde_json::from_str(&result).unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_resource_tools_reading_passes_the_guards_after() {
    let replaced = r#"{"content":[{"type":"text","text":"key [REDACTED]"}]}"#;
    let mut stages = Fake::new().guarded(passing(), After::Replace(replaced.into()));
    stages.answer = Some(reading("key SECRET"));
    let mut tool = Tool::new("s", "notes", "");
    tool.kind = crate::catalog::ToolKind::Resource;
    tool.resource_uri = Some("notes://a".into());
    let entry = Entry {
        name: "s__get_notes".into(),
        tool: Arc::new(tool),
    };
    let ran = call(&stages, &caller(Person::absent()), &entry).await;
    let Ran::Done(Ok(raw)) = ran else {
        panic!("{ran:?}")
    };
    assert_eq!(read_text(&raw), "key [REDACTED]", "a reading still");
    let (call, result) = shown(&stages);
    assert_eq!(
        (call.tool.as_str(), call.name.as_str()),
        ("notes", "s__get_notes")
    );
    let embedded = &result["content"][0];
    assert_eq!(embedded["type"], "resource", "{result}");
    assert_eq!(embedded["resource"]["text"], "key SECRET");
}

#[tokio::test(start_paused = true)]
async fn a_read_passes_the_guards_after_as_a_tool_result() {
    let replaced =
        r#"{"content":[{"type":"resource","resource":{"uri":"notes://a","text":"[REDACTED]"}}]}"#;
    let stages = Fake::new().guarded(passing(), After::Replace(replaced.into()));
    let who = caller(Person::absent());
    let what = Read::Resource {
        uri: "notes://a",
        asked: "mcpw:s/notes://a",
        skill: false,
    };
    let got = read(&stages, &who, "s", what, |_| async {
        Ok(reading("key SECRET"))
    })
    .await;
    assert_eq!(read_text(&got.unwrap()), "[REDACTED]");
    assert_eq!(
        stages.steps(),
        [
            "rate alice",
            r#"before {"uri":"notes://a"}"#,
            "after",
            "observe"
        ]
    );
    let (call, result) = shown(&stages);
    assert_eq!(
        (call.server.as_str(), call.tool.as_str(), call.name.as_str()),
        ("s", "resources/read", "mcpw:s/notes://a")
    );
    assert_eq!(call.arguments, r#"{"uri":"notes://a"}"#);
    assert_eq!((call.client.as_str(), call.session), ("alice", 7));
    assert_eq!(result["content"][0]["resource"]["text"], "key SECRET");

    // With no guard, it goes as it came.
    let unguarded = Fake::new();
    let got = read(&unguarded, &who, "s", what, |_| async {
        Ok(reading("as is"))
    })
    .await;
    assert_eq!(read_text(&got.unwrap()), "as is");
    assert_eq!(unguarded.steps(), ["rate alice", "observe"]);
}

#[tokio::test(start_paused = true)]
async fn a_prompt_the_guards_withhold_is_an_error_the_audit_line_tells() {
    let stages = Fake::new().guarded(passing(), After::Deny("it leaks".into()));
    let arguments = args(json!({"city": "x"}));
    let what = Read::Prompt {
        name: "weather",
        asked: "s__weather",
        arguments: arguments.as_ref(),
    };
    let prompt =
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "SECRET"}}]});
    let prompt = RawResult::Prompt(serde_json::from_value(prompt).unwrap());
    let who = caller(Person::absent());
    let got = read(&stages, &who, "s", what, |_| async { Ok(prompt) }).await;
    assert!(
        matches!(&got, Err(HostError::Withheld(why)) if why == "it leaks"),
        "{got:?}"
    );
    let (call, result) = shown(&stages);
    assert_eq!(
        (call.tool.as_str(), call.name.as_str()),
        ("prompts/get", "s__weather")
    );
    let params: Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(
        params,
        json!({"name": "weather", "arguments": {"city": "x"}})
    );
    assert_eq!(result["content"][0]["text"], "SECRET");
    let seen = stages.last();
    assert_eq!(seen.prompt.as_deref(), Some("weather"));
    assert!(
        seen.error
            .as_deref()
            .unwrap_or_default()
            .contains("it leaks"),
        "{seen:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_tasks_result_passes_the_guards_after_and_is_observed_once() {
    let replaced = r#"{"content":[{"type":"text","text":"[REDACTED]"}]}"#;
    let stages = Fake::new().guarded(passing(), After::Replace(replaced.into()));
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let result = CallToolResult::success(vec![ContentBlock::text("key SECRET")]);
    let ran_with = args(json!({"x": 2}));
    let who = caller(Person::absent());
    let ran = task_result(
        &stages,
        &who,
        &entry("s", "t"),
        ran_with.as_ref(),
        result,
        started,
    )
    .await;
    let Ran::Done(Ok(RawResult::Tool(r))) = ran else {
        panic!("{ran:?}")
    };
    assert_eq!(r.content, [ContentBlock::text("[REDACTED]")]);
    // No rate limit, no guard before: the call took those when it started.
    assert_eq!(stages.steps(), ["after", "observe"]);
    let (call, result) = shown(&stages);
    assert_eq!(
        (call.tool.as_str(), call.arguments.as_str()),
        ("t", r#"{"x":2}"#)
    );
    assert_eq!(result["content"][0]["text"], "key SECRET");
    let seen = stages.last();
    assert_eq!(seen.arguments, ran_with);
    assert!(
        seen.duration >= Duration::from_secs(5),
        "{:?}",
        seen.duration
    );
    assert!(seen.call.is_some(), "its result is counted");

    let withheld = Fake::new().guarded(passing(), After::Deny("no".into()));
    let result = CallToolResult::success(vec![ContentBlock::text("x")]);
    let ran = task_result(&withheld, &who, &entry("s", "t"), None, result, started).await;
    assert!(matches!(&ran, Ran::Withheld(why) if why == "no"), "{ran:?}");
    assert_eq!(withheld.last().error.as_deref(), Some("no"));
}

#[tokio::test(start_paused = true)]
async fn the_observers_are_told_the_arguments_the_guards_let_through() {
    let who = caller(Person::absent());
    let rewrite = Before::Run {
        rewritten: Some(r#"{"x":2}"#.into()),
        ask: None,
    };
    let rewriting = Fake::new().guarded(rewrite, After::Keep);
    call(&rewriting, &who, &entry("s", "t")).await;
    assert_eq!(rewriting.last().arguments, args(json!({"x": 2})));
    assert_eq!(
        rewriting.last().record(true).arguments,
        args(json!({"x": 2}))
    );
    assert_eq!(rewriting.last().record(true).arguments_bytes, 7);

    // Not let through: by a guard, or before the guards saw them.
    let denying = Fake::new().guarded(Before::Deny("no".into()), After::Keep);
    call(&denying, &who, &entry("s", "t")).await;
    let mut limited = Fake::new().guarded(passing(), After::Keep);
    limited.limited = true;
    call(&limited, &who, &entry("s", "t")).await;
    for stopped in [&denying, &limited] {
        let seen = stopped.last();
        assert_eq!(seen.decision, Decision::Denied);
        assert_eq!(seen.arguments, None);
        assert_eq!(seen.record(true).arguments, None);
    }

    // With no guard, the arguments as asked, refused or not.
    let mut unguarded = Fake::new();
    unguarded.limited = true;
    call(&unguarded, &who, &entry("s", "t")).await;
    assert_eq!(unguarded.last().arguments, args(json!({"x": 1})));
}

fn prompt_of(arguments: Option<Map<String, Value>>) -> RawResult {
    let text = serde_json::to_string(&arguments).unwrap();
    let prompt = json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}]});
    RawResult::Prompt(serde_json::from_value(prompt).unwrap())
}

/// The guards before see a prompt's arguments: one refuses the prompt,
/// which is never got; one rewrites its arguments, and the server gets the
/// rewrite (the observers too); one that turns the read into another one
/// stops it.
#[tokio::test(start_paused = true)]
async fn a_prompts_arguments_meet_the_guards_before() {
    let arguments = args(json!({"city": "SECRET"}));
    let what = Read::Prompt {
        name: "weather",
        asked: "s__weather",
        arguments: arguments.as_ref(),
    };
    let who = caller(Person::absent());
    let got_with = Mutex::new(Vec::new());
    let get = |a: Option<Map<String, Value>>| {
        got_with.lock().unwrap().push(a.clone());
        async move { Ok(prompt_of(a)) }
    };

    let denying = Fake::new().guarded(Before::Deny("no secrets".into()), After::Keep);
    let got = read(&denying, &who, "s", what, get).await;
    assert!(
        matches!(&got, Err(HostError::Refused(why)) if why.contains("no secrets") && why.contains("s__weather")),
        "{got:?}"
    );
    assert!(got_with.lock().unwrap().is_empty(), "never got");
    assert_eq!(denying.last().decision, Decision::Denied);

    let rewrite = r#"{"name":"weather","arguments":{"city":"[REDACTED]"}}"#;
    let rewriting = Fake::new().guarded(
        Before::Run {
            rewritten: Some(rewrite.into()),
            ask: None,
        },
        After::Keep,
    );
    read(&rewriting, &who, "s", what, get).await.unwrap();
    assert_eq!(
        got_with.lock().unwrap().pop().unwrap(),
        args(json!({"city": "[REDACTED]"}))
    );
    let (after, _) = shown(&rewriting);
    assert!(
        after.arguments.contains("[REDACTED]"),
        "{}",
        after.arguments
    );

    let elsewhere = r#"{"name":"other","arguments":{"city":"x"}}"#;
    let redirecting = Fake::new().guarded(
        Before::Run {
            rewritten: Some(elsewhere.into()),
            ask: None,
        },
        After::Keep,
    );
    let got = read(&redirecting, &who, "s", what, get).await;
    assert!(
        matches!(&got, Err(HostError::Refused(why)) if why.contains("into another read")),
        "{got:?}"
    );
    assert!(got_with.lock().unwrap().is_empty());
}

/// A guard's question about a read is put to the user every time; with
/// nobody to ask, the read is refused.
#[tokio::test(start_paused = true)]
async fn a_guards_question_about_a_read_is_asked_or_refuses_it() {
    let what = Read::Resource {
        uri: "notes://a",
        asked: "notes://a",
        skill: false,
    };
    let asking = || {
        Fake::new().guarded(
            Before::Run {
                rewritten: None,
                ask: Some("it reads notes".into()),
            },
            After::Keep,
        )
    };
    let absent = caller(Person::absent());
    let got = read(&asking(), &absent, "s", what, |_| async {
        Ok(reading("x"))
    })
    .await;
    assert!(
        matches!(&got, Err(HostError::Refused(why)) if why.contains("never answered unasked")),
        "{got:?}"
    );
    let person = Person::answering(Answer::Tool);
    let present = caller(person.clone());
    for _ in 0..2 {
        let got = read(&asking(), &present, "s", what, |_| async {
            Ok(reading("x"))
        })
        .await;
        assert_eq!(read_text(&got.unwrap()), "x");
    }
    assert_eq!(person.questions(), 2, "asked each time");
    let denying = caller(Person::answering(Answer::Deny));
    let got = read(&asking(), &denying, "s", what, |_| async {
        Ok(reading("x"))
    })
    .await;
    assert!(
        matches!(&got, Err(HostError::Refused(why)) if why.contains("denied")),
        "{got:?}"
    );
}

/// A client's answers to a task's questions meet the guards before on their
/// way to the server: refused, rewritten (never into another task's), or
/// held for the user's approval, which nobody can give here.
#[tokio::test(start_paused = true)]
async fn a_tasks_answers_meet_the_guards_before() {
    let entry = entry("s", "deploy");
    let who = caller(Person::absent());
    let params = args(json!({"taskId": "s/1", "inputResponses": {"q": {"action": "accept", "content": {"token": "SECRET"}}}})).unwrap();
    let with = |before: Before| Fake::new().guarded(before, After::Keep);

    let denied = task_update(
        &with(Before::Deny("no tokens".into())),
        &who,
        &entry,
        params.clone(),
    )
    .await;
    assert!(
        matches!(&denied, Err(why) if why.contains("no tokens") && why.contains("were not sent")),
        "{denied:?}"
    );
    let unguarded = task_update(&Fake::new(), &who, &entry, params.clone()).await;
    assert_eq!(unguarded.unwrap(), params, "no guard, sent as they came");

    let rewrite = r#"{"taskId":"s/1","inputResponses":{"q":{"action":"decline"}}}"#;
    let rewriting = with(Before::Run {
        rewritten: Some(rewrite.into()),
        ask: None,
    });
    let sent = task_update(&rewriting, &who, &entry, params.clone())
        .await
        .unwrap();
    assert_eq!(sent["inputResponses"]["q"]["action"], "decline");
    assert_eq!(
        rewriting.steps()[0],
        format!("before {}", Value::Object(params.clone()))
    );

    let elsewhere = r#"{"taskId":"s/2","inputResponses":{}}"#;
    let redirecting = with(Before::Run {
        rewritten: Some(elsewhere.into()),
        ask: None,
    });
    let got = task_update(&redirecting, &who, &entry, params.clone()).await;
    assert!(
        matches!(&got, Err(why) if why.contains("another task")),
        "{got:?}"
    );

    let asking = with(Before::Run {
        rewritten: None,
        ask: Some("it sends a token".into()),
    });
    let got = task_update(&asking, &who, &entry, params).await;
    assert!(
        matches!(&got, Err(why) if why.contains("never answered unasked")),
        "{got:?}"
    );
}

/// A guard that rewrites a prompt's arguments and asks about the read has
/// the user shown the read as it would go: with the rewrite.
#[tokio::test(start_paused = true)]
async fn the_user_is_asked_about_a_read_as_a_guard_rewrote_it() {
    let arguments = args(json!({"city": "SECRET"}));
    let what = Read::Prompt {
        name: "weather",
        asked: "s__weather",
        arguments: arguments.as_ref(),
    };
    let rewrite = r#"{"name":"weather","arguments":{"city":"[REDACTED]"}}"#;
    let stages = Fake::new().guarded(
        Before::Run {
            rewritten: Some(rewrite.into()),
            ask: Some("it names a city".into()),
        },
        After::Keep,
    );
    let person = Person::answering(Answer::Once);
    let who = caller(person.clone());
    read(
        &stages,
        &who,
        "s",
        what,
        |a| async move { Ok(prompt_of(a)) },
    )
    .await
    .unwrap();
    let asked = person.asked.lock().unwrap()[0].arguments.clone();
    assert_eq!(
        asked,
        args(json!({"name": "weather", "arguments": {"city": "[REDACTED]"}}))
    );
}
