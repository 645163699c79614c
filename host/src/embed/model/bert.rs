//! Sentence embeddings with a sentence-transformers BERT model (e.g.
//! `all-MiniLM-L6-v2`), computed on the CPU in f32 with candle.
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
use std::path::Path;

use super::{DEFAULT_MAX_TOKENS, ModelError, parse_json, read_json, read_optional};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// Texts run through the network together. Each batch is padded to its own
/// longest text, and texts are sorted by length first, so padding stays small.
const BATCH_SIZE: usize = 32;

/// A loaded embedding model. Immutable after loading, so one instance can be
/// shared between threads (`Arc<Model>`).
pub struct Model {
    bert: BertModel,
    tokenizer: Tokenizer,
    dimension: usize,
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

        // The pipeline decides pooling and normalisation; without modules.json
        // assume the usual Transformer -> mean Pooling -> Normalize.
        let modules_path = dir.join("modules.json");
        let (normalize, pooling_dir) = match read_optional(&modules_path)? {
            None => (true, dir.join("1_Pooling")),
            Some(text) => {
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
                (normalize, pooling_dir)
            }
        };

        let pooling_path = pooling_dir.join("config.json");
        if let Some(text) = read_optional(&pooling_path)? {
            let pooling: PoolingConfig = parse_json(&pooling_path, &text)?;
            let mean_only = pooling.pooling_mode_mean_tokens
                && !pooling.pooling_mode_cls_token
                && !pooling.pooling_mode_max_tokens
                && !pooling.pooling_mode_mean_sqrt_len_tokens;
            if !mean_only {
                return Err(ModelError::Unsupported {
                    path: pooling_path,
                    message: "only mean pooling (pooling_mode_mean_tokens alone) is supported"
                        .into(),
                });
            }
            if let Some(dim) = pooling.word_embedding_dimension
                && dim != config.hidden_size
            {
                return Err(ModelError::Unsupported {
                    path: pooling_path,
                    message: format!(
                        "word_embedding_dimension {dim} differs from hidden_size {} in config.json",
                        config.hidden_size
                    ),
                });
            }
        }

        // Position embeddings cap the length whatever the config says.
        let st_path = dir.join("sentence_bert_config.json");
        let max_tokens = match read_optional(&st_path)? {
            Some(text) => parse_json::<SentenceBertConfig>(&st_path, &text)?.max_seq_length,
            None => None,
        }
        .unwrap_or(DEFAULT_MAX_TOKENS)
        .min(config.max_position_embeddings);

        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_error = |message: String| ModelError::Tokenizer {
            path: tokenizer_path.clone(),
            message,
        };
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path).map_err(|e| {
            // Tell a missing file apart from a malformed one.
            if tokenizer_path.exists() {
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

        // Read into memory rather than mmap: no unsafe, and the buffer is
        // freed once the tensors are copied out.
        let weights_path = dir.join("model.safetensors");
        let bytes = fs::read(&weights_path).map_err(|source| ModelError::Read {
            path: weights_path.clone(),
            source,
        })?;
        let weights_error = |source: candle_core::Error| ModelError::Weights {
            path: weights_path.clone(),
            message: source.to_string(),
        };
        let mut tensors =
            candle_core::safetensors::load_buffer(&bytes, &Device::Cpu).map_err(weights_error)?;
        drop(bytes);
        for (name, tensor) in tensors.iter_mut() {
            *tensor = tensor.to_dtype(DType::F32).map_err(weights_error)?;
            // The linear layers' weights; embedding tables are looked up, not multiplied.
            if tensor.rank() == 2 && name.ends_with(".weight") && !name.contains("embeddings") {
                *tensor = transposed_storage(tensor).map_err(weights_error)?;
            }
        }
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
        let bert = BertModel::load(vb, &config).map_err(weights_error)?;

        Ok(Model {
            bert,
            tokenizer,
            dimension: config.hidden_size,
            max_tokens,
            normalize,
        })
    }

    /// Length of each embedding vector (384 for all-MiniLM-L6-v2).
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Word pieces per text, [CLS] and [SEP] included; the rest is cut off.
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

        // Batch texts of similar length together to waste little on padding.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].len()));

        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH_SIZE) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| encodings[i].as_slice()).collect();
            for (&i, vector) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, ModelError> {
        let rows = batch.len();
        let width = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        // Pad id 0; padded positions are masked out of attention and pooling,
        // so their value does not matter.
        let mut ids = vec![0u32; rows * width];
        let mut mask = vec![0f32; rows * width];
        for (row, tokens) in batch.iter().enumerate() {
            ids[row * width..row * width + tokens.len()].copy_from_slice(tokens);
            mask[row * width..row * width + tokens.len()].fill(1.0);
        }
        let device = Device::Cpu;
        let ids = Tensor::from_vec(ids, (rows, width), &device)?;
        let mask = Tensor::from_vec(mask, (rows, width), &device)?;
        let type_ids = ids.zeros_like()?;

        let hidden = self.bert.forward(&ids, &type_ids, Some(&mask))?; // (rows, width, dim)

        // Mean over real tokens: sum(hidden * mask) / max(count, 1e-9).
        let summed = hidden.broadcast_mul(&mask.unsqueeze(2)?)?.sum(1)?;
        let counts = mask.sum_keepdim(1)?.clamp(1e-9f32, f32::MAX)?;
        let mut pooled = summed.broadcast_div(&counts)?;
        if self.normalize {
            // Same as torch.nn.functional.normalize: x / max(|x|, 1e-12).
            let norms = pooled
                .sqr()?
                .sum_keepdim(1)?
                .sqrt()?
                .clamp(1e-12f32, f32::MAX)?;
            pooled = pooled.broadcast_div(&norms)?;
        }
        Ok(pooled.to_vec2::<f32>()?)
    }
}

/// The same matrix, stored transposed. A linear layer multiplies by
/// `weight.t()`: stored as read, (out, in), that product gathers the weight
/// column by column on every call; stored transposed, `weight.t()` is a
/// plain row-major (in, out) matrix, which the matrix kernels read in order.
fn transposed_storage(weight: &Tensor) -> candle_core::Result<Tensor> {
    weight.t()?.contiguous()?.t()
}

impl From<candle_core::Error> for ModelError {
    fn from(e: candle_core::Error) -> Self {
        ModelError::Inference(e.to_string())
    }
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

    /// Needs a real model: set EMBED_MODEL_DIR to its folder.
    #[test]
    fn embeds_unit_vectors_in_order() {
        let Some(dir) = std::env::var_os("EMBED_MODEL_DIR") else {
            eprintln!("EMBED_MODEL_DIR not set; skipped");
            return;
        };
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
