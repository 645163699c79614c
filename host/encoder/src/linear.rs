//! Linear layers, `y = x·Wᵀ + b`, with W kept in f16.
//!
//! The weights are packed at load into panels of 16 outputs: panel `p` holds,
//! for each input `i`, the 16 weights `W[16p + j][i]` side by side. A kernel
//! call multiplies up to [`ROWS`] rows of `x` by one panel, reading the panel
//! once in order and keeping the 16 sums of each row in registers.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod portable;

/// Outputs per panel.
const LANES: usize = 16;
/// Rows of `x` per kernel call: 6 rows × 16 outputs is 12 AVX registers of
/// sums, which leaves room for the panel's two and a row's broadcast.
const ROWS: usize = 6;
/// Rows multiplied by every panel before the next rows start, so that those
/// rows of `x` (48 × 1,536 f32 at most for MiniLM, 288 KiB) stay in the L2
/// cache while the panels stream past.
const CHUNK: usize = 48;

/// A linear layer, packed for the kernels.
pub(crate) struct Linear {
    inputs: usize,
    outputs: usize,
    /// f16 bits, panel-major; zero beyond `outputs` in the last panel.
    panels: Vec<u16>,
    /// Padded with zeros to whole panels.
    bias: Vec<f32>,
}

impl Linear {
    /// From `weight` stored as PyTorch does, `(outputs, inputs)` row-major;
    /// `None` when a weight does not fit f16.
    pub(crate) fn new(
        weight: &[f32],
        bias: &[f32],
        outputs: usize,
        inputs: usize,
    ) -> Option<Linear> {
        assert_eq!(weight.len(), outputs * inputs);
        assert_eq!(bias.len(), outputs);
        let count = outputs.div_ceil(LANES);
        let mut panels = vec![0u16; count * inputs * LANES];
        for o in 0..outputs {
            let (p, lane) = (o / LANES, o % LANES);
            let row = &weight[o * inputs..(o + 1) * inputs];
            for (i, &w) in row.iter().enumerate() {
                panels[(p * inputs + i) * LANES + lane] = to_f16(w)?;
            }
        }
        let mut padded = bias.to_vec();
        padded.resize(count * LANES, 0.0);
        Some(Linear {
            inputs,
            outputs,
            panels,
            bias: padded,
        })
    }

    /// `out = x·Wᵀ + b` for `rows` rows of `x` (row-major, `inputs` wide).
    pub(crate) fn apply(&self, x: &[f32], rows: usize, out: &mut Vec<f32>) {
        self.apply_with(Fast::detect(), x, rows, out);
    }

    fn apply_with(&self, fast: Option<Fast>, x: &[f32], rows: usize, out: &mut Vec<f32>) {
        assert_eq!(x.len(), rows * self.inputs);
        out.clear();
        out.resize(rows * self.outputs, 0.0);
        for c0 in (0..rows).step_by(CHUNK) {
            let c1 = rows.min(c0 + CHUNK);
            for (p, panel) in self.panels.chunks_exact(self.inputs * LANES).enumerate() {
                let col = p * LANES;
                let cols = LANES.min(self.outputs - col);
                for r0 in (c0..c1).step_by(ROWS) {
                    let block = Block {
                        x: &x[r0 * self.inputs..],
                        x_stride: self.inputs,
                        rows: ROWS.min(c1 - r0),
                        inputs: self.inputs,
                        panel,
                        bias: &self.bias[col..col + LANES],
                        out: &mut out[r0 * self.outputs + col..],
                        out_stride: self.outputs,
                        cols,
                    };
                    match fast {
                        #[cfg(target_arch = "x86_64")]
                        Some(Fast(cpu)) => avx2::run(cpu, block),
                        _ => portable::run(block),
                    }
                }
            }
        }
    }
}

/// The f16 bits of `w`, if it is finite in f16.
pub(crate) fn to_f16(w: f32) -> Option<u16> {
    let h = half::f16::from_f32(w);
    h.is_finite().then(|| h.to_bits())
}

/// Proof that the fast kernel can run here.
#[derive(Clone, Copy)]
struct Fast(#[cfg(target_arch = "x86_64")] avx2::Cpu);

impl Fast {
    fn detect() -> Option<Fast> {
        #[cfg(target_arch = "x86_64")]
        return avx2::Cpu::detect().map(Fast);
        #[cfg(not(target_arch = "x86_64"))]
        None
    }
}

/// One kernel call: `rows` rows of `x` times one panel, into `cols` outputs
/// of each row of `out`.
struct Block<'a> {
    x: &'a [f32],
    x_stride: usize,
    rows: usize,
    inputs: usize,
    panel: &'a [u16],
    bias: &'a [f32],
    out: &'a mut [f32],
    out_stride: usize,
    cols: usize,
}

impl Block<'_> {
    /// Every read and write a kernel makes lies inside its slices.
    fn check(&self) {
        assert!((1..=ROWS).contains(&self.rows));
        assert!(self.cols <= LANES);
        assert_eq!(self.panel.len(), self.inputs * LANES);
        assert_eq!(self.bias.len(), LANES);
        assert!(self.x.len() >= (self.rows - 1) * self.x_stride + self.inputs);
        assert!(self.out.len() >= (self.rows - 1) * self.out_stride + self.cols);
    }

    /// Writes each row's 16 sums, cut to the panel's real outputs.
    fn store(&mut self, row: usize, sums: &[f32; LANES]) {
        let at = row * self.out_stride;
        self.out[at..at + self.cols].copy_from_slice(&sums[..self.cols]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both kernels against a plain product, for shapes that leave partial
    /// panels, partial row blocks and partial chunks.
    #[test]
    fn kernels_match_a_plain_product() {
        for (rows, inputs, outputs) in [(1, 3, 1), (7, 33, 17), (50, 64, 40), (13, 384, 48)] {
            let weight: Vec<f32> = (0..outputs * inputs)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
                .collect();
            let bias: Vec<f32> = (0..outputs).map(|o| o as f32 / 8.0).collect();
            let x: Vec<f32> = (0..rows * inputs)
                .map(|i| ((i * 53 % 89) as f32 - 44.0) / 32.0)
                .collect();
            let linear = Linear::new(&weight, &bias, outputs, inputs).unwrap();
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            linear.apply_with(Fast::detect(), &x, rows, &mut fast);
            linear.apply_with(None, &x, rows, &mut slow);
            for r in 0..rows {
                for o in 0..outputs {
                    // The weights are exact in f16 here (multiples of 1/64).
                    let exact: f32 = bias[o]
                        + (0..inputs)
                            .map(|i| x[r * inputs + i] * weight[o * inputs + i])
                            .sum::<f32>();
                    let got = fast[r * outputs + o];
                    assert!(
                        (got - exact).abs() < 1e-3,
                        "{rows}x{inputs}x{outputs}: {got} vs {exact}"
                    );
                    assert!((slow[r * outputs + o] - exact).abs() < 1e-3);
                }
            }
        }
    }
}
