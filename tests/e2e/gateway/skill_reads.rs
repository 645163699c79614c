//! Every read of a skill's file takes the skills' route (`skill://<server>/…`),
//! checked and audited as one: never the plain resource form, never changed
//! by a guard (a dynamic skill's file neither); and folders answered from
//! the manifests held. Real FastMCP servers, read by FastMCP's client.

use super::skills::{
    LIVE_MD, call, refused_by_the_guard, served, skills_client, two_servers_with, with_live,
};
use serde_json::{Value, json};

/// The code of a refused read (or folder read) in a report.
fn code(read: &Value) -> i64 {
    read["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("refused: {read}"))
}

/// The report of FastMCP's client with `plan` against the two skill servers
/// of the Skills tests (`web`, `data`), their folders under the directory
/// returned.
fn from_two_servers(plan: Value) -> (tempfile::TempDir, Value) {
    let root = tempfile::tempdir().unwrap();
    let dirs = two_servers_with(root.path(), json!({}), |_| {});
    let report = skills_client(&dirs, plan);
    (root, report)
}

/// The servers' `skill://` resources and templates are the skills': listed
/// by neither `resources/list` nor `resources/templates/list`, and not read
/// by the `mcpw:<server>/` form (which would skip the digest, the audit's
/// kind and the manifest), nor bare by the server's own URI: each is not found, as a URI no server
/// has is.
#[test]
fn skill_files_are_neither_listed_nor_read_as_plain_resources() {
    let (root, report) = from_two_servers(json!({"resources": true,
               "read": ["mcpw:data/skill://review/SKILL.md",
                        "mcpw:data/skill://review/ref/checklist.md",
                        "skill://deploy/SKILL.md",
                        "skill://data/review/SKILL.md",
                        "nowhere://at/all"]}));
    for key in ["resources", "templates"] {
        let listed = report[key].as_array().unwrap_or_else(|| panic!("{report}"));
        assert!(
            !listed
                .iter()
                .any(|u| u.as_str().unwrap().contains("skill://")),
            "{key}: {listed:?}"
        );
    }
    let reads = report["reads"].as_array().unwrap();
    // Not found, as a URI no server has is (the code is the client's
    // revision's: -32002, or -32602 from 2026-07-28).
    let not_found = code(&reads[4]);
    assert!([-32002, -32602].contains(&not_found), "{}", reads[4]);
    for (read, read_as) in [
        (&reads[0], "skill://data/review/SKILL.md"),
        (&reads[1], "skill://data/review/ref/checklist.md"),
    ] {
        assert_eq!(code(read), not_found, "{read}");
        let told = read["error"].as_str().unwrap();
        assert!(
            told.contains("not found") && told.contains(&format!("read as {read_as}")),
            "{read}"
        );
    }
    assert_eq!(code(&reads[2]), not_found, "{}", reads[2]);
    let on_disk = std::fs::read_to_string(root.path().join("two/review/SKILL.md")).unwrap();
    assert_eq!(reads[3]["text"], on_disk, "the skills' route reads it");
}

/// A dynamic skill's listing has no digest, yet a guard may not change its
/// file either: the bytes its server sent are hashed before the guards see
/// them, and a file they change is refused, said as denied in the audit.
#[test]
fn a_guard_may_not_change_a_dynamic_skills_file() {
    let root = tempfile::tempdir().unwrap();
    let trail = root.path().join("audit.jsonl");
    let settings = json!({"guards": [super::guards::redactor()], "audit": {"path": trail}});
    let note = "Use the key AKIAIOSFODNN7EXAMPLE for the test bucket.\n";
    let (dirs, _) = with_live(root.path(), settings, note);
    let other = refused_by_the_guard(&dirs, &trail, "skill://live/live/note.md");
    assert_eq!(other, LIVE_MD, "a file the guard leaves alone reads");
}

/// `mcp({skill})` compares the `SKILL.md` it reads with the listing, name
/// and description, whichever line end it is written with.
#[test]
fn the_proxy_tool_says_when_a_skill_md_differs_from_its_listing() {
    let root = tempfile::tempdir().unwrap();
    let (dirs, live) = with_live(root.path(), json!({}), "- first\n");
    let skill_md = live.join("SKILL.md");
    let crlf = |md: &str| md.replace('\n', "\r\n");
    let other = LIVE_MD.replace("as it goes.", "whenever it likes.");
    std::fs::write(&skill_md, crlf(&other)).unwrap();
    let mcp = || call("mcp", json!({"skill": "live/live"}));
    let r = served(
        &dirs,
        "proxy",
        json!([
            mcp(),
            {"op": "writeFile", "path": skill_md, "text": crlf(LIVE_MD)},
            mcp()
        ]),
    );
    let differs = &r[0]["structuredContent"]["frontmatterDiffers"];
    assert!(
        differs.as_str().unwrap_or_default().contains(
            "describes it as \"Answers from files its server writes whenever it likes.\""
        ),
        "{}",
        r[0]
    );
    assert!(
        r[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Note: its SKILL.md describes it"),
        "{}",
        r[0]
    );
    assert_eq!(r[2]["structuredContent"]["frontmatterDiffers"], Value::Null);
    assert_ne!(r[2]["isError"], true, "{}", r[2]);
}

/// `resources/directory/read` of a skill's folder is answered from the
/// manifest held (each file, each sub-folder once); a folder no skill has,
/// and a URI that is not a skill's, are refused as invalid params.
#[test]
fn a_skill_folder_is_read_from_its_manifest() {
    let (root, report) = from_two_servers(json!({
        "directories": ["skill://data/review", "skill://data/review/ref/",
                        "skill://data/nope", "file:///etc"]}));
    let read = report["directories"].as_array().unwrap();
    let entries = |r: &Value| -> Vec<(String, String)> {
        r["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|e| {
                let (uri, name) = (e["uri"].as_str(), e["name"].as_str());
                (uri.unwrap().to_string(), name.unwrap().to_string())
            })
            .collect()
    };
    let pair = |u: &str, n: &str| (u.to_string(), n.to_string());
    assert_eq!(
        entries(&read[0]),
        [
            pair("skill://data/review/SKILL.md", "SKILL.md"),
            pair("skill://data/review/ref/", "ref")
        ]
    );
    let checklist = root.path().join("two/review/ref/checklist.md");
    let size = std::fs::metadata(checklist).unwrap().len();
    assert_eq!(read[1]["resources"][0]["size"], size, "{}", read[1]);
    assert_eq!(
        entries(&read[1]),
        [pair("skill://data/review/ref/checklist.md", "checklist.md")]
    );
    for refused in &read[2..] {
        assert_eq!(code(refused), -32602, "{refused}");
    }
}
