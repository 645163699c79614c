//! A ranking guest for mcpw: BM25F over identifier-aware tokens. It fills only
//! the `ranking` role (world `ranker`), so naming and direct tools stay with the
//! default guest: the worked example of swapping one role.
//!
//! `tokens` and `bm25f` are plain Rust with native tests; `glue` fills the
//! role of `mcpw-guest` with them.

pub mod bm25f;
pub mod tokens;

pub mod glue;
