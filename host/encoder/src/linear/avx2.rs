//! The kernel with AVX2, FMA and F16C: each input's 16 weights are widened
//! from f16 in two instructions and multiplied into up to 6 rows' sums.

use std::arch::x86_64::{
    __m128i, __m256, _mm_loadu_si128, _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
    _mm256_set1_ps, _mm256_storeu_ps,
};

use super::{Block, LANES};

/// Proof that this CPU has AVX2, FMA and F16C: only [`Cpu::detect`] makes one.
#[derive(Clone, Copy)]
pub(super) struct Cpu(());

impl Cpu {
    pub(super) fn detect() -> Option<Cpu> {
        use std::arch::is_x86_feature_detected as has;
        (has!("avx2") && has!("fma") && has!("f16c")).then_some(Cpu(()))
    }
}

/// Runs `block` on a CPU that has what the kernel uses.
pub(super) fn run(_: Cpu, mut block: Block) {
    block.check();
    // SAFETY: the CPU has the features `rows` is compiled for (`Cpu` proves
    // it), and `Block::check` proved that the reads `rows` makes through raw
    // pointers (rows × inputs of `x`, inputs × 16 of the panel, 16 of the
    // bias) lie inside the block's slices.
    unsafe {
        match block.rows {
            1 => rows::<1>(&mut block),
            2 => rows::<2>(&mut block),
            3 => rows::<3>(&mut block),
            4 => rows::<4>(&mut block),
            5 => rows::<5>(&mut block),
            _ => rows::<6>(&mut block),
        }
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows<const R: usize>(block: &mut Block) {
    let x = block.x.as_ptr();
    let panel = block.panel.as_ptr();
    // SAFETY (all pointer reads below): in bounds by `Block::check`.
    let bias = unsafe {
        [
            _mm256_loadu_ps(block.bias.as_ptr()),
            _mm256_loadu_ps(block.bias.as_ptr().add(8)),
        ]
    };
    let mut sums: [[__m256; 2]; R] = [bias; R];
    for i in 0..block.inputs {
        let (w0, w1) = unsafe {
            let at = panel.add(i * LANES) as *const __m128i;
            (
                _mm256_cvtph_ps(_mm_loadu_si128(at)),
                _mm256_cvtph_ps(_mm_loadu_si128(at.add(1))),
            )
        };
        for (r, sum) in sums.iter_mut().enumerate() {
            let v = _mm256_set1_ps(unsafe { *x.add(r * block.x_stride + i) });
            sum[0] = _mm256_fmadd_ps(v, w0, sum[0]);
            sum[1] = _mm256_fmadd_ps(v, w1, sum[1]);
        }
    }
    for (r, sum) in sums.iter().enumerate() {
        let mut lanes = [0f32; LANES];
        // SAFETY: `lanes` holds 16 f32.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), sum[0]);
            _mm256_storeu_ps(lanes.as_mut_ptr().add(8), sum[1]);
        }
        block.store(r, &lanes);
    }
}
