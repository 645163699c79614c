//! What a mode of the `mcp` tool answers: its text, its `details` (sent as
//! `structuredContent`), whether it is an error, and any content beside.

use crate::present::Content;
use serde_json::Value;

pub(super) struct Reply {
    pub(super) text: String,
    pub(super) details: Value,
    pub(super) is_error: bool,
    pub(super) content: Vec<Content>,
}

impl Reply {
    pub(super) fn ok(text: String, details: Value) -> Reply {
        Reply {
            text,
            details,
            is_error: false,
            content: Vec::new(),
        }
    }

    pub(super) fn error(text: String, details: Value) -> Reply {
        Reply {
            text,
            details,
            is_error: true,
            content: Vec::new(),
        }
    }
}
