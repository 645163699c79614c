//! The path's order and each stage's effect, with fake stages and
//! approvers on a paused clock.

use super::*;
use crate::catalog::Tool;
use crate::config::ApproveMode;
use crate::config::rate::Rate;
use crate::host::RateLimited;
use futures::future::BoxFuture;
use rmcp::model::CallToolResult;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod results;

/// Stages that record each step they run, with verdicts set per test.
struct Fake {
    steps: Mutex<Vec<String>>,
    limited: bool,
    before: Option<Before>,
    after: After,
    policy: Policy,
    observed: Mutex<Vec<Observed>>,
    /// What the guards were shown after: the call and the result.
    shown: Mutex<Vec<(GuardedCall, String)>>,
    /// What the server answers (an empty tool result when none is set).
    answer: Option<RawResult>,
}

impl Fake {
    fn new() -> Fake {
        Fake {
            steps: Mutex::default(),
            limited: false,
            before: None,
            after: After::Keep,
            policy: Policy {
                mode: ApproveMode::None,
                setting: "settings.approve".into(),
                without_client: false,
            },
            observed: Mutex::default(),
            shown: Mutex::default(),
            answer: None,
        }
    }

    fn guarded(mut self, before: Before, after: After) -> Fake {
        self.before = Some(before);
        self.after = after;
        self
    }

    fn approving(mut self, mode: ApproveMode, without_client: bool) -> Fake {
        self.policy.mode = mode;
        self.policy.without_client = without_client;
        self
    }

    fn step(&self, name: &str) {
        self.steps.lock().unwrap().push(name.to_string());
    }

    fn steps(&self) -> Vec<String> {
        self.steps.lock().unwrap().clone()
    }

    fn last(&self) -> Observed {
        self.observed
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("an observed call")
    }
}

impl Stages for Fake {
    async fn rate(&self, caller: &Caller, _: &str, _: &str) -> Result<(), RateLimited> {
        self.step(&format!("rate {}", caller.bucket()));
        if !self.limited {
            return Ok(());
        }
        Err(RateLimited {
            setting: "settings.rateLimit".into(),
            rate: Rate::parse("1/min").unwrap(),
            retry_after: Duration::from_secs(60),
        })
    }

    fn guarded(&self) -> bool {
        self.before.is_some()
    }

    async fn guard_before(&self, call: GuardedCall) -> Before {
        self.step(&format!("before {}", call.arguments));
        self.before.clone().expect("guarded")
    }

    fn approval(&self, _: &Entry) -> Policy {
        self.policy.clone()
    }

    async fn call(
        &self,
        _: &Caller,
        _: &Entry,
        arguments: Option<Map<String, Value>>,
        _: CallOptions,
    ) -> Result<RawResult, HostError> {
        let text = Value::Object(arguments.unwrap_or_default()).to_string();
        self.step(&format!("call {text}"));
        tokio::time::sleep(Duration::from_millis(250)).await;
        let empty = || RawResult::Tool(CallToolResult::success(vec![]));
        Ok(self.answer.clone().unwrap_or_else(empty))
    }

    async fn guard_after(&self, call: GuardedCall, result: String) -> After {
        self.step("after");
        self.shown.lock().unwrap().push((call, result));
        self.after.clone()
    }

    fn measures(&self) -> bool {
        true
    }

    fn observe(&self, seen: &Observed) {
        self.step("observe");
        self.observed.lock().unwrap().push(seen.clone());
    }
}

/// An approver that answers `answer` after `delay`, counting its questions.
struct Person {
    answer: Option<Answer>,
    delay: Duration,
    asked: Mutex<Vec<Question>>,
}

impl Person {
    fn answering(answer: Answer) -> Arc<Person> {
        Arc::new(Person {
            answer: Some(answer),
            delay: Duration::from_secs(30),
            asked: Mutex::default(),
        })
    }

    fn absent() -> Arc<Person> {
        Arc::new(Person {
            answer: None,
            delay: Duration::ZERO,
            asked: Mutex::default(),
        })
    }

    fn questions(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

impl Approver for Person {
    fn cannot_ask(&self) -> Option<String> {
        self.answer.is_none().then(|| "nobody is there".into())
    }

    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Result<Answer, String>> {
        self.asked.lock().unwrap().push(question.clone());
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.answer.clone().ok_or_else(|| "absent".to_string())
        })
    }
}

fn entry(server: &str, tool: &str) -> Entry {
    Entry {
        name: format!("{server}__{tool}"),
        tool: Arc::new(Tool::new(server, tool, "")),
    }
}

fn caller(approver: Arc<dyn Approver>) -> Caller {
    Caller {
        client: "alice".into(),
        reach: None,
        session: Some(CallerSession {
            id: 7,
            allowed: Arc::default(),
        }),
        via: Via::Call,
        approver,
        policy: None,
    }
}

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

async fn call(stages: &Fake, caller: &Caller, entry: &Entry) -> Ran {
    let arguments = args(serde_json::json!({"x": 1}));
    run(stages, caller, entry, arguments, CallOptions::default()).await
}

#[tokio::test(start_paused = true)]
async fn every_stage_runs_in_order_once() {
    let run_before = Before::Run {
        rewritten: Some(r#"{"x":2}"#.into()),
        ask: None,
    };
    let stages = Fake::new()
        .guarded(run_before, After::Keep)
        .approving(ApproveMode::All, false);
    let person = Person::answering(Answer::Once);
    let ran = call(&stages, &caller(person.clone()), &entry("s", "t")).await;
    assert!(matches!(ran, Ran::Done(Ok(RawResult::Tool(_)))), "{ran:?}");
    // The call runs with the guard's rewrite, and the user was asked about it.
    let steps = [
        "rate alice",
        r#"before {"x":1}"#,
        r#"call {"x":2}"#,
        "after",
        "observe",
    ];
    assert_eq!(stages.steps(), steps);
    assert_eq!(person.questions(), 1);
    let asked = person.asked.lock().unwrap()[0].arguments.clone();
    assert_eq!(asked, args(serde_json::json!({"x": 2})));
    let seen = stages.last();
    assert_eq!(seen.decision, Decision::Asked);
    assert_eq!(
        (seen.client.as_ref(), seen.session, seen.via),
        ("alice", 7, Via::Call)
    );
    // The whole (30 s of asking) and the upstream call (250 ms), each measured.
    assert!(
        seen.duration >= Duration::from_millis(30_250),
        "{:?}",
        seen.duration
    );
    let upstream = seen.call.as_ref().expect("the call ran").elapsed;
    assert_eq!(upstream, Duration::from_millis(250));
}

#[tokio::test(start_paused = true)]
async fn a_limited_call_troubles_neither_the_guards_nor_the_user() {
    let mut stages = Fake::new()
        .guarded(
            Before::Run {
                rewritten: None,
                ask: None,
            },
            After::Keep,
        )
        .approving(ApproveMode::All, false);
    stages.limited = true;
    let person = Person::answering(Answer::Once);
    let ran = call(&stages, &caller(person.clone()), &entry("s", "t")).await;
    let Ran::Refused(why) = ran else {
        panic!("{ran:?}")
    };
    assert!(
        why.contains("rate limit reached: settings.rateLimit"),
        "{why}"
    );
    assert_eq!(stages.steps(), ["rate alice", "observe"]);
    assert_eq!(person.questions(), 0);
    assert_eq!(stages.last().decision, Decision::Denied);
    assert!(stages.last().call.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_guard_that_denies_stops_the_call_before_approval() {
    let stages = Fake::new()
        .guarded(Before::Deny("no".into()), After::Keep)
        .approving(ApproveMode::All, false);
    let person = Person::answering(Answer::Once);
    let ran = call(&stages, &caller(person.clone()), &entry("s", "t")).await;
    let Ran::Refused(why) = ran else {
        panic!("{ran:?}")
    };
    assert_eq!(why, "Error: no. The call of s__t did not run.");
    assert_eq!(
        stages.steps(),
        ["rate alice", r#"before {"x":1}"#, "observe"]
    );
    assert_eq!(person.questions(), 0);
    assert_eq!(
        stages.last().reason.as_deref(),
        Some("no. The call of s__t did not run.")
    );
}

#[tokio::test(start_paused = true)]
async fn a_guard_can_ask_the_user_whatever_approve_says() {
    let ask = Before::Run {
        rewritten: None,
        ask: Some("it looks odd".into()),
    };
    let stages = Fake::new().guarded(ask, After::Keep);
    let person = Person::answering(Answer::Deny);
    let ran = call(&stages, &caller(person.clone()), &entry("s", "t")).await;
    let Ran::Refused(why) = ran else {
        panic!("{ran:?}")
    };
    assert!(why.contains("the user denied this call of s__t"), "{why}");
    assert_eq!(
        person.asked.lock().unwrap()[0].why,
        "a guard asks: it looks odd"
    );
    assert!(!stages.steps().iter().any(|s| s.starts_with("call")));
}

#[tokio::test(start_paused = true)]
async fn nobody_to_ask_follows_approve_without_client() {
    let stages = Fake::new().approving(ApproveMode::All, false);
    let ran = call(&stages, &caller(Person::absent()), &entry("s", "t")).await;
    let Ran::Refused(why) = ran else {
        panic!("{ran:?}")
    };
    assert!(
        why.contains(
            "needs the user's approval (settings.approve is \"all\"), and nobody is there"
        ),
        "{why}"
    );
    assert!(why.contains("settings.approveWithoutClient"), "{why}");
    let unasked = Fake::new().approving(ApproveMode::All, true);
    let ran = call(&unasked, &caller(Person::absent()), &entry("s", "t")).await;
    assert!(matches!(ran, Ran::Done(Ok(_))), "{ran:?}");
    assert_eq!(unasked.last().decision, Decision::Allowed);
}

#[tokio::test(start_paused = true)]
async fn an_allowance_lasts_the_session_and_only_where_there_is_one() {
    let stages = Fake::new().approving(ApproveMode::All, false);
    let person = Person::answering(Answer::Tool);
    let in_session = caller(person.clone());
    for _ in 0..3 {
        assert!(matches!(
            call(&stages, &in_session, &entry("s", "t")).await,
            Ran::Done(_)
        ));
    }
    assert_eq!(person.questions(), 1, "asked once for the session");
    call(&stages, &in_session, &entry("s", "other")).await;
    assert_eq!(person.questions(), 2, "another tool is asked about");
    let without = Caller {
        session: None,
        ..caller(person.clone())
    };
    call(&stages, &without, &entry("s", "t")).await;
    call(&stages, &without, &entry("s", "t")).await;
    assert_eq!(person.questions(), 4, "no session keeps nothing");
}

#[tokio::test(start_paused = true)]
async fn a_withheld_result_is_observed_with_why() {
    let stages = Fake::new().guarded(
        Before::Run {
            rewritten: None,
            ask: None,
        },
        After::Deny("it leaks a secret".into()),
    );
    let ran = call(&stages, &caller(Person::absent()), &entry("s", "t")).await;
    let Ran::Withheld(why) = ran else {
        panic!("{ran:?}")
    };
    assert_eq!(why, "it leaks a secret");
    let seen = stages.last();
    assert_eq!(seen.error.as_deref(), Some("it leaks a secret"));
    assert!(seen.call.is_some(), "the call ran: it is counted");
}

#[tokio::test(start_paused = true)]
async fn a_server_out_of_reach_is_refused_before_anything_is_counted() {
    let stages = Fake::new();
    let limited = Caller {
        reach: Some(Arc::new(["other".to_string()].into_iter().collect())),
        ..caller(Person::absent())
    };
    let ran = call(&stages, &limited, &entry("s", "t")).await;
    let Ran::Refused(why) = ran else {
        panic!("{ran:?}")
    };
    assert_eq!(why, "Error: tool \"s__t\" not found.");
    assert_eq!(stages.steps(), ["observe"]);
}

#[tokio::test(start_paused = true)]
async fn a_guest_counts_in_its_own_bucket_and_is_never_asked() {
    let stages = Fake::new().approving(ApproveMode::All, false);
    let ran = call(&stages, &Caller::guest("ranking"), &entry("s", "t")).await;
    let Ran::Refused(why) = ran else {
        panic!("{ran:?}")
    };
    assert!(why.contains("nobody can be asked here"), "{why}");
    assert_eq!(stages.steps(), ["rate guest:ranking", "observe"]);
    assert_eq!(stages.last().via, Via::Guest);
}

/// Where `p` is defined: the user's file, or one of a project's files (of
/// mcpw, or of another client the user imports).
#[derive(Clone, Copy)]
enum Defined {
    User,
    Project(&'static str),
    /// The user's own Cursor file, pulled in only by a project's `imports`.
    ImportedByProject,
}

/// The policy of `tool` of server `p` (annotated `hints`), with the user's
/// `settings.approve` and `p`'s own `approve`, `p` defined `where`.
fn policy_of(user_approve: &str, own: &str, at: Defined, hints: Value) -> Policy {
    let root = tempfile::tempdir().unwrap();
    let (home, project) = (root.path().join("home"), root.path().join("project"));
    let p = serde_json::json!({"p": {"command": "x", "approve": own}});
    let mut user =
        serde_json::json!({"settings": {"approve": user_approve, "projectServers": "trust"}});
    if !matches!(at, Defined::ImportedByProject) {
        user["imports"] = serde_json::json!(["vscode", "pi"]);
    }
    let write = |path: std::path::PathBuf, v: &Value| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, v.to_string()).unwrap();
    };
    match at {
        Defined::User => user["mcpServers"] = p.clone(),
        Defined::Project(file) => {
            // VS Code's file keeps its servers under `servers`.
            let key = if file.starts_with(".vscode") {
                "servers"
            } else {
                "mcpServers"
            };
            write(project.join(file), &serde_json::json!({ key: p }));
        }
        Defined::ImportedByProject => {
            write(
                home.join(".cursor/mcp.json"),
                &serde_json::json!({"mcpServers": p}),
            );
            let asks = serde_json::json!({"imports": ["cursor"]});
            write(project.join(".mcpw/mcp.json"), &asks);
        }
    }
    write(home.join(".config/mcpw/mcp.json"), &user);
    let env = crate::paths::Environment::from_pairs([("HOME", home.display().to_string())]);
    let sources = crate::config::ConfigSources {
        user_value: None,
        user_file: None,
        project_dir: Some(project),
        env,
    };
    let config = crate::config::load(&sources);
    assert!(config.server("p").is_some(), "{:?}", config.diagnostics);
    // What a project brings is pinned, whatever settings.pinTools says.
    let pinned = crate::pins::key(&config, "p").is_some();
    assert_eq!(pinned, !matches!(at, Defined::User));
    let mut tool = Tool::new("p", "t", "");
    tool.annotations = Some(hints);
    let entry = Entry {
        name: "p__t".into(),
        tool: Arc::new(tool),
    };
    Policy::of(&config, &entry)
}

#[test]
fn a_project_server_of_any_client_is_pinned_and_its_approve_only_tightens() {
    let writes = serde_json::json!({"readOnlyHint": false, "destructiveHint": false});
    // The user's own server may loosen its own approval.
    let own = policy_of("all", "none", Defined::User, writes.clone());
    assert_eq!(
        (own.mode, own.setting.as_str()),
        (ApproveMode::None, "mcpServers.p.approve")
    );
    // A project's may not, in any client's file: the user's setting asks.
    for file in [
        ".mcpw/mcp.json",
        ".mcp.json",
        ".vscode/mcp.json",
        ".pi/mcp.json",
    ] {
        let project = policy_of("all", "none", Defined::Project(file), writes.clone());
        assert_eq!(
            (project.mode, project.setting.as_str()),
            (ApproveMode::All, "settings.approve"),
            "{file}"
        );
        assert!(project.mode.asks(Some(&writes)));
        // A project's may tighten where the user's does not ask.
        let tighter = policy_of(
            "destructive",
            "writes",
            Defined::Project(file),
            writes.clone(),
        );
        assert_eq!(tighter.mode, ApproveMode::Writes, "{file}");
    }
    // The user's own client file, pulled in only because a project asked.
    let imported = policy_of("all", "none", Defined::ImportedByProject, writes.clone());
    assert_eq!(imported.mode, ApproveMode::All);
}

#[tokio::test(start_paused = true)]
async fn a_guards_ask_is_asked_every_time_and_refused_where_nobody_can_answer() {
    let ask = Before::Run {
        rewritten: None,
        ask: Some("it sends a key".into()),
    };
    // Allowed for the session before: the guard's question is asked still.
    let stages = Fake::new().guarded(ask.clone(), After::Keep);
    let person = Person::answering(Answer::Tool);
    let in_session = caller(person.clone());
    for _ in 0..2 {
        assert!(matches!(
            call(&stages, &in_session, &entry("s", "t")).await,
            Ran::Done(_)
        ));
    }
    assert_eq!(person.questions(), 2, "asked at each call");
    // Nobody to ask: refused, whatever approveWithoutClient says.
    let unasked = Fake::new()
        .guarded(ask, After::Keep)
        .approving(ApproveMode::None, true);
    let ran = call(&unasked, &caller(Person::absent()), &entry("s", "t")).await;
    let Ran::Refused(why) = ran else {
        panic!("{ran:?}")
    };
    assert!(
        why.contains("a guard's question is never answered unasked"),
        "{why}"
    );
    assert!(!unasked.steps().iter().any(|s| s.starts_with("call")));
}
