//! A ranking guest for mcpw: BM25F over identifier-aware tokens. It fills only
//! the `ranking` role (world `ranker`), so naming and direct tools stay with the
//! default guest: the worked example of swapping one role.
//!
//! With the host's `embed` (granted to the ranking role by default) it fuses
//! BM25F with meaning by reciprocal rank fusion (`fusion`).
//!
//! `tokens`, `bm25f` and `fusion` are plain Rust with native tests; `glue`
//! fills the role of `mcpw-guest` with them.

pub mod bm25f;
pub mod fusion;
pub mod tokens;

pub mod glue;
