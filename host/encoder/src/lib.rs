//! A BERT encoder (the network of sentence-transformers models such as
//! `all-MiniLM-L6-v2`) on the CPU: token ids in, mean-pooled vectors out.
//!
//! Built for one short query at a time as much as for a catalog's texts:
//! - the weights of the linear layers are kept in f16, half the bytes of f32,
//!   so a small model's layers stay in the last-level cache between queries
//!   instead of streaming from memory; all arithmetic is f32;
//! - texts are never padded: the rows of every text in a batch go through
//!   each linear layer together, and attention runs per text;
//! - the matrix kernel uses AVX2, FMA and F16C when the CPU has them, and a
//!   portable loop otherwise.
//!
//! Tokenising, truncation and normalisation are the caller's.

mod config;
mod forward;
mod linear;
mod math;
mod weights;

pub use config::{Activation, Config};
pub use forward::Encoder;

/// Why weights could not be loaded or ids could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    /// The safetensors file cannot be parsed.
    #[error("not a safetensors file: {0}")]
    Format(String),
    /// A tensor the configuration needs is not in the file.
    #[error("the tensor {0} is missing")]
    Missing(String),
    /// A tensor has another shape than the configuration implies.
    #[error("the tensor {name} has shape {found:?}, expected {expected:?}")]
    Shape {
        /// The tensor's name in the file.
        name: String,
        /// What the configuration implies.
        expected: Vec<usize>,
        /// What the file holds.
        found: Vec<usize>,
    },
    /// A tensor is stored in a type other than f32, f16 or bf16.
    #[error("the tensor {name} is stored as {dtype}; only F32, F16 and BF16 are read")]
    Dtype {
        /// The tensor's name in the file.
        name: String,
        /// Its stored type.
        dtype: String,
    },
    /// The configuration describes a network this encoder does not run.
    #[error("{0}")]
    Unsupported(String),
    /// A text's ids cannot be encoded.
    #[error("{0}")]
    Input(String),
}
