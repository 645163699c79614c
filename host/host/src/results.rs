//! Big results: a result over its budget reaches the agent as a preview that
//! keeps its shape (the head and tail of long text, the first items of long
//! arrays, binary content by reference), while the whole is kept for the
//! session (see [`crate::kept`]) and read on by range or jq projection.
//!
//! Sizes are counted as the client receives them, in bytes of JSON, and
//! turned into tokens at four to a token, as a model reads JSON and prose.

mod cut;
pub mod encode;
mod files;
mod range;

pub use cut::{Preview, preview, thousands};
pub use files::ResultFiles;
pub use range::{Range, read_range};

use crate::kept::{Blob, Part, Whole};
use serde_json::Value;

/// `settings.resultBudget` when not set: tokens a result may take.
pub const DEFAULT_BUDGET: usize = 10_000;

/// The most the results folder of a local session holds.
pub const FILES_CAP: u64 = 1 << 30;

/// Characters to a token, as the budget counts them.
pub const CHARS_PER_TOKEN: usize = 4;

/// The size of `value` written as compact JSON, in bytes, without writing
/// it anywhere.
pub fn json_size(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Tokens of a size in bytes, as the budget counts them.
pub fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(CHARS_PER_TOKEN)
}

/// Whether a result (a `tools/call` result as JSON) is over `budget`
/// tokens; `0` is no budget.
pub fn over_budget(result: &impl serde::Serialize, budget: usize) -> bool {
    budget != 0 && json_size(result) > budget * CHARS_PER_TOKEN
}

/// `text` as JSON, when it is an object or an array.
pub fn parse_json(text: &str) -> Option<Value> {
    looks_like_json(text)
        .then(|| serde_json::from_str(text).ok())
        .flatten()
}

/// Whether `text` is a JSON object or array, found without building it.
pub fn is_json(text: &str) -> bool {
    looks_like_json(text) && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

fn looks_like_json(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('{') || t.starts_with('[')
}

/// A content block's binary data (an image, audio, or an embedded
/// resource's blob, where it has no text): its MIME type, when given, and
/// its base64.
pub fn binary_of(block: &Value) -> Option<(Option<&str>, &str)> {
    let (holder, data) = match block.get("type").and_then(Value::as_str)? {
        "image" | "audio" => (block, block.get("data")),
        "resource" => {
            let r = block.get("resource")?;
            if r.get("text").is_some() {
                return None;
            }
            (r, Some(r.get("blob")?))
        }
        _ => return None,
    };
    let mime = holder.get("mimeType").and_then(Value::as_str);
    Some((mime, data.and_then(Value::as_str).unwrap_or_default()))
}

/// The parts of a `tools/call` result (as JSON), to keep whole.
pub fn parts(result: &Value) -> Vec<Part> {
    let mut parts = Vec::new();
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some((mime, base64)) = binary_of(block) {
            parts.push(Part::Binary(Blob {
                mime_type: mime.unwrap_or("application/octet-stream").into(),
                base64: base64.into(),
            }));
            continue;
        }
        let text = |k: &str| block.get(k).and_then(Value::as_str);
        match text("type") {
            Some("text") => parts.push(Part::Text(text("text").unwrap_or("").into())),
            Some("resource") => {
                let r = &block["resource"];
                let field = |k: &str| r.get(k).and_then(Value::as_str);
                if let Some(t) = field("text") {
                    parts.push(Part::Resource {
                        uri: field("uri").unwrap_or("").into(),
                        mime_type: field("mimeType").map(str::to_string),
                        text: t.into(),
                    });
                }
            }
            _ => {}
        }
    }
    if let Some(s) = result.get("structuredContent").filter(|s| !s.is_null()) {
        parts.push(Part::Structured(s.to_string().into()));
    }
    parts
}

/// Keeps `result` whole on `shelf`, from `from` (`server/tool`); its URI,
/// or none when the shelf has no room for it.
pub fn keep(shelf: &crate::kept::Shelf, result: &Value, from: String) -> Option<String> {
    shelf.keep_whole(Whole::new(parts(result), from))
}

/// The contents `resources/read` gives for a kept whole result at `uri`:
/// its content blocks, and its structured content only when it has no text
/// (a server's text mostly says the same, and the two could double a read).
pub fn contents(uri: &str, whole: &Whole) -> Vec<Value> {
    let texts = whole.parts.iter().any(|p| matches!(p, Part::Text(_)));
    whole
        .parts
        .iter()
        .filter(|p| !(texts && matches!(p, Part::Structured(_))))
        .map(|p| match p {
            Part::Text(t) => {
                serde_json::json!({"uri": uri, "mimeType": "text/plain", "text": &**t})
            }
            Part::Structured(t) => {
                serde_json::json!({"uri": uri, "mimeType": "application/json", "text": &**t})
            }
            Part::Binary(b) => {
                serde_json::json!({"uri": uri, "mimeType": b.mime_type, "blob": &*b.base64})
            }
            Part::Resource {
                uri: own,
                mime_type,
                text,
            } => {
                let mut c = serde_json::json!({"uri": own, "text": &**text});
                if let Some(m) = mime_type {
                    c["mimeType"] = serde_json::json!(m);
                }
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
