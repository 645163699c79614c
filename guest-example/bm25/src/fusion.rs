//! Words and meaning together by reciprocal rank fusion: each tool scores
//! `1/(k + rank)` in each ranking it appears in, so neither signal's scale
//! matters. (The default guest fuses z-scores instead; both are a few lines
//! over the vectors the host's `embed` gives.)

/// The rank offset: large enough that the first places of one ranking do
/// not drown the other.
const K: f32 = 60.0;
/// Places of the meaning ranking that take part.
const DEPTH: usize = 100;

/// Each tool's cosine to `query`, from rows of `dimension` (unit vectors).
pub fn cosines(rows: &[f32], dimension: usize, query: &[f32]) -> Vec<f32> {
    if dimension == 0 || query.len() != dimension {
        return Vec::new();
    }
    rows.chunks_exact(dimension)
        .map(|row| row.iter().zip(query).map(|(a, b)| a * b).sum())
        .collect()
}

/// Fuses the word ranking (best first) with the cosines, over the tools
/// `in_scope`; best first.
pub fn fuse(
    words: &[(u32, f32)],
    cosines: &[f32],
    in_scope: &dyn Fn(usize) -> bool,
) -> Vec<(u32, f32)> {
    let mut by_meaning: Vec<u32> = (0..cosines.len() as u32)
        .filter(|&i| in_scope(i as usize))
        .collect();
    by_meaning.sort_by(|&a, &b| {
        cosines[b as usize]
            .total_cmp(&cosines[a as usize])
            .then(a.cmp(&b))
    });
    let mut score = std::collections::HashMap::<u32, f32>::new();
    for (rank, &(doc, _)) in words.iter().enumerate() {
        *score.entry(doc).or_default() += 1.0 / (K + rank as f32 + 1.0);
    }
    for (rank, &doc) in by_meaning.iter().take(DEPTH).enumerate() {
        *score.entry(doc).or_default() += 1.0 / (K + rank as f32 + 1.0);
    }
    let mut fused: Vec<(u32, f32)> = score.into_iter().collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_high_in_both_rankings_wins() {
        let rows = [1.0, 0.0, 0.0, 1.0, 0.6, 0.8];
        let cos = cosines(&rows, 2, &[0.6, 0.8]);
        assert!((cos[2] - 1.0).abs() < 1e-6 && cos[1] > cos[0]);
        // Words put 0 first and 2 second; meaning puts 2 first and 0 last.
        let fused = fuse(&[(0, 9.0), (2, 5.0)], &cos, &|_| true);
        assert_eq!(fused[0].0, 2);
        // Out of scope, a tool is in neither ranking's meaning part.
        let fused = fuse(&[], &cos, &|i| i != 2);
        assert_eq!(fused.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 0]);
    }
}
