//! The kernel in plain Rust, for CPUs without AVX2, FMA and F16C.

use super::{Block, LANES, ROWS};

pub(super) fn run(mut block: Block) {
    block.check();
    let mut sums = [[0f32; LANES]; ROWS];
    for row in sums.iter_mut().take(block.rows) {
        row.copy_from_slice(block.bias);
    }
    let mut w = [0f32; LANES];
    for i in 0..block.inputs {
        for (lane, bits) in w.iter_mut().zip(&block.panel[i * LANES..(i + 1) * LANES]) {
            *lane = half::f16::from_bits(*bits).to_f32();
        }
        for (r, row) in sums.iter_mut().take(block.rows).enumerate() {
            let v = block.x[r * block.x_stride + i];
            for (s, w) in row.iter_mut().zip(&w) {
                *s += v * w;
            }
        }
    }
    for (r, row) in sums.iter().take(block.rows).enumerate() {
        block.store(r, row);
    }
}
