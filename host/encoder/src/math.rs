//! The element-wise and per-row steps between the linear layers.

use crate::config::Activation;
use crate::weights::Norm;

/// Normalises each `width`-wide row of `x` in place: `(x - mean) / sqrt(var + eps)`,
/// then scaled and shifted.
pub(crate) fn layer_norm(x: &mut [f32], width: usize, norm: &Norm, eps: f32) {
    for row in x.chunks_exact_mut(width) {
        let mean = sum(row) / width as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, s), b) in row.iter_mut().zip(&norm.scale).zip(&norm.shift) {
            *v = (*v - mean) * inv * s + b;
        }
    }
}

/// `x += y`, element by element.
pub(crate) fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// The feed-forward activation, in place.
pub(crate) fn activate(x: &mut [f32], act: Activation) {
    match act {
        Activation::Gelu => x
            .iter_mut()
            .for_each(|v| *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2))),
        Activation::GeluTanh => x.iter_mut().for_each(|v| {
            let u = 0.797_884_6 * (*v + 0.044_715 * *v * *v * *v);
            *v = 0.5 * *v * (1.0 + u.tanh());
        }),
        Activation::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
    }
}

/// The error function in f32, to within a few units in the last place: a
/// rational function of x² on [-4, 4], where erf reaches ±1 in f32. No
/// exponential, so a row of it vectorises.
fn erf(x: f32) -> f32 {
    const P: [f32; 7] = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.9546e-3,
        -1.609_603_3e-2,
    ];
    const Q: [f32; 5] = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329_2e-3,
        -1.426_474e-2,
    ];
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = P.iter().fold(0.0, |acc, c| acc * x2 + c) * x;
    let q = Q.iter().fold(0.0, |acc, c| acc * x2 + c);
    p / q
}

/// Σ x, with eight running sums so that the loop vectorises.
pub(crate) fn sum(x: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += v;
        }
    }
    lanes.iter().sum::<f32>() + rest.iter().sum::<f32>()
}

/// a · b, with eight running sums so that the loop vectorises.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let rest: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for ((l, p), q) in lanes.iter_mut().zip(x).zip(y) {
            *l += p * q;
        }
    }
    lanes.iter().sum::<f32>() + rest
}

/// Softmax in place.
pub(crate) fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        total += *v;
    }
    let inv = 1.0 / total;
    x.iter_mut().for_each(|v| *v *= inv);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf by its Taylor series in f64: exact to ~1e-11 on [-4, 4].
    fn erf_series(x: f64) -> f64 {
        let (mut term, mut total) = (x, x);
        for n in 1..200 {
            term *= -x * x / n as f64;
            total += term / (2 * n + 1) as f64;
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_is_within_a_few_ulps() {
        let mut worst = 0f64;
        for i in -5000..=5000 {
            let x = i as f64 / 1000.0;
            let want = if x.abs() > 4.0 {
                x.signum()
            } else {
                erf_series(x)
            };
            worst = worst.max((erf(x as f32) as f64 - want).abs());
        }
        assert!(worst < 5e-7, "worst error {worst}");
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_order() {
        let mut x = [1.0, 3.0, 2.0, -100.0];
        softmax(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(x[1] > x[2] && x[2] > x[0] && x[3] < 1e-40);
    }
}
