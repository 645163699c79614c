//! The part of a BERT `config.json` the forward pass needs.

use serde::Deserialize;

use crate::EncoderError;

/// A BERT configuration, as Hugging Face's `config.json` spells it.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    /// Rows of the word-embedding table.
    pub vocab_size: usize,
    /// Width of every token's vector.
    pub hidden_size: usize,
    /// Transformer layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer; divides `hidden_size`.
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// The feed-forward activation's name.
    #[serde(default = "default_act")]
    pub hidden_act: String,
    /// Rows of the position-embedding table: the longest input.
    pub max_position_embeddings: usize,
    /// Rows of the token-type table.
    #[serde(default = "default_types")]
    pub type_vocab_size: usize,
    /// Layer normalisation's epsilon.
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    /// Only `absolute` is run.
    #[serde(default)]
    pub position_embedding_type: Option<String>,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_types() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}

/// The feed-forward activations this encoder runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `gelu`: the exact GELU, with erf.
    Gelu,
    /// `gelu_new`, `gelu_pytorch_tanh`: the tanh approximation.
    GeluTanh,
    /// `relu`.
    Relu,
}

impl Config {
    /// The activation `hidden_act` names, and checks that the shape is one
    /// this encoder runs.
    pub fn check(&self) -> Result<Activation, EncoderError> {
        if let Some(kind) = &self.position_embedding_type
            && kind != "absolute"
        {
            return Err(EncoderError::Unsupported(format!(
                "position_embedding_type {kind} is not supported (only absolute)"
            )));
        }
        for (field, value) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ] {
            if value == 0 {
                return Err(EncoderError::Unsupported(format!("{field} is 0")));
            }
        }
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            return Err(EncoderError::Unsupported(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            )));
        }
        match self.hidden_act.as_str() {
            "gelu" => Ok(Activation::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Activation::GeluTanh),
            "relu" => Ok(Activation::Relu),
            other => Err(EncoderError::Unsupported(format!(
                "hidden_act {other} is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)"
            ))),
        }
    }
}
