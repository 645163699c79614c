use super::*;

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn metrics_match_the_reference_definitions() {
    let q = score(&ids(&["x", "a", "y", "b"]), &ids(&["a", "b"]));
    assert_eq!(q.r_at_1, 0.0);
    assert_eq!(q.r_at_5, 1.0);
    assert_eq!(q.mrr_at_10, 0.5);
    let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
    let idcg = 1.0 + 1.0 / 3f64.log2();
    assert!((q.ndcg_at_10 - dcg / idcg).abs() < 1e-12);
}

#[test]
fn recall_at_5_is_normalised_by_min_5_relevant() {
    let relevant = ids(&["1", "2", "3", "4", "5", "6", "7"]);
    let q = score(&ids(&["1", "2", "3", "x", "y"]), &relevant);
    assert!((q.r_at_5 - 3.0 / 5.0).abs() < 1e-12);
}

#[test]
fn nothing_found_scores_zero() {
    assert_eq!(score(&[], &ids(&["a"])), Quality::default());
    assert_eq!(mean(&[]), Quality::default());
}

fn needs(v: &[&[&str]]) -> Vec<Vec<String>> {
    v.iter().map(|n| ids(n)).collect()
}

fn close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-12, "got {got}, want {want}");
}

#[test]
fn task_metrics_count_needs_met() {
    // A met at rank 2, B at rank 4, C at rank 7; a2 at rank 3 meets nothing new.
    let n = needs(&[&["a1", "a2"], &["b1"], &["c1"]]);
    let q = score_task(&ids(&["x", "a1", "a2", "b1", "y", "z", "c1"]), &n);
    close(q.r_at_1, 0.0);
    close(q.r_at_5, 2.0 / 3.0);
    let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2() + 1.0 / 8f64.log2();
    let idcg = 1.0 + 1.0 / 3f64.log2() + 1.0 / 4f64.log2();
    close(q.ndcg_at_10, dcg / idcg);
}

#[test]
fn a_second_tool_of_a_met_need_counts_for_nothing() {
    // a2 serves A, already met by a1: B, at rank 6, is the only other need.
    let n = needs(&[&["a1", "a2"], &["b1"]]);
    let q = score_task(&ids(&["a1", "a2", "x", "y", "z", "b1"]), &n);
    close(q.r_at_1, 1.0);
    close(q.r_at_5, 0.5);
    let idcg = 1.0 + 1.0 / 3f64.log2();
    close(q.ndcg_at_10, (1.0 + 1.0 / 7f64.log2()) / idcg);
    // Both needs met in the top 3: a2 between them adds no gain.
    let q = score_task(&ids(&["a1", "a2", "b1"]), &n);
    close(q.r_at_5, 1.0);
    close(q.ndcg_at_10, (1.0 + 1.0 / 4f64.log2()) / idcg);
}

#[test]
fn task_recall_is_normalised_by_min_k_needs_and_at_most_one() {
    // One need: R@5 over 1, not 5.
    let q = score_task(&ids(&["x", "a"]), &needs(&[&["a"]]));
    close(q.r_at_1, 0.0);
    close(q.r_at_5, 1.0);
    close(q.ndcg_at_10, 1.0 / 3f64.log2());
    // Six needs, five met in the top 5: R@5 over 5, not 6.
    let six = needs(&[&["a"], &["b"], &["c"], &["d"], &["e"], &["f"]]);
    let q = score_task(&ids(&["a", "b", "c", "d", "e"]), &six);
    close(q.r_at_5, 1.0);
    // One tool serving two needs meets both at once, but R@1 stays at 1
    // and its one hit is one gain.
    let q = score_task(&ids(&["t"]), &needs(&[&["t"], &["t", "u"]]));
    close(q.r_at_1, 1.0);
    close(q.r_at_5, 1.0);
    close(q.ndcg_at_10, 1.0 / (1.0 + 1.0 / 3f64.log2()));
    assert_eq!(score_task(&[], &needs(&[&["a"]])), Quality::default());
}

fn task(query: &str, n: &[&[&str]]) -> Task {
    Task {
        query: query.into(),
        needs: needs(n),
    }
}

#[test]
fn tasks_report_r_at_5_by_how_many_needs_and_no_mrr() {
    let tasks = Labelled::Tasks(vec![
        task("one", &[&["a"]]),
        task("two", &[&["b"], &["c"]]),
        task("two more", &[&["d"], &["e"]]),
    ]);
    let ranked = [ids(&["a"]), ids(&["b", "x"]), ids(&["d", "e"])];
    let r = quality(&tasks, &ranked);
    close(r.r_at_5, (1.0 + 0.5 + 1.0) / 3.0);
    close(r.r_at_1, 1.0);
    assert_eq!(r.mrr_at_10, None);
    let by = r.r_at_5_by_needs.unwrap();
    assert_eq!(by.one_need.tasks, 1);
    close(by.one_need.r_at_5.unwrap(), 1.0);
    assert_eq!(by.two_or_more_needs.tasks, 2);
    close(by.two_or_more_needs.r_at_5.unwrap(), 0.75);
    let json = serde_json::to_value(&r).unwrap();
    assert!(json.get("mrr_at_10").is_none(), "{json}");
    assert_eq!(json["r_at_5_by_needs"]["two_or_more_needs"]["tasks"], 2);
    // Queries keep their MRR and have no split.
    let queries = Labelled::Queries(vec![Query {
        query: "q".into(),
        relevant: ids(&["a"]),
    }]);
    let r = quality(&queries, &[ids(&["x", "a"])]);
    assert_eq!(r.mrr_at_10, Some(0.5));
    assert_eq!(r.r_at_5_by_needs, None);
    let json = serde_json::to_value(&r).unwrap();
    assert!(json.get("r_at_5_by_needs").is_none(), "{json}");
}

#[test]
fn misses_name_the_needs_left_out_of_the_top_5_worst_first() {
    let tasks = Labelled::Tasks(vec![
        task("met", &[&["a"]]),
        task("half", &[&["a"], &["b", "c"]]),
        task("none", &[&["d"]]),
    ]);
    let ranked = [ids(&["a"]), ids(&["a", "x"]), ids(&["x"])];
    let m = misses(&tasks, &ranked);
    let queries: Vec<&str> = m.iter().map(|m| m.query.as_str()).collect();
    assert_eq!(queries, ["none", "half"]);
    assert_eq!(m[1].missed, needs(&[&["b", "c"]]));
    assert_eq!(m[1].top_5, ids(&["a", "x"]));
    // A query misses the relevant ids its top 5 leaves out.
    let queries = Labelled::Queries(vec![Query {
        query: "q".into(),
        relevant: ids(&["a", "b"]),
    }]);
    let m = misses(&queries, &[ids(&["a", "x", "y", "z", "w", "b"])]);
    assert_eq!(m[0].missed, needs(&[&["b"]]));
}

#[test]
fn a_labelled_file_is_read_as_the_kind_its_first_item_is() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let tasks = file(
        "t.json",
        r#"[{"query": "q", "needs": [["a/b"], ["c/d", "e/f"]]}]"#,
    );
    match load_labelled(&tasks).unwrap() {
        Labelled::Tasks(t) => assert_eq!(t[0].needs.len(), 2),
        other => panic!("{other:?}"),
    }
    let queries = file("q.json", r#"[{"query": "q", "relevant": ["a/b"]}]"#);
    assert!(matches!(
        load_labelled(&queries).unwrap(),
        Labelled::Queries(_)
    ));
    let mixed = file(
        "m.json",
        "[{\"query\": \"q\", \"needs\": [[\"a/b\"]]},\n{\"query\": \"r\", \"relevant\": [\"a/b\"]}]",
    );
    let err = load_labelled(&mixed).unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("needs"), "{err}");
}

#[test]
fn the_task_sets_name_only_tools_of_the_bench_catalog() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let catalog = crate::catalog::load_catalog(&fixtures.join("catalog.json")).unwrap();
    let ids: HashSet<String> = catalog.iter().map(|t| t.id()).collect();
    let mut seen = HashSet::new();
    for file in ["tasks_dev.json", "tasks_holdout.json"] {
        let Labelled::Tasks(tasks) = load_labelled(&fixtures.join(file)).unwrap() else {
            panic!("{file} holds queries, not tasks");
        };
        assert!(tasks.len() >= 40, "{file}: {} tasks", tasks.len());
        for t in &tasks {
            assert!((1..=5).contains(&t.needs.len()), "{file}: {:?}", t.query);
            assert!(seen.insert(t.query.clone()), "{file}: {:?} twice", t.query);
            for id in t.needs.iter().flatten() {
                assert!(ids.contains(id), "{file}: {id} ({:?}) is no tool", t.query);
            }
        }
    }
}

#[test]
fn a_task_without_needs_is_refused_and_unknown_tools_are_named() {
    let entries = [crate::catalog::Entry {
        name: "s__a".into(),
        tool: std::sync::Arc::new(crate::catalog::Tool::new("s", "a", "")),
    }];
    let empty_need = Labelled::Tasks(vec![task("q", &[&["s/a"], &[]])]);
    assert!(check_labelled(&empty_need, &entries).is_err());
    let no_needs = Labelled::Tasks(vec![task("q", &[])]);
    assert!(check_labelled(&no_needs, &entries).is_err());
    let unknown = Labelled::Tasks(vec![task("q", &[&["s/a"], &["s/zz"]])]);
    let warnings = check_labelled(&unknown, &entries).unwrap();
    assert!(
        warnings.len() == 1 && warnings[0].contains("s/zz"),
        "{warnings:?}"
    );
}
