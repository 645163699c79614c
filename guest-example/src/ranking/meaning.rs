//! Search by meaning: each tool's vector, made by the host's embedding model
//! from [`tool_text`], fused with the word scores. Both signals become
//! z-scores over the tools in scope, so neither's scale matters, and the
//! fused score is `(1 - w)·z(words) + w·z(meaning)`.

use super::Hit;
use crate::model::Tool;

/// The profile that ranks by words alone (the ranking without a model).
pub const WORDS: &str = "words";
/// The profile that ranks by meaning alone (cosine to the query).
pub const MEANING: &str = "meaning";
/// The weight of meaning in the default profile, chosen by 5-fold
/// cross-validation on the dev queries (see docs/src/guests.md, "Search by meaning").
pub const WEIGHT: f32 = 0.55;
/// Characters of a description embedded: the model reads 256 word pieces,
/// and a description's first sentences say what the tool is for.
const DESCRIPTION_CHARS: usize = 600;

/// The text a tool is embedded by: its server and name as words, then what
/// it does, e.g. `playwright browser take screenshot: Take a screenshot…`.
pub fn tool_text(tool: &Tool) -> String {
    let name = tool.name.replace(['_', '-', '.'], " ");
    let server = tool.server.replace(['_', '-'], " ");
    let description: String = tool.description.chars().take(DESCRIPTION_CHARS).collect();
    format!("{server} {name}: {description}")
}

/// The tools' vectors, one row per entry.
#[derive(Clone, Debug)]
pub struct Vectors {
    dimension: usize,
    rows: Vec<f32>,
}

impl Vectors {
    /// Rows of one length, one per entry (`None` when they are not).
    pub fn new(rows: Vec<Vec<f32>>, entries: usize) -> Option<Vectors> {
        let dimension = rows.first().map_or(0, Vec::len);
        if rows.len() != entries || dimension == 0 || rows.iter().any(|r| r.len() != dimension) {
            return None;
        }
        Some(Vectors {
            dimension,
            rows: rows.into_iter().flatten().collect(),
        })
    }

    /// The vectors' length.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Each tool's cosine to `query` (all vectors are unit length).
    pub fn cosines(&self, query: &[f32]) -> Vec<f32> {
        if query.len() != self.dimension {
            return vec![0.0; self.rows.len() / self.dimension.max(1)];
        }
        self.rows
            .chunks_exact(self.dimension)
            .map(|row| dot(row, query))
            .collect()
    }
}

/// a · b with eight running sums: independent additions instead of one
/// chain, and a loop the compiler turns into SIMD where the target has it.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
fn dot(a: &[f32], b: &[f32]) -> f32 {
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

/// Mean and standard deviation of `values` at the indices in scope.
fn moments(values: &[f32], scope: &[usize]) -> (f32, f32) {
    let n = scope.len().max(1) as f32;
    let mean = scope.iter().map(|&i| values[i]).sum::<f32>() / n;
    let var = scope
        .iter()
        .map(|&i| (values[i] - mean).powi(2))
        .sum::<f32>()
        / n;
    (mean, var.sqrt())
}

/// The z-scores of `values` in scope; all zero when they do not vary.
fn z(values: &[f32], scope: &[usize]) -> Vec<f32> {
    let (mean, sd) = moments(values, scope);
    values
        .iter()
        .map(|v| if sd > 1e-9 { (v - mean) / sd } else { 0.0 })
        .collect()
}

/// The two signals of every tool in scope, and their fusion.
pub struct Fused {
    /// Word score per tool (zero where no word matched).
    pub words: Vec<f32>,
    /// Cosine to the query per tool.
    pub meaning: Vec<f32>,
    /// `(1 - w)·z(words) + w·z(meaning)` per tool in scope.
    pub hits: Vec<Hit>,
}

/// Fuses the word hits with the cosines, with `weight` for meaning, over the
/// tools `in_scope`.
pub fn fuse(
    words: &[Hit],
    cosines: Vec<f32>,
    weight: f32,
    in_scope: &dyn Fn(usize) -> bool,
) -> Fused {
    let n = cosines.len();
    let mut lexical = vec![0f32; n];
    for h in words {
        if let Some(slot) = lexical.get_mut(h.index as usize) {
            *slot = h.score;
        }
    }
    let scope: Vec<usize> = (0..n).filter(|&i| in_scope(i)).collect();
    let (zw, zm) = (z(&lexical, &scope), z(&cosines, &scope));
    let hits = scope
        .iter()
        .map(|&i| Hit {
            index: i as u32,
            score: (1.0 - weight) * zw[i] + weight * zm[i],
        })
        .collect();
    Fused {
        words: lexical,
        meaning: cosines,
        hits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_text_reads_names_as_words() {
        let t = Tool::new(
            "chrome-devtools",
            "list_network_requests",
            "List all requests.",
        );
        assert_eq!(
            tool_text(&t),
            "chrome devtools list network requests: List all requests."
        );
    }

    #[test]
    fn ragged_or_missing_rows_are_no_vectors() {
        assert!(Vectors::new(vec![vec![1.0, 0.0], vec![0.0]], 2).is_none());
        assert!(Vectors::new(vec![vec![1.0, 0.0]], 2).is_none());
        assert!(Vectors::new(vec![], 0).is_none());
        let v = Vectors::new(vec![vec![1.0, 0.0], vec![0.6, 0.8]], 2).unwrap();
        assert_eq!(v.cosines(&[0.0, 1.0]), vec![0.0, 0.8]);
        // A query of another length matches nothing rather than panicking.
        assert_eq!(v.cosines(&[1.0]), vec![0.0, 0.0]);
    }

    #[test]
    fn meaning_finds_what_words_miss_and_words_still_count() {
        let cos = vec![0.1, 0.9, 0.2, 0.15];
        // No word matched: meaning alone orders the tools.
        let f = fuse(&[], cos.clone(), 0.3, &|_| true);
        let best = f
            .hits
            .iter()
            .max_by(|a, b| a.score.total_cmp(&b.score))
            .unwrap();
        assert_eq!(best.index, 1);
        // A strong word match outweighs a better cosine at w = 0.3.
        let words = [Hit {
            index: 2,
            score: 10.0,
        }];
        let f = fuse(&words, cos, 0.3, &|_| true);
        let best = f
            .hits
            .iter()
            .max_by(|a, b| a.score.total_cmp(&b.score))
            .unwrap();
        assert_eq!(best.index, 2);
        assert_eq!(f.words[2], 10.0);
    }

    #[test]
    fn scope_limits_the_hits_and_the_statistics() {
        let f = fuse(&[], vec![0.1, 0.9, 0.5], 0.5, &|i| i != 1);
        assert_eq!(
            f.hits.iter().map(|h| h.index).collect::<Vec<_>>(),
            vec![0, 2]
        );
        assert!(f.hits[1].score > f.hits[0].score);
    }
}
