//! The embedding model: loaded from a folder of sentence-transformers files
//! and run natively (`bert`, with the `embed` feature), and what its files
//! say of its shape without loading it.

#[cfg(feature = "embed")]
mod bert;
#[cfg(feature = "embed")]
pub use bert::Model;

use serde::Deserialize;
use std::fs;
use std::path::{Path, PathBuf};

/// Used when `sentence_bert_config.json` gives no `max_seq_length`.
pub(crate) const DEFAULT_MAX_TOKENS: usize = 512;

/// Why a model could not be loaded or a text could not be embedded. Each
/// names the file concerned where there is one.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)]
pub enum ModelError {
    /// A file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A JSON file does not say what it should.
    #[error("{} is not valid: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// `tokenizer.json` cannot be used.
    #[error("{} is not a usable tokenizer: {message}", path.display())]
    Tokenizer { path: PathBuf, message: String },
    /// The weights do not fit the configuration.
    #[error("{} does not hold the weights config.json describes: {message}", path.display())]
    Weights { path: PathBuf, message: String },
    /// A module or pooling this runtime does not run.
    #[error("{}: {message}", path.display())]
    Unsupported { path: PathBuf, message: String },
    /// A text could not be tokenised.
    #[error("tokenising failed: {0}")]
    Tokenize(String),
    /// The network failed on a batch.
    #[error("inference failed: {0}")]
    Inference(String),
    /// This build has no model runtime.
    #[error("this mcpw was built without the `embed` feature: it cannot run embedding models")]
    NotBuiltIn,
}

/// The length of the model's vectors and the most word pieces it reads, from
/// its `config.json` and `sentence_bert_config.json`, without loading it.
pub(crate) fn shape(dir: &Path) -> Result<(usize, usize), ModelError> {
    #[derive(Deserialize)]
    struct Config {
        hidden_size: usize,
        max_position_embeddings: usize,
    }
    #[derive(Deserialize)]
    struct SentenceBert {
        max_seq_length: Option<usize>,
    }
    let config: Config = read_json(&dir.join("config.json"))?;
    let path = dir.join("sentence_bert_config.json");
    let max = match read_optional(&path)? {
        Some(text) => parse_json::<SentenceBert>(&path, &text)?.max_seq_length,
        None => None,
    };
    Ok((
        config.hidden_size,
        max.unwrap_or(DEFAULT_MAX_TOKENS)
            .min(config.max_position_embeddings),
    ))
}

/// Without the `embed` feature: a model that cannot be loaded.
#[cfg(not(feature = "embed"))]
pub struct Model;

#[cfg(not(feature = "embed"))]
impl Model {
    /// Fails: this build cannot run models.
    pub fn load(_dir: &Path) -> Result<Model, ModelError> {
        Err(ModelError::NotBuiltIn)
    }

    /// Never called.
    pub fn embed(&self, _texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        Err(ModelError::NotBuiltIn)
    }
}

pub(super) fn read_optional(path: &Path) -> Result<Option<String>, ModelError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ModelError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

pub(super) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ModelError> {
    let text = fs::read_to_string(path).map_err(|source| ModelError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_json(path, &text)
}

pub(super) fn parse_json<T: for<'de> Deserialize<'de>>(
    path: &Path,
    text: &str,
) -> Result<T, ModelError> {
    serde_json::from_str(text).map_err(|source| ModelError::Json {
        path: path.to_path_buf(),
        source,
    })
}
