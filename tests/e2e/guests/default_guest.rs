//! The embedded default guest, run under wasmtime: naming, direct tools and
//! ranking on fixtures.

use crate::common::{cache, fixture, services};
use mcpw::catalog::{Entry, Tool, ToolKind, load_catalog};
use mcpw::plugin::{
    DirectOptions, GuestError, IndexOptions, NameOutcome, NamingOptions, PluginError, Policy,
    PolicyConfig, PrefixMode, QueryMode, SearchIndex, SearchOptions, ServerDirect,
    is_valid_tool_name,
};
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

pub(crate) fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        Policy::load(
            &PolicyConfig {
                cache: cache(),
                ..Default::default()
            },
            Arc::new(services()),
        )
        .unwrap()
    })
}

pub(crate) fn bench_catalog() -> Vec<Tool> {
    load_catalog(&fixture("catalog.json")).unwrap()
}

fn names(tools: &[Tool], prefix: PrefixMode) -> Vec<NameOutcome> {
    policy()
        .names(
            tools,
            &NamingOptions {
                prefix,
                reserved: vec!["mcp".into()],
            },
        )
        .unwrap()
}

#[test]
fn every_bench_tool_gets_a_valid_unique_name() {
    let tools = bench_catalog();
    assert_eq!(tools.len(), 1287);
    let out = names(&tools, PrefixMode::Server);
    let named: Vec<&String> = out
        .iter()
        .filter_map(|o| {
            if let NameOutcome::Named(n) = o {
                Some(n)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        named.len(),
        tools.len(),
        "server prefixes make every name unique"
    );
    assert!(named.iter().all(|n| is_valid_tool_name(n)));
    assert_eq!(named.iter().collect::<HashSet<_>>().len(), named.len());
    assert_eq!(named[0], "bing_cn_mcp__bing_search");
}

#[test]
fn prefix_modes() {
    let tools = vec![
        Tool::new("github-mcp", "create_issue", ""),
        Tool::new("my.server", "x", ""),
    ];
    let get = |p| names(&tools, p);
    assert_eq!(
        get(PrefixMode::Server),
        vec![
            NameOutcome::Named("github_mcp__create_issue".into()),
            NameOutcome::Named("my_server__x".into())
        ]
    );
    assert_eq!(
        get(PrefixMode::Short)[0],
        NameOutcome::Named("github__create_issue".into())
    );
    assert_eq!(
        get(PrefixMode::None)[0],
        NameOutcome::Named("create_issue".into())
    );
}

#[test]
fn collisions_and_reserved_names_in_none_mode() {
    let tools = bench_catalog();
    let out = names(&tools, PrefixMode::None);
    // Tools of the same name on different servers all stay reachable: the
    // first keeps the name, the others get a suffix.
    let mut seen = std::collections::HashSet::new();
    let mut suffixed = 0;
    for (i, o) in out.iter().enumerate() {
        match o {
            NameOutcome::Named(n) => {
                assert!(seen.insert(n.clone()), "{n} given twice");
                if *n != tools[i].name {
                    suffixed += 1;
                }
            }
            NameOutcome::DuplicateOf(w) => {
                let (a, b) = (&tools[i], &tools[*w]);
                assert_eq!(
                    (&a.server, &a.name),
                    (&b.server, &b.name),
                    "only a repeat is hidden"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        suffixed > 0,
        "the bench catalog has tools of the same name on different servers"
    );
    let reserved = names(&[Tool::new("s", "mcp", "")], PrefixMode::None);
    assert_eq!(reserved, vec![NameOutcome::Reserved("mcp".into())]);
}

#[test]
fn long_names_and_resources() {
    let mut res = Tool::new("docs", "Project README (v2)", "");
    res.kind = ToolKind::Resource;
    res.resource_uri = Some("file:///README.md".into());
    let long = Tool::new(
        "an-extremely-long-server-name",
        "and_an_even_longer_tool_name_that_never_seems_to_end",
        "",
    );
    let out = names(&[res, long], PrefixMode::Server);
    assert_eq!(
        out[0],
        NameOutcome::Named("docs__get_project_readme_v2".into())
    );
    let NameOutcome::Named(n) = &out[1] else {
        panic!()
    };
    assert_eq!(n.len(), 64);
    assert!(is_valid_tool_name(n));
}

fn entries(tools: Vec<Tool>) -> Arc<[Entry]> {
    policy()
        .entries(&tools, &NamingOptions::default())
        .unwrap()
        .into()
}

#[test]
fn direct_tools_env_over_server_settings() {
    let e = entries(vec![
        Tool::new("github", "create_issue", ""),
        Tool::new("github", "list_issues", ""),
        Tool::new("git", "git_status", ""),
    ]);
    let servers = vec![
        (
            "github".into(),
            ServerDirect::Only(vec!["list_issues".into()]),
        ),
        ("git".into(), ServerDirect::All),
    ];
    let direct = |env: Option<&str>| {
        policy()
            .direct(
                &e,
                &DirectOptions {
                    env_override: env.map(str::to_string),
                    servers: servers.clone(),
                },
            )
            .unwrap()
    };
    assert_eq!(direct(None), vec![1, 2]);
    assert_eq!(direct(Some("__none__")), Vec::<usize>::new());
    assert_eq!(direct(Some("*")), vec![0, 1, 2]);
    assert_eq!(direct(Some("github/create_issue")), vec![0]);
}

fn index() -> &'static SearchIndex {
    static INDEX: OnceLock<SearchIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        policy()
            .index(entries(bench_catalog()), IndexOptions::default())
            .unwrap()
    })
}

fn top(query: &str, options: SearchOptions) -> Vec<String> {
    let index = index();
    index
        .search(query, &options)
        .unwrap()
        .iter()
        .map(|h| index.entries()[h.index].name.clone())
        .collect()
}

#[test]
fn keyword_search_defaults_to_five_results() {
    let hits = top("take screenshot", SearchOptions::default());
    assert_eq!(hits.len(), 5);
    assert!(
        hits[..2].contains(&"playwright__browser_take_screenshot".to_string()),
        "{hits:?}"
    );
}

#[test]
fn select_returns_exact_names_in_order() {
    let hits = top(
        "select:git__git_status,nope,github__create_issue",
        SearchOptions {
            limit: 10,
            ..Default::default()
        },
    );
    assert_eq!(hits, vec!["git__git_status", "github__create_issue"]);
}

#[test]
fn regex_mode_and_invalid_patterns() {
    let opts = SearchOptions {
        limit: 50,
        mode: QueryMode::Regex,
        server: None,
    };
    let hits = top("^git__git_(status|log)$", opts.clone());
    assert_eq!(hits, vec!["git__git_status", "git__git_log"]);
    let err = index().search("([unclosed", &opts).unwrap_err();
    assert!(
        matches!(
            err,
            PluginError::Guest {
                error: GuestError::InvalidPattern(_),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn server_filter() {
    let hits = top(
        "issue",
        SearchOptions {
            limit: 20,
            server: Some("github".into()),
            ..Default::default()
        },
    );
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.starts_with("github__")), "{hits:?}");
}

#[test]
fn empty_queries_and_unknown_profiles_are_error_values() {
    let err = index()
        .search("   ", &SearchOptions::default())
        .unwrap_err();
    assert!(matches!(
        err,
        PluginError::Guest {
            error: GuestError::InvalidInput(_),
            ..
        }
    ));
    let opts = IndexOptions {
        profile: Some("nope".into()),
        ..Default::default()
    };
    assert!(matches!(
        policy().index(entries(vec![]), opts),
        Err(PluginError::Guest {
            error: GuestError::InvalidInput(_),
            ..
        })
    ));
}

#[test]
fn the_default_guest_is_loaded_at_its_first_call_once_for_every_role() {
    let dir = tempfile::tempdir().unwrap();
    let compiled = dir.path().join("guests");
    let config = PolicyConfig {
        cache: mcpw::plugin::CompileCache::new(Some(compiled.clone())),
        ..Default::default()
    };
    let policy = Policy::load(&config, Arc::new(services())).unwrap();
    let count = || {
        std::fs::read_dir(&compiled).map_or(0, |d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                .count()
        })
    };
    assert_eq!(count(), 0, "loading the policy compiles nothing");
    let entries = policy
        .entries(&crate::common::tools(), &NamingOptions::default())
        .unwrap();
    assert_eq!(entries.len(), 5);
    assert_eq!(count(), 1, "the first call compiled the guest");
    policy.direct(&entries, &DirectOptions::default()).unwrap();
    let index = policy
        .index(entries.into(), IndexOptions::default())
        .unwrap();
    assert!(
        !index
            .search("issue", &SearchOptions::default())
            .unwrap()
            .is_empty()
    );
    assert_eq!(count(), 1, "the other roles share the guest");
}
