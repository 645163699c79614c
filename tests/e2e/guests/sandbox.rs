//! Sandbox limits in obeyed/violated pairs, with the adversarial guest: each
//! violation degrades one call, names the guest and the limit, and the next call
//! runs in a fresh instance.

use crate::common::{adversarial, entries, load};
use mcpw::catalog::Tool;
use mcpw::plugin::{
    Capability, DirectOptions, DirectPolicy, Grants, GuestError, LimitHit, Limits, Namer,
    NamingOptions, PluginError, RankIndex, Ranker, SearchOptions,
};
use std::time::Duration;

fn ranker(limits: Limits, grants: Grants) -> RankIndex {
    let module = load("adversarial", &adversarial(), limits, grants);
    Ranker::new(module)
        .unwrap()
        .index(entries(), Default::default())
        .unwrap()
}

fn search(index: &RankIndex, query: &str) -> Result<Vec<mcpw::plugin::Hit>, PluginError> {
    index.search(query, &SearchOptions::default())
}

const SHORT: Limits = Limits {
    memory_bytes: 64 << 20,
    deadline: Duration::from_millis(250),
};

#[test]
fn deadline_obeyed() {
    let index = ranker(SHORT, Grants::none());
    assert_eq!(search(&index, "spin:1000").unwrap().len(), 5);
}

#[test]
fn deadline_violated() {
    let index = ranker(SHORT, Grants::none());
    let err = search(&index, "loop").unwrap_err();
    assert!(
        matches!(err, PluginError::Limit { hit: LimitHit::Deadline(d), .. } if d == SHORT.deadline),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("adversarial") && msg.contains("deadline of 250 ms"),
        "{msg}"
    );
    // The instance was replaced: the next call works.
    assert_eq!(search(&index, "ok").unwrap().len(), 5);
}

#[test]
fn memory_obeyed() {
    let index = ranker(SHORT, Grants::none());
    assert!(search(&index, "alloc:8").is_ok());
}

#[test]
fn memory_violated() {
    let index = ranker(SHORT, Grants::none());
    let err = search(&index, "alloc:128").unwrap_err();
    assert!(
        matches!(err, PluginError::Limit { hit: LimitHit::Memory { cap, .. }, .. } if cap == 64 << 20),
        "{err:?}"
    );
    assert!(err.to_string().contains("memory limit of 64 MiB"), "{err}");
    assert!(
        search(&index, "alloc:8").is_ok(),
        "a fresh instance starts below the cap again"
    );
}

#[test]
fn trap_is_one_failed_call_and_the_instance_is_replaced() {
    let index = ranker(SHORT, Grants::none());
    assert_eq!(search(&index, "count").unwrap()[0].score, 1.0);
    assert_eq!(
        search(&index, "count").unwrap()[0].score,
        2.0,
        "state persists within an instance"
    );
    for cmd in ["panic", "unreachable", "recurse"] {
        let err = search(&index, cmd).unwrap_err();
        assert!(
            matches!(&err, PluginError::Trap { guest, .. } if guest == "adversarial"),
            "{cmd}: {err:?}"
        );
        assert_eq!(
            search(&index, "count").unwrap()[0].score,
            1.0,
            "after {cmd}, a fresh instance answers"
        );
    }
}

#[test]
fn ungranted_imports_are_error_values_granted_ones_work() {
    let denied = ranker(SHORT, Grants::none());
    for cmd in ["catalog", "lifecycle", "calls"] {
        let err = search(&denied, cmd).unwrap_err();
        assert!(
            matches!(&err, PluginError::Guest { error: GuestError::Denied(m), .. } if m.contains(cmd)),
            "{cmd}: {err:?}"
        );
        assert!(search(&denied, "ok").is_ok(), "a denial is not a trap");
    }
    let granted = ranker(SHORT, Grants::none().with(Capability::Catalog));
    assert_eq!(
        search(&granted, "catalog").unwrap()[0].score,
        3.0,
        "the guest saw the three servers"
    );
    assert!(matches!(
        search(&granted, "calls"),
        Err(PluginError::Guest {
            error: GuestError::Denied(_),
            ..
        })
    ));
    let all = ranker(SHORT, Grants::all());
    // Granted: the call reaches the host, which has no server named "any".
    for cmd in ["lifecycle", "calls"] {
        let err = search(&all, cmd).unwrap_err();
        assert!(
            matches!(&err, PluginError::Guest { error: GuestError::NotFound(m), .. } if m.contains("any")),
            "{cmd}: {err:?}"
        );
    }
}

#[test]
fn ranking_answers_breaking_the_contract_are_rejected() {
    let index = ranker(SHORT, Grants::none());
    let three = SearchOptions {
        limit: 3,
        ..Default::default()
    };
    for cmd in ["bad-index", "dup", "too-many", "nan", "unsorted"] {
        let err = index.search(cmd, &three).unwrap_err();
        assert!(
            matches!(err, PluginError::BadOutput { .. }),
            "{cmd}: {err:?}"
        );
    }
}

#[test]
fn naming_limits_and_contract() {
    let namer = Namer::new(load("adversarial", &adversarial(), SHORT, Grants::none())).unwrap();
    let opts = NamingOptions::default();
    let named = |n: &str| vec![Tool::new("s", n, "")];
    assert!(namer.names(&named("fine"), &opts).is_ok());
    assert!(matches!(
        namer.names(&named("loop"), &opts),
        Err(PluginError::Limit {
            hit: LimitHit::Deadline(_),
            ..
        })
    ));
    assert!(matches!(
        namer.names(&named("bad-name"), &opts),
        Err(PluginError::BadOutput { .. })
    ));
    let two = vec![
        Tool::new("a", "dup-name", ""),
        Tool::new("b", "dup-name", ""),
    ];
    assert!(matches!(
        namer.names(&two, &opts),
        Err(PluginError::BadOutput { .. })
    ));
    assert!(namer.names(&named("fine"), &opts).is_ok());
}

#[test]
fn direct_tools_limits_and_contract() {
    let direct =
        DirectPolicy::new(load("adversarial", &adversarial(), SHORT, Grants::none())).unwrap();
    let entries = entries();
    let with = |env: &str| DirectOptions {
        env_override: Some(env.into()),
        servers: vec![],
    };
    assert_eq!(
        direct.select(&entries, &with("ok")).unwrap(),
        Vec::<usize>::new()
    );
    assert!(matches!(
        direct.select(&entries, &with("panic")),
        Err(PluginError::Trap { .. })
    ));
    assert!(matches!(
        direct.select(&entries, &with("alloc:512")),
        Err(PluginError::Limit { .. })
    ));
    assert!(matches!(
        direct.select(&entries, &with("bad-index")),
        Err(PluginError::BadOutput { .. })
    ));
    assert!(matches!(
        direct.select(&entries, &with("unsorted")),
        Err(PluginError::BadOutput { .. })
    ));
}

#[test]
fn guests_see_no_environment_files_or_network() {
    let index = ranker(SHORT, Grants::all());
    let seen = |probe: &str| search(&index, probe).unwrap()[0].score;
    // The host has environment variables, files and a listening socket; the guest sees none.
    assert!(std::env::vars().count() > 0 && std::path::Path::new("/").exists());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        "the host itself can connect"
    );
    assert_eq!(
        seen("env"),
        0.0,
        "environment variables or arguments leaked"
    );
    assert_eq!(seen("fs"), 0.0, "a file was reachable");
    assert_eq!(seen(&format!("net:{port}")), 0.0, "a socket connected");
    // Printing is harmless: it goes nowhere, and is not a trap.
    assert_eq!(seen("stdout"), 1.0);
}
