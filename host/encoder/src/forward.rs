//! The encoder: embeddings, the transformer layers and mean pooling.

use crate::EncoderError;
use crate::config::{Activation, Config};
use crate::linear::{Linear, to_f16};
use crate::math::{activate, add, dot, layer_norm, softmax};
use crate::weights::{Norm, Weights};

/// Below this many tokens a call runs on the caller's thread alone: a query
/// is done before a second thread would have started.
const PARALLEL_TOKENS: usize = 256;
/// Tokens run through the layers together (activations of 1,024 MiniLM
/// tokens are about 6 MiB at the widest layer).
const CHUNK_TOKENS: usize = 1024;

/// A loaded BERT encoder. Immutable, so it can be shared between threads.
pub struct Encoder {
    hidden: usize,
    heads: usize,
    eps: f32,
    act: Activation,
    vocab: usize,
    max_positions: usize,
    /// The word table in f16 bits: a third of the model's bytes, of which a
    /// text reads only its own rows.
    words: Vec<u16>,
    /// Position rows with the token-type-0 row already added (every text is
    /// one segment).
    positions: Vec<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
}

struct Layer {
    /// Query, key and value in one product: `3 × hidden` outputs.
    qkv: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

impl Encoder {
    /// Reads the weights `config` describes out of a safetensors buffer.
    pub fn load(config: &Config, safetensors: &[u8]) -> Result<Encoder, EncoderError> {
        let act = config.check()?;
        let w = Weights::parse(safetensors)?;
        let h = config.hidden_size;
        let words = w
            .get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?
            .into_iter()
            .map(to_f16)
            .collect::<Option<Vec<u16>>>()
            .ok_or_else(|| too_large("embeddings.word_embeddings.weight"))?;
        let mut positions = w.get(
            "embeddings.position_embeddings.weight",
            &[config.max_position_embeddings, h],
        )?;
        let types = w.get(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, h],
        )?;
        for row in positions.chunks_exact_mut(h) {
            add(row, &types[..h]);
        }
        let linear = |name: &str, outputs: usize, inputs: usize| -> Result<Linear, EncoderError> {
            Linear::new(
                &w.get(&format!("{name}.weight"), &[outputs, inputs])?,
                &w.get(&format!("{name}.bias"), &[outputs])?,
                outputs,
                inputs,
            )
            .ok_or_else(|| too_large(&format!("{name}.weight")))
        };
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let at = format!("encoder.layer.{i}");
                let (mut weight, mut bias) = (Vec::new(), Vec::new());
                for part in ["query", "key", "value"] {
                    let name = format!("{at}.attention.self.{part}");
                    weight.extend(w.get(&format!("{name}.weight"), &[h, h])?);
                    bias.extend(w.get(&format!("{name}.bias"), &[h])?);
                }
                Ok(Layer {
                    qkv: Linear::new(&weight, &bias, 3 * h, h)
                        .ok_or_else(|| too_large(&format!("{at}.attention.self")))?,
                    attn_out: linear(&format!("{at}.attention.output.dense"), h, h)?,
                    attn_norm: w.norm(&format!("{at}.attention.output.LayerNorm"), h)?,
                    up: linear(
                        &format!("{at}.intermediate.dense"),
                        config.intermediate_size,
                        h,
                    )?,
                    down: linear(&format!("{at}.output.dense"), h, config.intermediate_size)?,
                    out_norm: w.norm(&format!("{at}.output.LayerNorm"), h)?,
                })
            })
            .collect::<Result<Vec<_>, EncoderError>>()?;
        Ok(Encoder {
            hidden: h,
            heads: config.num_attention_heads,
            eps: config.layer_norm_eps as f32,
            act,
            vocab: config.vocab_size,
            max_positions: config.max_position_embeddings,
            words,
            positions,
            embed_norm: w.norm("embeddings.LayerNorm", h)?,
            layers,
        })
    }

    /// Width of the output vectors.
    pub fn dimension(&self) -> usize {
        self.hidden
    }

    /// The mean of each text's last hidden states, one vector per text in
    /// order (not normalised). An empty text gets a zero vector. Large calls
    /// are split over the machine's cores.
    pub fn encode(&self, texts: &[&[u32]]) -> Result<Vec<Vec<f32>>, EncoderError> {
        for ids in texts {
            if ids.len() > self.max_positions {
                return Err(EncoderError::Input(format!(
                    "{} tokens: at most {} fit the model",
                    ids.len(),
                    self.max_positions
                )));
            }
            if let Some(id) = ids.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(EncoderError::Input(format!(
                    "token id {id} is beyond the vocabulary ({})",
                    self.vocab
                )));
            }
        }
        let tokens: usize = texts.iter().map(|t| t.len()).sum();
        let threads = if tokens < PARALLEL_TOKENS {
            1
        } else {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(texts.len())
        };
        if threads <= 1 {
            return Ok(self.encode_on_this_thread(texts));
        }
        // Contiguous groups of about equal token counts, one per thread.
        let mut groups = Vec::with_capacity(threads);
        let (mut start, mut seen) = (0, 0);
        for (i, ids) in texts.iter().enumerate() {
            seen += ids.len();
            if groups.len() + 1 < threads && seen * threads >= tokens * (groups.len() + 1) {
                groups.push(&texts[start..=i]);
                start = i + 1;
            }
        }
        if start < texts.len() {
            groups.push(&texts[start..]);
        }
        Ok(std::thread::scope(|scope| {
            let running: Vec<_> = groups
                .into_iter()
                .map(|group| scope.spawn(move || self.encode_on_this_thread(group)))
                .collect();
            running
                .into_iter()
                .flat_map(|t| t.join().expect("an encoder thread panicked"))
                .collect()
        }))
    }

    fn encode_on_this_thread(&self, texts: &[&[u32]]) -> Vec<Vec<f32>> {
        let mut out = Vec::with_capacity(texts.len());
        let mut start = 0;
        while start < texts.len() {
            let mut end = start + 1;
            let mut tokens = texts[start].len();
            while end < texts.len() && tokens + texts[end].len() <= CHUNK_TOKENS {
                tokens += texts[end].len();
                end += 1;
            }
            out.extend(self.forward(&texts[start..end]));
            start = end;
        }
        out
    }

    /// Every text's rows through every layer together; attention per text.
    fn forward(&self, texts: &[&[u32]]) -> Vec<Vec<f32>> {
        let h = self.hidden;
        let lens: Vec<usize> = texts.iter().map(|t| t.len()).collect();
        let rows: usize = lens.iter().sum();
        let mut x = Vec::with_capacity(rows * h);
        for ids in texts {
            for (p, &id) in ids.iter().enumerate() {
                let word = &self.words[id as usize * h..(id as usize + 1) * h];
                let position = &self.positions[p * h..(p + 1) * h];
                x.extend(
                    word.iter()
                        .zip(position)
                        .map(|(&w, &p)| half::f16::from_bits(w).to_f32() + p),
                );
            }
        }
        layer_norm(&mut x, h, &self.embed_norm, self.eps);

        let (mut qkv, mut ctx, mut wide, mut next) =
            (Vec::new(), vec![0.0; rows * h], Vec::new(), Vec::new());
        for layer in &self.layers {
            layer.qkv.apply(&x, rows, &mut qkv);
            self.attention(&qkv, &lens, &mut ctx);
            layer.attn_out.apply(&ctx, rows, &mut next);
            add(&mut next, &x);
            layer_norm(&mut next, h, &layer.attn_norm, self.eps);
            std::mem::swap(&mut x, &mut next);

            layer.up.apply(&x, rows, &mut wide);
            activate(&mut wide, self.act);
            layer.down.apply(&wide, rows, &mut next);
            add(&mut next, &x);
            layer_norm(&mut next, h, &layer.out_norm, self.eps);
            std::mem::swap(&mut x, &mut next);
        }

        let mut start = 0;
        lens.iter()
            .map(|&len| {
                let mut mean = vec![0.0; h];
                for row in x[start * h..(start + len) * h].chunks_exact(h) {
                    add(&mut mean, row);
                }
                start += len;
                let scale = 1.0 / len.max(1) as f32;
                mean.iter_mut().for_each(|v| *v *= scale);
                mean
            })
            .collect()
    }

    /// Scaled dot-product attention of each text with itself, head by head.
    fn attention(&self, qkv: &[f32], lens: &[usize], ctx: &mut [f32]) {
        let h = self.hidden;
        let dh = h / self.heads;
        let scale = 1.0 / (dh as f32).sqrt();
        let row =
            |r: usize, part: usize, head: usize| &qkv[r * 3 * h + part * h + head * dh..][..dh];
        let mut scores = Vec::new();
        let mut start = 0;
        for &len in lens {
            for head in 0..self.heads {
                for i in start..start + len {
                    let q = row(i, 0, head);
                    scores.clear();
                    scores.extend((start..start + len).map(|j| dot(q, row(j, 1, head)) * scale));
                    softmax(&mut scores);
                    let out = &mut ctx[i * h + head * dh..][..dh];
                    out.fill(0.0);
                    for (j, &p) in (start..start + len).zip(&scores) {
                        for (o, v) in out.iter_mut().zip(row(j, 2, head)) {
                            *o += p * v;
                        }
                    }
                }
            }
            start += len;
        }
    }
}

/// A tensor with a weight beyond f16's range (±65,504).
fn too_large(name: &str) -> EncoderError {
    EncoderError::Unsupported(format!(
        "the tensor {name} holds a weight too large for f16, which this encoder keeps weights in"
    ))
}

// Shared behind an `Arc` by a multi-threaded server.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Encoder>();
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VOCAB: usize = 40;
    const HIDDEN: usize = 24;
    const POSITIONS: usize = 300;

    fn config() -> Config {
        serde_json::from_value(json!({
            "vocab_size": VOCAB, "hidden_size": HIDDEN, "num_hidden_layers": 2,
            "num_attention_heads": 3, "intermediate_size": 40,
            "max_position_embeddings": POSITIONS, "type_vocab_size": 2,
        }))
        .unwrap()
    }

    /// A safetensors file of every tensor `config()` needs, with small
    /// pseudo-random values; `skip` leaves one out.
    fn weights(skip: &str) -> Vec<u8> {
        let mut shapes: Vec<(String, Vec<usize>)> = vec![
            (
                "embeddings.word_embeddings.weight".into(),
                vec![VOCAB, HIDDEN],
            ),
            (
                "embeddings.position_embeddings.weight".into(),
                vec![POSITIONS, HIDDEN],
            ),
            (
                "embeddings.token_type_embeddings.weight".into(),
                vec![2, HIDDEN],
            ),
            ("embeddings.LayerNorm.weight".into(), vec![HIDDEN]),
            ("embeddings.LayerNorm.bias".into(), vec![HIDDEN]),
        ];
        for i in 0..2 {
            let at = format!("encoder.layer.{i}");
            for (name, out, inp) in [
                ("attention.self.query", HIDDEN, HIDDEN),
                ("attention.self.key", HIDDEN, HIDDEN),
                ("attention.self.value", HIDDEN, HIDDEN),
                ("attention.output.dense", HIDDEN, HIDDEN),
                ("intermediate.dense", 40, HIDDEN),
                ("output.dense", HIDDEN, 40),
            ] {
                shapes.push((format!("{at}.{name}.weight"), vec![out, inp]));
                shapes.push((format!("{at}.{name}.bias"), vec![out]));
            }
            for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
                shapes.push((format!("{at}.{name}.weight"), vec![HIDDEN]));
                shapes.push((format!("{at}.{name}.bias"), vec![HIDDEN]));
            }
        }
        let (mut header, mut data) = (serde_json::Map::new(), Vec::new());
        let mut seed = 7u64;
        for (name, shape) in shapes.into_iter().filter(|(n, _)| n != skip) {
            let count: usize = shape.iter().product();
            let start = data.len();
            for _ in 0..count {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.6;
                let v = if name.ends_with("LayerNorm.weight") {
                    1.0 + v
                } else {
                    v
                };
                data.extend(v.to_le_bytes());
            }
            header.insert(
                name,
                json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let header = serde_json::to_vec(&header).unwrap();
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend(header);
        file.extend(data);
        file
    }

    /// A text's vector is the same alone and in any batch: no padding, and
    /// the split into chunks and threads does not reach across texts.
    #[test]
    fn a_texts_vector_does_not_depend_on_its_batch() {
        let encoder = Encoder::load(&config(), &weights("")).unwrap();
        let texts: Vec<Vec<u32>> = (0..60)
            .map(|i| {
                (0..(i * 37 % 250 + 1))
                    .map(|t| ((t * 7 + i) % VOCAB) as u32)
                    .collect()
            })
            .collect();
        let refs: Vec<&[u32]> = texts.iter().map(Vec::as_slice).collect();
        assert!(refs.iter().map(|t| t.len()).sum::<usize>() > 3 * CHUNK_TOKENS);
        let together = encoder.encode(&refs).unwrap();
        assert_eq!(together.len(), texts.len());
        for (text, got) in refs.iter().zip(&together) {
            let alone = encoder.encode(&[text]).unwrap().remove(0);
            assert_eq!(alone.len(), HIDDEN);
            let far = alone
                .iter()
                .zip(got)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(far < 1e-5, "{far}");
        }
        assert_eq!(encoder.encode(&[&[]]).unwrap(), vec![vec![0.0; HIDDEN]]);
    }

    #[test]
    fn bad_weights_and_bad_ids_are_named() {
        let missing = "encoder.layer.1.output.dense.bias";
        let err = Encoder::load(&config(), &weights(missing)).err().unwrap();
        assert!(err.to_string().contains(missing), "{err}");
        let mut wide = config();
        wide.hidden_size = 30;
        let err = Encoder::load(&wide, &weights("")).err().unwrap();
        assert!(err.to_string().contains("[40, 30]"), "{err}");
        let mut odd = config();
        odd.hidden_act = "swish".into();
        assert!(Encoder::load(&odd, &weights("")).is_err());
        let mut empty = config();
        empty.intermediate_size = 0;
        let err = Encoder::load(&empty, &weights("")).err().unwrap();
        assert!(err.to_string().contains("intermediate_size"), "{err}");

        let encoder = Encoder::load(&config(), &weights("")).unwrap();
        let err = encoder.encode(&[&[1, VOCAB as u32]]).err().unwrap();
        assert!(err.to_string().contains("beyond the vocabulary"), "{err}");
        let long = vec![1u32; POSITIONS + 1];
        assert!(encoder.encode(&[&long]).is_err());
    }
}
