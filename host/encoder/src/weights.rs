//! Tensors read out of a safetensors buffer by name, as f32, whatever float
//! type they are stored in.

use safetensors::{Dtype, SafeTensors};

use crate::EncoderError;

/// The tensors of one file, and the prefix its names carry (`bert.` when the
/// file was saved from a model with heads).
pub(crate) struct Weights<'a> {
    file: SafeTensors<'a>,
    prefix: &'static str,
}

impl<'a> Weights<'a> {
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Weights<'a>, EncoderError> {
        let file =
            SafeTensors::deserialize(bytes).map_err(|e| EncoderError::Format(e.to_string()))?;
        let probe = "embeddings.word_embeddings.weight";
        let prefix = ["", "bert."]
            .into_iter()
            .find(|p| file.tensor(&format!("{p}{probe}")).is_ok())
            .ok_or_else(|| EncoderError::Missing(probe.into()))?;
        Ok(Weights { file, prefix })
    }

    /// The tensor `name` (without prefix), which must have `shape`.
    pub(crate) fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EncoderError> {
        let full = format!("{}{name}", self.prefix);
        let view = self
            .file
            .tensor(&full)
            .map_err(|_| EncoderError::Missing(full.clone()))?;
        if view.shape() != shape {
            return Err(EncoderError::Shape {
                name: full,
                expected: shape.to_vec(),
                found: view.shape().to_vec(),
            });
        }
        let data = view.data();
        Ok(match view.dtype() {
            Dtype::F32 => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => data
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => {
                return Err(EncoderError::Dtype {
                    name: full,
                    dtype: format!("{other:?}"),
                });
            }
        })
    }

    /// A layer norm's scale and shift, under either name BERT checkpoints use.
    pub(crate) fn norm(&self, name: &str, width: usize) -> Result<Norm, EncoderError> {
        let scale = self.get(&format!("{name}.weight"), &[width]);
        let (scale, shift) = match scale {
            Ok(scale) => (scale, self.get(&format!("{name}.bias"), &[width])?),
            Err(EncoderError::Missing(_)) => (
                self.get(&format!("{name}.gamma"), &[width])?,
                self.get(&format!("{name}.beta"), &[width])?,
            ),
            Err(e) => return Err(e),
        };
        Ok(Norm { scale, shift })
    }
}

/// A layer normalisation's parameters.
pub(crate) struct Norm {
    pub(crate) scale: Vec<f32>,
    pub(crate) shift: Vec<f32>,
}
