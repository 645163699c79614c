//! Where a model's files are: a folder named in the config, or a model id
//! fetched from its hub into mcpw's cache on first use. Also the model's
//! identity, which keys its cached vectors.

use super::EmbedError;
use crate::config::search::ModelSetting;
use sha2::{Digest, Sha256};
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

/// A configured model, before or after its files are at hand.
#[derive(Clone, Debug)]
pub struct ModelSource {
    /// How the model is named in messages and in its identity.
    pub name: String,
    /// The folder its files are (or will be) in.
    pub folder: PathBuf,
    /// The hub id to fetch it from when the folder is missing.
    hub_id: Option<String>,
}

impl ModelSource {
    /// The source `setting` names; `home` expands `~`, `cache` holds fetched models.
    pub fn new(setting: &ModelSetting, home: &Path, cache: &Path) -> ModelSource {
        match setting {
            ModelSetting::Folder(p) => {
                let folder = match p.strip_prefix("~") {
                    Ok(rest) => home.join(rest),
                    Err(_) => p.clone(),
                };
                let name = folder
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| folder.display().to_string());
                ModelSource {
                    name,
                    folder,
                    hub_id: None,
                }
            }
            ModelSetting::Hub(id) => ModelSource {
                name: id.clone(),
                folder: cache.join("models").join(id.replace('/', "--")),
                hub_id: Some(id.clone()),
            },
        }
    }

    /// Are the model's files at hand (no fetch needed)?
    pub fn present(&self) -> bool {
        REQUIRED.iter().all(|f| self.folder.join(f).is_file())
    }

    /// Makes the files present: nothing for a folder (it must hold them),
    /// a fetch from the hub for a model id. Blocking.
    pub fn fetch(&self, runtime: &tokio::runtime::Handle) -> Result<(), EmbedError> {
        if self.present() {
            return Ok(());
        }
        let Some(id) = &self.hub_id else {
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
        let hub = std::env::var("HF_ENDPOINT").unwrap_or_else(|_| DEFAULT_HUB.to_string());
        let hub = hub.trim_end_matches('/');
        tracing::info!("fetching the embedding model {id} from {hub}");
        // Fetched into a folder of its own, then moved into place whole: a
        // fetch cut short leaves no folder that looks complete.
        let parent = self.folder.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)
            .map_err(|e| EmbedError::Model(format!("cannot create {}: {e}", parent.display())))?;
        let partial = tempfile::Builder::new()
            .prefix(".fetching-")
            .tempdir_in(parent)
            .map_err(|e| EmbedError::Model(format!("cannot write in {}: {e}", parent.display())))?;
        runtime.block_on(async {
            let client = reqwest::Client::new();
            for (file, required) in REQUIRED
                .iter()
                .map(|f| (f, true))
                .chain(OPTIONAL.iter().map(|f| (f, false)))
            {
                let url = format!("{hub}/{id}/resolve/main/{file}");
                let answer = client
                    .get(&url)
                    .send()
                    .await
                    .map_err(|e| EmbedError::Model(format!("cannot fetch {url}: {e}")))?;
                if !answer.status().is_success() {
                    if required {
                        return Err(EmbedError::Model(format!(
                            "cannot fetch {url}: {}",
                            answer.status()
                        )));
                    }
                    continue;
                }
                let bytes = answer
                    .bytes()
                    .await
                    .map_err(|e| EmbedError::Model(format!("cannot fetch {url}: {e}")))?;
                let path = partial.path().join(file);
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        EmbedError::Model(format!("cannot create {}: {e}", dir.display()))
                    })?;
                }
                std::fs::write(&path, &bytes).map_err(|e| {
                    EmbedError::Model(format!("cannot write {}: {e}", path.display()))
                })?;
            }
            Ok(())
        })?;
        let partial = partial.keep();
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
