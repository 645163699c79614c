//! A failing user guest degrades to the default guest for that role; error values
//! it returns on purpose are passed on; a guest failing again and again is set aside.

use crate::common::{adversarial_path, cache, entries, services, tools};
use mcpw::plugin::{
    GuestError, Limits, NameOutcome, NamingOptions, PluginError, Policy, PolicyConfig, Role,
    SearchOptions, policy::MAX_STRIKES,
};
use std::sync::Arc;
use std::time::Duration;

fn policy(role: Option<Role>) -> Policy {
    let mut config = PolicyConfig {
        limits: Limits {
            memory_bytes: 64 << 20,
            deadline: Duration::from_millis(200),
        },
        cache: cache(),
        ..Default::default()
    };
    if let Some(role) = role {
        config.guests.insert(role, adversarial_path().to_path_buf());
    }
    Policy::load(&config, Arc::new(services())).unwrap()
}

#[test]
fn ranking_falls_back_to_the_default_guest_per_call() {
    let default = policy(None).index(entries(), Default::default()).unwrap();
    let user = policy(Some(Role::Ranking));
    let index = user.index(entries(), Default::default()).unwrap();
    let opts = SearchOptions::default();
    // The adversarial guest answers plain queries with the first entries in order.
    assert_eq!(
        index
            .search("status", &opts)
            .unwrap()
            .iter()
            .map(|h| h.index)
            .collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
    // It loops on "loop": the default guest answers that call instead.
    let expected = default.search("loop", &opts).unwrap();
    assert_eq!(
        expected.iter().map(|h| h.index).collect::<Vec<_>>(),
        vec![4],
        "the default guest finds the ping tool"
    );
    assert_eq!(index.search("loop", &opts).unwrap(), expected);
    assert_eq!(
        user.user_guest(Role::Ranking),
        Some(adversarial_path().to_str().unwrap()),
        "one failure is not fatal"
    );
}

#[test]
fn a_guest_failing_repeatedly_is_set_aside() {
    let user = policy(Some(Role::Ranking));
    let index = user.index(entries(), Default::default()).unwrap();
    let opts = SearchOptions::default();
    for _ in 0..MAX_STRIKES {
        assert!(
            index.search("panic", &opts).is_ok(),
            "each failure is answered by the default guest"
        );
    }
    assert_eq!(user.user_guest(Role::Ranking), None);
    // From now on the default guest answers directly.
    assert_eq!(
        index
            .search("status", &opts)
            .unwrap()
            .iter()
            .map(|h| h.index)
            .collect::<Vec<_>>(),
        vec![2]
    );
}

#[test]
fn a_success_resets_the_strikes() {
    let user = policy(Some(Role::Ranking));
    let index = user.index(entries(), Default::default()).unwrap();
    let opts = SearchOptions::default();
    for _ in 0..MAX_STRIKES * 2 {
        index.search("panic", &opts).unwrap();
        index.search("ok", &opts).unwrap();
    }
    assert!(user.user_guest(Role::Ranking).is_some());
}

#[test]
fn error_values_are_answers_not_failures() {
    let user = policy(Some(Role::Ranking));
    let index = user.index(entries(), Default::default()).unwrap();
    for _ in 0..MAX_STRIKES + 1 {
        let err = index
            .search("catalog", &SearchOptions::default())
            .unwrap_err();
        assert!(
            matches!(
                err,
                PluginError::Guest {
                    error: GuestError::Denied(_),
                    ..
                }
            ),
            "{err:?}"
        );
    }
    assert!(
        user.user_guest(Role::Ranking).is_some(),
        "denials are not strikes"
    );
}

#[test]
fn naming_falls_back_to_the_default_guest() {
    let user = policy(Some(Role::Naming));
    let mut tools = tools();
    let opts = NamingOptions::default();
    assert_eq!(
        user.names(&tools, &opts).unwrap()[0],
        NameOutcome::Named("adv_0".into())
    );
    tools[0].name = "panic".into();
    assert_eq!(
        user.names(&tools, &opts).unwrap()[0],
        NameOutcome::Named("github__panic".into())
    );
}

#[test]
fn a_trapping_build_falls_back_too() {
    let user = policy(Some(Role::Ranking));
    let opts = mcpw::plugin::IndexOptions {
        profile: Some("panic".into()),
        ..Default::default()
    };
    // The adversarial guest panics while building; the default guest then rejects
    // the unknown profile as an error value, which is passed on.
    let err = user.index(entries(), opts).err().expect("no index");
    assert!(
        matches!(err, PluginError::Guest { ref guest, error: GuestError::InvalidInput(_) } if guest == "default"),
        "{err:?}"
    );
}

#[test]
fn a_search_of_one_server_answers_with_that_servers_tools_whatever_the_guest_says() {
    // The adversarial guest answers plain queries with the first entries,
    // whatever server the search is limited to.
    let user = policy(Some(Role::Ranking));
    let index = user.index(entries(), Default::default()).unwrap();
    let only_git = SearchOptions {
        server: Some("git".into()),
        ..SearchOptions::default()
    };
    let hits = index.search("status", &only_git).unwrap();
    assert!(!hits.is_empty());
    let all = entries();
    assert!(
        hits.iter().all(|h| all[h.index].tool.server == "git"),
        "{:?}",
        hits.iter().map(|h| &all[h.index].name).collect::<Vec<_>>()
    );
}
