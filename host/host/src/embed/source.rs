//! Where a model's files are: a folder named in the config, or a model id
//! fetched from its hub into mcpw's cache on first use, at a pinned commit
//! with each file's digest checked (see [`pin`]). Also the model's
//! identity, which keys its cached vectors.

mod pin;

use super::EmbedError;
use crate::config::search::{ModelChoice, ModelSetting};
use crate::paths::Environment;
use pin::Pin;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The files a model folder must hold.
const REQUIRED: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// Files read when present (pooling, normalisation, the length cut).
const OPTIONAL: [&str; 3] = [
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
];
/// The hub asked when `HF_ENDPOINT` names none.
const DEFAULT_HUB: &str = "https://huggingface.co";
/// How long connecting to the hub may take: offline, search falls back to
/// words soon instead of waiting on a connection that never comes.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long the hub may go silent mid-answer: one that stops sending fails
/// the fetch (search stays by words and says why) instead of holding it.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A hub model: its id, the commit asked for, if any, and the hub.
#[derive(Clone, Debug)]
struct HubModel {
    id: String,
    commit: Option<String>,
    /// The hub's address: `HF_ENDPOINT`, else [`DEFAULT_HUB`].
    endpoint: String,
}

/// A configured model, before or after its files are at hand.
#[derive(Clone, Debug)]
pub struct ModelSource {
    /// How the model is named in messages and in its identity.
    pub name: String,
    /// The folder its files are (or will be) in.
    pub folder: PathBuf,
    /// The hub model to fetch when the folder is missing.
    hub: Option<HubModel>,
    /// The model is mcpw's default, not one the user named.
    pub default: bool,
}

impl ModelSource {
    /// The model `choice` asks for, if any (see [`ModelSource::new`]).
    pub fn of(choice: &ModelChoice, env: &Environment) -> Option<ModelSource> {
        let mut source = ModelSource::new(&choice.setting()?, env);
        source.default = matches!(choice, ModelChoice::Default);
        Some(source)
    }

    /// The source `setting` names: `~` is the home of `env`, fetched models
    /// go to its cache (one folder per model id, or per id and commit when
    /// the setting or mcpw's own pin of the model names a commit), from the
    /// hub `HF_ENDPOINT` names, else the public one.
    pub fn new(setting: &ModelSetting, env: &Environment) -> ModelSource {
        match setting {
            ModelSetting::Folder(p) => {
                let folder = match p.strip_prefix("~") {
                    Ok(rest) => env.home().join(rest),
                    Err(_) => p.clone(),
                };
                let name = folder
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| folder.display().to_string());
                ModelSource {
                    name,
                    folder,
                    hub: None,
                    default: false,
                }
            }
            ModelSetting::Hub { id, commit } => {
                let commit = commit
                    .clone()
                    .or_else(|| pin::known(id, None).map(|p| p.commit));
                let mut folder = id.replace('/', "--");
                if let Some(c) = &commit {
                    folder = format!("{folder}@{c}");
                }
                let endpoint = env
                    .get("HF_ENDPOINT")
                    .filter(|e| !e.trim().is_empty())
                    .unwrap_or(DEFAULT_HUB);
                ModelSource {
                    name: id.clone(),
                    folder: env.cache_dir().join("models").join(folder),
                    hub: Some(HubModel {
                        id: id.clone(),
                        commit,
                        endpoint: endpoint.trim_end_matches('/').to_string(),
                    }),
                    default: false,
                }
            }
        }
    }

    /// The hub a missing model is fetched from (none for a folder).
    pub fn fetched_from(&self) -> Option<&str> {
        self.hub.as_ref().map(|h| h.endpoint.as_str())
    }

    /// Are the model's files at hand (no fetch needed)? A hub model's also
    /// need the pin they were fetched under.
    pub fn present(&self) -> bool {
        REQUIRED.iter().all(|f| self.folder.join(f).is_file())
            && (self.hub.is_none() || self.folder.join(pin::FILE).is_file())
    }

    /// Makes the files present: nothing for a folder (it must hold them),
    /// a fetch from the hub for a model id, at its pinned commit, every file
    /// checked against its pinned digest. Blocking.
    pub fn fetch(&self, runtime: &tokio::runtime::Handle) -> Result<(), EmbedError> {
        if self.present() {
            return Ok(());
        }
        let Some(model) = &self.hub else {
            let missing: Vec<&str> = REQUIRED
                .into_iter()
                .filter(|f| !self.folder.join(f).is_file())
                .collect();
            return Err(EmbedError::Model(format!(
                "the model folder {} has no {}",
                self.folder.display(),
                missing.join(", ")
            )));
        };
        let hub = model.endpoint.as_str();
        // What the files must be: as recorded at the first fetch, else as
        // mcpw pins the model itself, else the first fetch records it.
        let expected =
            pin::recorded(&self.folder)?.or_else(|| pin::known(&model.id, model.commit.as_deref()));
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|e| EmbedError::Model(format!("cannot fetch {}: {e}", model.id)))?;
        let commit = match (&expected, &model.commit) {
            (Some(p), _) => p.commit.clone(),
            (None, Some(c)) => c.clone(),
            (None, None) => runtime.block_on(main_commit(&client, hub, &model.id))?,
        };
        tracing::info!(
            "fetching the embedding model {}@{commit} from {hub}",
            model.id
        );
        let partial = self.partial_folder()?;
        let files = runtime.block_on(download(&client, hub, model, &commit, partial.path()))?;
        if let Some(expected) = &expected {
            expected.verify(&model.id, &files)?;
        }
        let record = serde_json::to_string_pretty(&Pin { commit, files }).expect("a pin");
        let record_path = partial.path().join(pin::FILE);
        std::fs::write(&record_path, record).map_err(|e| {
            EmbedError::Model(format!("cannot write {}: {e}", record_path.display()))
        })?;
        self.put_in_place(partial)
    }

    /// A fresh folder beside the model's, for a fetch that is moved into
    /// place whole: one cut short leaves no folder that looks complete.
    fn partial_folder(&self) -> Result<tempfile::TempDir, EmbedError> {
        let parent = self.folder.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)
            .map_err(|e| EmbedError::Model(format!("cannot create {}: {e}", parent.display())))?;
        tempfile::Builder::new()
            .prefix(".fetching-")
            .tempdir_in(parent)
            .map_err(|e| EmbedError::Model(format!("cannot write in {}: {e}", parent.display())))
    }

    /// Moves a complete fetch into the model's folder, in place of what
    /// was there (files left of an earlier fetch, kept only for its pin).
    fn put_in_place(&self, partial: tempfile::TempDir) -> Result<(), EmbedError> {
        let partial = partial.keep();
        if self.folder.exists() && !self.present() {
            let _ = std::fs::remove_dir_all(&self.folder);
        }
        if let Err(e) = std::fs::rename(&partial, &self.folder) {
            let _ = std::fs::remove_dir_all(&partial);
            // Another process may have put it there first.
            if !self.present() {
                return Err(EmbedError::Model(format!(
                    "cannot move the model into {}: {e}",
                    self.folder.display()
                )));
            }
        }
        Ok(())
    }

    /// The model's identity: its name and a digest of its configuration,
    /// tokenizer and the layout of its weights (the safetensors header), so
    /// that other weights or another tokenizer never meet the old vectors.
    pub fn identity(&self) -> Result<String, EmbedError> {
        let read = |file: &str| {
            std::fs::read(self.folder.join(file)).map_err(|e| {
                EmbedError::Model(format!(
                    "cannot read {}: {e}",
                    self.folder.join(file).display()
                ))
            })
        };
        let mut hash = Sha256::new();
        hash.update(read("config.json")?);
        hash.update(read("tokenizer.json")?);
        hash.update(safetensors_header(&self.folder.join("model.safetensors"))?);
        let digest = hash.finalize();
        let short: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        Ok(format!("{}@{short}", self.name))
    }
}

/// The JSON header at the start of a safetensors file: each tensor's name,
/// type, shape and offsets (and, in most files, a digest of the rest).
fn safetensors_header(path: &Path) -> Result<Vec<u8>, EmbedError> {
    use std::io::Read;
    let bad = |why: String| EmbedError::Model(format!("{}: {why}", path.display()));
    let mut file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut len = [0u8; 8];
    file.read_exact(&mut len).map_err(|e| bad(e.to_string()))?;
    let len = u64::from_le_bytes(len);
    if len > 100 << 20 {
        return Err(bad("not a safetensors file (its header is too long)".into()));
    }
    let mut header = vec![0; len as usize];
    file.read_exact(&mut header)
        .map_err(|e| bad(e.to_string()))?;
    Ok(header)
}

/// The hub's answer at `url`, or the status it gave instead; an error when
/// it cannot be reached.
async fn get(
    client: &reqwest::Client,
    url: &str,
) -> Result<Result<reqwest::Response, reqwest::StatusCode>, EmbedError> {
    let answer = client
        .get(url)
        .send()
        .await
        .map_err(|e| EmbedError::Model(format!("cannot fetch {url}: {e}")))?;
    match answer.status() {
        status if status.is_success() => Ok(Ok(answer)),
        status => Ok(Err(status)),
    }
}

/// The commit the hub's `main` of `id` names now.
async fn main_commit(client: &reqwest::Client, hub: &str, id: &str) -> Result<String, EmbedError> {
    let url = format!("{hub}/api/models/{id}/revision/main");
    let fail = |why: String| EmbedError::Model(format!("cannot fetch {url}: {why}"));
    let answer = get(client, &url)
        .await?
        .map_err(|status| fail(status.to_string()))?;
    let body: serde_json::Value = answer.json().await.map_err(|e| fail(e.to_string()))?;
    match body["sha"].as_str() {
        Some(sha) if crate::config::search::is_commit(sha) => Ok(sha.to_ascii_lowercase()),
        _ => Err(fail(format!("no commit id in {body}"))),
    }
}

/// Fetches `model`'s files at `commit` into `into`: every required one,
/// and each optional one the hub has. Returns each file's sha256.
async fn download(
    client: &reqwest::Client,
    hub: &str,
    model: &HubModel,
    commit: &str,
    into: &Path,
) -> Result<BTreeMap<String, String>, EmbedError> {
    let mut digests = BTreeMap::new();
    let files = REQUIRED.iter().map(|f| (f, true));
    for (file, required) in files.chain(OPTIONAL.iter().map(|f| (f, false))) {
        let url = format!("{hub}/{}/resolve/{commit}/{file}", model.id);
        let fail = |why: String| EmbedError::Model(format!("cannot fetch {url}: {why}"));
        let answer = match get(client, &url).await? {
            Ok(answer) => answer,
            Err(status) if required => return Err(fail(status.to_string())),
            Err(_) => continue,
        };
        let bytes = answer.bytes().await.map_err(|e| fail(e.to_string()))?;
        let path = into.join(file);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| EmbedError::Model(format!("cannot create {}: {e}", dir.display())))?;
        }
        std::fs::write(&path, &bytes)
            .map_err(|e| EmbedError::Model(format!("cannot write {}: {e}", path.display())))?;
        digests.insert(file.to_string(), pin::digest(&bytes));
    }
    Ok(digests)
}
