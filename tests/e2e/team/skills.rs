//! Skills in a team: listed and read through either replica, the one that
//! started the skills server and the one that did not, each file's bytes
//! matching the digest listed.

use super::Wire;
use crate::common::{ConfigDirs, fixture, workspace};
use crate::servers::{MCPW, servers};
use mcpw_test_support::team::{Redis, replica};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The listing's files of the skill at `uri`, as (URI, digest).
fn files(listed: &Value, uri: &str) -> Vec<(String, String)> {
    let skill = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["uri"] == uri)
        .unwrap_or_else(|| panic!("{uri} in {listed}"));
    skill["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let field = |k: &str| f[k].as_str().unwrap().to_string();
            (field("uri"), field("digest"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn skills_are_listed_and_read_through_either_replica() {
    let root = tempfile::tempdir().unwrap();
    let redis = Redis::start(&root.path().join("redis"));
    let starts = root.path().join("starts");
    let run = format!(
        "echo started >> {}; exec {} {} k {}",
        starts.display(),
        servers().python_bin("python"),
        workspace().join("tests/servers/skills_server.py").display(),
        fixture("skills").join("two").display()
    );
    let homes = [ConfigDirs::new(), ConfigDirs::new()];
    for h in &homes {
        let server = json!({"command": "sh", "args": ["-c", &run]});
        h.user(&json!({"mcpServers": {"k": server}}).to_string());
    }
    let started = || std::fs::read_to_string(&starts).map_or(0, |t| t.lines().count());
    let (_a, a_port) = replica(MCPW, &homes[0].home(), &redis.url(), &[]);
    let a = format!("http://127.0.0.1:{a_port}/mcp");
    let session = Wire::initialize(&a).await;
    let at_a = session.request(&a, "skills/list", json!({})).await.unwrap();
    assert_eq!(started(), 1, "A started the server to list");
    mcpw_test_support::wait_until(
        "A's listing in Redis",
        std::time::Duration::from_secs(10),
        || redis.cli(&["HEXISTS", "mcpw:cache:servers", "k"]) == "1",
    );
    let (_b, b_port) = replica(MCPW, &homes[1].home(), &redis.url(), &[]);
    let b = format!("http://127.0.0.1:{b_port}/mcp");
    let at_b = session.request(&b, "skills/list", json!({})).await.unwrap();
    assert_eq!(started(), 1, "B listed from the shared state");
    let review = "skill://k/review/SKILL.md";
    let listed = files(&at_a, review);
    assert_eq!(files(&at_b, review), listed);
    assert_eq!(listed.len(), 2, "{listed:?}");
    for url in [&a, &b] {
        for (uri, digest) in &listed {
            let read = session
                .request(url, "resources/read", json!({"uri": uri}))
                .await
                .unwrap_or_else(|e| panic!("{uri} at {url}: {e}"));
            let text = read["contents"][0]["text"].as_str().unwrap();
            let own = format!("sha256:{:x}", Sha256::digest(text.as_bytes()));
            assert_eq!(&own, digest, "{uri} read at {url}");
            let on_disk = uri.strip_prefix("skill://k/").unwrap();
            let path = fixture("skills").join("two").join(on_disk);
            assert_eq!(text, std::fs::read_to_string(path).unwrap());
        }
    }
}
