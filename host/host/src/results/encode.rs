//! Structured results written compactly for an agent to read, in one of three
//! formats:
//!
//! - **JSON**: compact, keys in their original order.
//! - **TOON** ("Token-Oriented Object Notation", spec v4, with the spec's
//!   default options: comma delimiter, two spaces of indentation), through the
//!   `toon-format` crate. Objects are `key: value` lines, arrays of primitives
//!   one line, arrays of uniform objects a header and one row per object: a
//!   table says its field names once instead of once per row.
//! - **CSV** (RFC 4180, `\n` line ends, no line end after the last row), for
//!   tabular data only; see [`encode`] for what that is.

mod csv;
mod toon;

#[cfg(test)]
mod tests;

use crate::config::validate::kind;
use serde_json::Value;

pub use crate::config::results::Format;

/// A value asked for as CSV that is not tabular.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "csv needs an array of objects whose values are strings, numbers, booleans or null; found {found}"
)]
pub struct NotTabular {
    found: String,
}

impl NotTabular {
    /// What was found instead, and where (a jq path), e.g.
    /// `an array at .[3].tags`.
    pub fn found(&self) -> &str {
        &self.found
    }
}

/// `value` written in `format`.
///
/// - JSON: compact, as `serde_json::to_string` writes it.
/// - TOON: per the spec (v4; its v4.0 encode fixtures pass), comma
///   delimiter, indentation 2, no line end after the last line. Numbers are
///   written in plain decimal, never with an exponent (`1e21` is
///   `1000000000000000000000`). An empty object is the empty document.
/// - CSV: `value` must be an array of objects whose values are strings,
///   numbers, booleans or null, or an object whose only field is such an
///   array (a list wrapped as `{"items": [...]}`; the wrapper's key is not
///   written). The header is the union of the rows' keys in the order first
///   seen; a row without a key has an empty cell there. Null is an empty cell,
///   an empty string `""` (so the two stay apart), numbers as JSON writes
///   them, booleans `true`/`false`. A field containing a comma, a double
///   quote, CR or LF is quoted, its quotes doubled. An empty array, or rows
///   without any key, give the empty string. Anything else is [`NotTabular`].
pub fn encode(value: &Value, format: Format) -> Result<String, NotTabular> {
    match format {
        Format::Json => Ok(value.to_string()),
        Format::Toon => Ok(toon::encode(value)),
        Format::Csv => csv::encode(value),
    }
}
