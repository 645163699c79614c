//! Property tests of the checks on guest answers: for arbitrary answers, a
//! check accepts exactly those that keep the contract (computed here
//! independently) and passes them through unchanged.

use super::{NameOutcome, SearchOptions, Seen, check_hits, check_names, wit_naming, wit_ranking};
use crate::catalog::{Entry, Tool};
use crate::plugin::{PluginError, Role};
use proptest::prelude::*;
use std::sync::Arc;

use crate::test_props::config;

const SERVERS: &[&str] = &["a", "b", "c"];

fn entries() -> impl Strategy<Value = Vec<Entry>> {
    prop::collection::vec(prop::sample::select(SERVERS), 0..8).prop_map(|servers| {
        servers
            .into_iter()
            .enumerate()
            .map(|(i, s)| Entry {
                name: format!("{s}__t{i}"),
                tool: Arc::new(Tool::new(s, format!("t{i}"), "")),
            })
            .collect()
    })
}

fn search_options() -> impl Strategy<Value = SearchOptions> {
    (
        prop_oneof![4 => 0u32..10, 1 => any::<u32>()],
        proptest::option::of(prop::sample::select(vec!["a", "b", "zzz", ""])),
    )
        .prop_map(|(limit, server)| SearchOptions {
            limit,
            server: server.map(String::from),
            ..SearchOptions::default()
        })
}

fn score() -> impl Strategy<Value = f32> {
    prop_oneof![
        prop::sample::select(vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1.0,
            2.0,
            -1.0,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
        ]),
        any::<f32>(),
    ]
}

/// Any hit list, in range or not.
fn any_hits() -> impl Strategy<Value = Vec<wit_ranking::Hit>> {
    prop::collection::vec(
        (prop_oneof![4 => 0u32..10, 1 => any::<u32>()], score()),
        0..10,
    )
    .prop_map(|hits| {
        hits.into_iter()
            .map(|(index, score)| wit_ranking::Hit {
                index,
                score,
                need: None,
            })
            .collect()
    })
}

/// A list that is often right: distinct indices, scores sorted best first.
fn sorted_hits() -> impl Strategy<Value = Vec<wit_ranking::Hit>> {
    (
        prop::sample::subsequence((0u32..8).collect::<Vec<_>>(), 0..=8).prop_shuffle(),
        prop::collection::vec(-100.0f32..100.0, 8),
    )
        .prop_map(|(indices, mut scores)| {
            scores.sort_by(|a, b| b.total_cmp(a));
            indices
                .into_iter()
                .zip(scores)
                .map(|(index, score)| wit_ranking::Hit {
                    index,
                    score,
                    need: None,
                })
                .collect()
        })
}

/// The contract of `search`, written out.
fn hits_keep_the_contract(
    entries: &[Entry],
    options: &SearchOptions,
    hits: &[wit_ranking::Hit],
) -> bool {
    let within_limit = hits.len() as u64 <= u64::from(options.limit);
    let in_range = hits.iter().all(|h| (h.index as usize) < entries.len());
    let unique = hits
        .iter()
        .enumerate()
        .all(|(i, h)| hits[..i].iter().all(|g| g.index != h.index));
    let finite = hits.iter().all(|h| h.score.is_finite());
    let best_first = hits.windows(2).all(|w| w[1].score <= w[0].score);
    let of_server = match &options.server {
        None => true,
        Some(s) => hits.iter().all(|h| {
            entries
                .get(h.index as usize)
                .is_none_or(|e| e.tool.server == *s)
        }),
    };
    within_limit && in_range && unique && finite && best_first && of_server
}

fn is_contract_error(e: &PluginError, want: Role) -> bool {
    matches!(e, PluginError::BadOutput { guest, role, .. } if guest == "g" && *role == want)
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "mcp", "ToolSearch", "x-y_1", "A"]).prop_map(String::from),
        2 => "[A-Za-z0-9_-]{1,3}",
        1 => prop::sample::select(vec![String::new(), "a b".into(), "é".into(), "a.b".into(),
            "x".repeat(64), "x".repeat(65)]),
        1 => any::<String>(),
    ]
}

fn outcome(count: usize) -> impl Strategy<Value = wit_naming::NameOutcome> {
    prop_oneof![
        4 => name().prop_map(wit_naming::NameOutcome::Named),
        2 => prop_oneof![4 => 0..(count as u32 + 1), 1 => any::<u32>()]
            .prop_map(wit_naming::NameOutcome::DuplicateOf),
        1 => name().prop_map(wit_naming::NameOutcome::Reserved),
    ]
}

/// (tool count, reserved names, answer); the answer length is off by one at times.
fn naming_case() -> impl Strategy<Value = (usize, Vec<String>, Vec<wit_naming::NameOutcome>)> {
    (0usize..8, prop_oneof![4 => Just(0usize), 1 => 0usize..3]).prop_flat_map(|(count, off)| {
        let len = if off == 1 {
            count + 1
        } else {
            count.saturating_sub(off / 2)
        };
        (
            Just(count),
            prop::sample::subsequence(
                vec!["mcp".to_string(), "ToolSearch".into(), "a".into()],
                0..=3,
            ),
            prop::collection::vec(outcome(count), len),
        )
    })
}

/// `^[A-Za-z0-9_-]{1,64}$`.
fn name_matches_pattern(name: &str) -> bool {
    let chars: Vec<char> = name.chars().collect();
    (1..=64).contains(&chars.len())
        && chars
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
}

/// The contract of `names`, written out.
fn names_keep_the_contract(
    count: usize,
    reserved: &[String],
    answer: &[wit_naming::NameOutcome],
) -> bool {
    use wit_naming::NameOutcome as O;
    let named = |o: &O| match o {
        O::Named(n) => Some(n.clone()),
        _ => None,
    };
    answer.len() == count
        && answer.iter().enumerate().all(|(i, o)| match o {
            O::Named(n) => {
                name_matches_pattern(n)
                    && !reserved.contains(n)
                    && answer[..i].iter().filter_map(named).all(|m| m != *n)
            }
            O::DuplicateOf(j) => (*j as usize) < i && matches!(answer[*j as usize], O::Named(_)),
            O::Reserved(_) => true,
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn check_hits_accepts_exactly_the_contract(
        entries in entries(),
        options in search_options(),
        hits in prop_oneof![any_hits(), sorted_hits()],
    ) {
        let expected = hits_keep_the_contract(&entries, &options, &hits);
        let seen = Seen { entries: &entries, view: None };
        match check_hits("g", seen, "a query", &options, hits.clone()) {
            Ok(out) => {
                prop_assert!(expected, "accepted {:?} for {:?}", hits, options);
                prop_assert_eq!(out.len(), hits.len());
                for (o, h) in out.iter().zip(&hits) {
                    prop_assert_eq!(o.index, h.index as usize);
                    prop_assert_eq!(o.score.to_bits(), h.score.to_bits());
                }
            }
            Err(e) => {
                prop_assert!(!expected, "rejected {:?} for {:?}: {}", hits, options, e);
                prop_assert!(is_contract_error(&e, Role::Ranking), "{:?}", e);
            }
        }
    }

    #[test]
    fn check_names_accepts_exactly_the_contract((count, reserved, answer) in naming_case()) {
        let expected = names_keep_the_contract(count, &reserved, &answer);
        match check_names("g", count, &reserved, answer.clone()) {
            Ok(out) => {
                prop_assert!(expected, "accepted {:?}", answer);
                let want: Vec<NameOutcome> = answer
                    .into_iter()
                    .map(|o| match o {
                        wit_naming::NameOutcome::Named(n) => NameOutcome::Named(n),
                        wit_naming::NameOutcome::DuplicateOf(j) => NameOutcome::DuplicateOf(j as usize),
                        wit_naming::NameOutcome::Reserved(n) => NameOutcome::Reserved(n),
                    })
                    .collect();
                prop_assert_eq!(out, want);
            }
            Err(e) => {
                prop_assert!(!expected, "rejected {:?} (reserved {:?}): {}", answer, reserved, e);
                prop_assert!(is_contract_error(&e, Role::Naming), "{:?}", e);
            }
        }
    }
}

fn hit(index: u32, score: f32, need: Option<&str>) -> wit_ranking::Hit {
    wit_ranking::Hit {
        index,
        score,
        need: need.map(String::from),
    }
}

/// A 0.1.x guest is given no skills: its hits index into what it was
/// given, and come back as positions among every entry.
#[test]
fn an_older_guests_hits_are_mapped_past_the_skills_it_was_not_given() {
    let entry = |name: &str, tool: Tool| Entry {
        name: name.into(),
        tool: Arc::new(tool),
    };
    let entries = vec![
        entry("s__a", Tool::new("s", "a", "")),
        entry(
            "s/pdf",
            Tool::skill("s", "pdf", "PDFs", "skill://s/pdf/SKILL.md"),
        ),
        entry("s__b", Tool::new("s", "b", "")),
    ];
    let seen = Seen {
        entries: &entries,
        view: Some(&[0, 2]),
    };
    let options = SearchOptions::default();
    let out = check_hits(
        "g",
        seen,
        "q",
        &options,
        vec![hit(1, 2.0, None), hit(0, 1.0, None)],
    )
    .unwrap();
    assert_eq!(out.iter().map(|h| h.index).collect::<Vec<_>>(), [2, 0]);
    let beyond = check_hits("g", seen, "q", &options, vec![hit(2, 1.0, None)]);
    assert!(is_contract_error(&beyond.unwrap_err(), Role::Ranking));
}

/// A hit's need is kept when it is a part of the query, dropped when
/// blank, and refused when it cannot be one (far longer than the query).
#[test]
fn a_hits_need_is_kept_dropped_when_blank_and_refused_when_longer_than_the_query() {
    let entries: Vec<Entry> = ["a", "b"]
        .map(|t| Entry {
            name: format!("s__{t}"),
            tool: Arc::new(Tool::new("s", t, "")),
        })
        .into();
    let seen = Seen {
        entries: &entries,
        view: None,
    };
    let options = SearchOptions::default();
    let query = "find the issue and save it to notes.md";
    let hits = vec![
        hit(0, 2.0, Some("save it to notes.md")),
        hit(1, 1.0, Some("  ")),
    ];
    let out = check_hits("g", seen, query, &options, hits).unwrap();
    assert_eq!(out[0].need.as_deref(), Some("save it to notes.md"));
    assert_eq!(out[1].need, None);
    let long = "x".repeat(2 * query.len() + 1);
    let refused = check_hits("g", seen, query, &options, vec![hit(0, 1.0, Some(&long))]);
    assert!(is_contract_error(&refused.unwrap_err(), Role::Ranking));
}
