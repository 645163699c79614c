use super::*;
use serde_json::json;

fn record(n: usize) -> Record {
    Record {
        time: iso_time(0),
        session: Some(1),
        client: "ci".into(),
        server: "s".into(),
        tool: format!("t{n}"),
        resource: None,
        skill: None,
        prompt: None,
        via: "call",
        decision: Decision::Allowed,
        reason: None,
        duration_ms: 1,
        arguments_bytes: 2,
        result_bytes: 3,
        error: None,
        arguments: None,
    }
}

#[test]
fn times_are_utc_iso_8601() {
    assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso_time(951_827_696_789), "2000-02-29T12:34:56.789Z");
    assert_eq!(iso_time(1_795_740_000_000), "2026-11-27T00:40:00.000Z");
}

#[test]
fn the_setting_reads_each_form_and_checks_its_fields() {
    let state = Path::new("/state");
    let on = AuditConfig::from_setting(Some(&json!(true)), state).unwrap();
    assert_eq!(on.to, AuditTarget::File("/state/audit.jsonl".into()));
    assert!(!on.arguments);
    let stderr = AuditConfig::from_setting(Some(&json!("stderr")), state).unwrap();
    assert_eq!(stderr.to, AuditTarget::Stderr);
    let full = json!({"path": "/log/a.jsonl", "maxMb": 2, "keep": 1, "arguments": true});
    let full = AuditConfig::from_setting(Some(&full), state).unwrap();
    assert_eq!(
        (full.max_bytes, full.keep, full.arguments),
        (2 << 20, 1, true)
    );
    assert!(AuditConfig::from_setting(Some(&json!(false)), state).is_none());
    assert!(AuditConfig::from_setting(None, state).is_none());
    assert!(AuditConfig::check(&json!({"path": "/x", "keep": 3})).is_none());
    assert!(
        AuditConfig::check(&json!({"paht": "/x"}))
            .unwrap()
            .starts_with("paht")
    );
    assert!(AuditConfig::check(&json!(3)).is_some());
}

#[test]
fn a_replica_writes_a_file_of_its_own() {
    let config =
        AuditConfig::from_setting(Some(&json!({"path": "/log/audit.jsonl"})), Path::new("/"))
            .unwrap();
    let log = AuditLog::new(config, Some("host-7"));
    assert_eq!(log.path(), Some(Path::new("/log/audit-host-7.jsonl")));
}

#[test]
fn the_file_rotates_past_its_size_keeping_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let config = AuditConfig {
        to: AuditTarget::File(path.clone()),
        max_bytes: 600,
        keep: 2,
        arguments: false,
    };
    let log = AuditLog::new(config, None);
    for n in 0..20 {
        log.write(&record(n));
    }
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let rotated = |n: u32| PathBuf::from(format!("{}.{n}", path.display()));
    let current = read(&path);
    assert!(current.len() <= 600, "{}", current.len());
    assert!(!read(&rotated(1)).is_empty() && !read(&rotated(2)).is_empty());
    // Oldest to newest, the kept lines are the last ones written, in order,
    // none lost between files: t<k>, t<k+1>, …, t19.
    let kept: Vec<u64> = [read(&rotated(2)), read(&rotated(1)), current.clone()]
        .iter()
        .flat_map(|text| text.lines().map(str::to_string).collect::<Vec<_>>())
        .map(|line| {
            serde_json::from_str::<Value>(&line).unwrap()["tool"]
                .as_str()
                .unwrap()[1..]
                .parse()
                .unwrap()
        })
        .collect();
    let first = kept[0];
    assert_eq!(kept, (first..20).collect::<Vec<u64>>(), "{kept:?}");
    assert!(!rotated(3).exists(), "only `keep` rotated files");
    for line in current.lines().chain(read(&rotated(1)).lines()) {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["client"], "ci");
        assert!(v.get("arguments").is_none());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
