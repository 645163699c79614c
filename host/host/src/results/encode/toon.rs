//! TOON through `toon-format`, the TOON organisation's Rust implementation
//! (it passes the spec's encode fixtures, see the tests).

use serde_json::Value;
use toon_format::{Delimiter, EncodeOptions};

/// `value` as TOON with the spec's default options: comma delimiter, two
/// spaces of indentation.
pub(super) fn encode(value: &Value) -> String {
    // Set explicitly rather than taken from the crate's defaults, so that
    // output only changes when we change it.
    let options = EncodeOptions::new()
        .with_delimiter(Delimiter::Comma)
        .with_spaces(2);
    // With a non-zero indentation the crate fails only on values that do not
    // serialise to JSON, which a `Value` always does; compact JSON still
    // gives the agent the data should that ever change.
    toon_format::encode(value, &options).unwrap_or_else(|_| value.to_string())
}
