//! The preview of a result over its budget: each text block cut to its head
//! and tail, JSON (structured content, or text that parses as JSON) cut to
//! the first items of its long arrays, binary content left out. The space is
//! shared so that small parts stay whole and big ones share the rest.

use super::json_size;
use serde_json::{Map, Value, json};

/// A result cut to fit its budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    /// The preview, a `tools/call` result as JSON (its `isError` and `_meta`
    /// as they were).
    pub result: Value,
    /// What was cut, for the agent: "the middle of 1 text block; 3 arrays
    /// cut to their first 12 items (19,988 items left out)".
    pub summary: String,
}

/// A preview of `result` in at most `bytes` bytes of JSON, room for
/// `reserve` more (the note that tells how to read the rest) left over.
pub fn preview(result: &Value, bytes: usize, reserve: usize) -> Preview {
    let room = bytes.saturating_sub(reserve);
    let parts = Parts::of(result);
    // Estimates of escaping and JSON layout can overshoot: cut again, tighter.
    let mut scale = 1.0;
    loop {
        let (out, cuts) = parts.fit((room as f64 * scale) as usize);
        if json_size(&out) <= room || scale < 0.05 {
            return Preview {
                result: out,
                summary: cuts.summary(),
            };
        }
        scale *= 0.8;
    }
}

/// A part of the result that shares the room.
enum Piece {
    /// A text block's text (or an embedded resource's).
    Text(String),
    /// JSON: structured content, or a text block that parses as JSON
    /// (`pretty` when it was written over several lines).
    Json { value: Value, pretty: bool },
}

impl Piece {
    fn size(&self) -> usize {
        match self {
            Piece::Text(t) => json_size(t),
            Piece::Json { value, pretty } => {
                if *pretty {
                    json_size(&serde_json::to_string_pretty(value).unwrap_or_default())
                } else {
                    json_size(value)
                }
            }
        }
    }
}

/// Where each piece came from: a content block's text, an embedded
/// resource's text, or the structured content.
enum Slot {
    Block(usize),
    Resource(usize),
    Structured,
}

/// A result taken apart once, whatever room it is then fitted to: the
/// rest of it (binary content already replaced by notes), and each piece
/// with its slot and size.
struct Parts {
    rest: Value,
    pieces: Vec<(Slot, Piece, usize)>,
    binaries: usize,
}

impl Parts {
    fn of(result: &Value) -> Parts {
        let mut rest = result.clone();
        let mut pieces = Vec::new();
        let mut binaries = 0;
        // A text moved out (not copied), an empty one left in its place.
        let text_of = |v: &mut Value| {
            let taken = std::mem::replace(v, json!(""));
            match taken {
                Value::String(t) => t,
                _ => String::new(),
            }
        };
        if let Some(blocks) = rest.get_mut("content").and_then(Value::as_array_mut) {
            for (i, block) in blocks.iter_mut().enumerate() {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = text_of(&mut block["text"]);
                        pieces.push((Slot::Block(i), piece_of_text(text)));
                    }
                    Some("resource") if block["resource"].get("text").is_some() => {
                        let text = text_of(&mut block["resource"]["text"]);
                        pieces.push((Slot::Resource(i), Piece::Text(text)));
                    }
                    Some(kind @ ("image" | "audio" | "resource")) => {
                        *block = binary_note(kind, block);
                        binaries += 1;
                    }
                    _ => {}
                }
            }
        }
        if let Some(s) = rest.get_mut("structuredContent").filter(|s| !s.is_null()) {
            let value = s.take();
            pieces.push((
                Slot::Structured,
                Piece::Json {
                    value,
                    pretty: false,
                },
            ));
        }
        let pieces = pieces
            .into_iter()
            .map(|(slot, piece)| {
                let size = piece.size();
                (slot, piece, size)
            })
            .collect();
        Parts {
            rest,
            pieces,
            binaries,
        }
    }

    /// The result in about `room` bytes: small pieces whole, big ones cut.
    fn fit(&self, room: usize) -> (Value, Cuts) {
        let mut out = self.rest.clone();
        let mut cuts = Cuts {
            binaries: self.binaries,
            ..Cuts::default()
        };
        let fixed = json_size(&out);
        let sizes: Vec<usize> = self.pieces.iter().map(|(_, _, size)| *size).collect();
        let shares = share(&sizes, room.saturating_sub(fixed));
        for ((slot, piece, size), share) in self.pieces.iter().zip(shares) {
            let text_or_json = if *size <= share {
                match piece {
                    Piece::Text(t) => Value::String(t.clone()),
                    Piece::Json { value, pretty } => written(value.clone(), *pretty, slot),
                }
            } else {
                match piece {
                    Piece::Text(t) => Value::String(head_and_tail(t, share, &mut cuts)),
                    Piece::Json { value, pretty } => {
                        match trim_to(value, *pretty, share, &mut cuts) {
                            Some(v) => written(v, *pretty, slot),
                            None => {
                                // Even its skeleton is too big: cut its text.
                                let text = write(value, *pretty);
                                let text = head_and_tail(&text, share, &mut cuts);
                                match slot {
                                    Slot::Structured => {
                                        cuts.structured_dropped = true;
                                        Value::Null
                                    }
                                    _ => Value::String(text),
                                }
                            }
                        }
                    }
                }
            };
            match slot {
                Slot::Block(i) => out["content"][*i]["text"] = text_or_json,
                Slot::Resource(i) => out["content"][*i]["resource"]["text"] = text_or_json,
                Slot::Structured => match text_or_json {
                    Value::Null => {
                        out.as_object_mut().map(|o| o.remove("structuredContent"));
                    }
                    v => out["structuredContent"] = v,
                },
            }
        }
        (out, cuts)
    }
}

/// A text block's piece: JSON when it parses as an object or array.
fn piece_of_text(text: String) -> Piece {
    match super::parse_json(&text) {
        Some(value) => Piece::Json {
            value,
            pretty: text.trim().contains('\n'),
        },
        None => Piece::Text(text),
    }
}

/// The value to put back in its slot: structured content as JSON, a text
/// block's JSON as text written the way it was.
fn written(value: Value, pretty: bool, slot: &Slot) -> Value {
    match slot {
        Slot::Structured => value,
        _ => Value::String(write(&value, pretty)),
    }
}

fn write(value: &Value, pretty: bool) -> String {
    if pretty {
        serde_json::to_string_pretty(value).unwrap_or_default()
    } else {
        value.to_string()
    }
}

/// A text note in place of binary content.
fn binary_note(kind: &str, block: &Value) -> Value {
    let (mime, data) = super::binary_of(block).unwrap_or_default();
    let mime = mime.unwrap_or("binary");
    let bytes = data.len() / 4 * 3;
    json!({"type": "text", "text": format!("[{kind} {mime}, {}: left out of this preview]", size_words(bytes))})
}

/// Room shared out: a piece that fits its equal share stays whole, and
/// what it leaves goes to the bigger ones.
fn share(sizes: &[usize], room: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut shares = vec![0; sizes.len()];
    let mut left = room;
    for (n, &i) in order.iter().enumerate() {
        let equal = left / (sizes.len() - n);
        shares[i] = sizes[i].min(equal);
        left -= shares[i];
    }
    shares
}

/// What a preview cut.
#[derive(Debug, Default)]
struct Cuts {
    texts: usize,
    chars_cut: usize,
    arrays: usize,
    items_left: usize,
    first_items: Option<usize>,
    strings: usize,
    binaries: usize,
    structured_dropped: bool,
}

impl Cuts {
    fn summary(&self) -> String {
        let mut said = Vec::new();
        if self.texts > 0 {
            said.push(format!(
                "the middle of {} ({} characters)",
                plural(self.texts, "text"),
                thousands(self.chars_cut)
            ));
        }
        if self.arrays > 0 {
            said.push(format!(
                "{} cut to their first {} ({} items left out)",
                plural(self.arrays, "array"),
                plural(self.first_items.unwrap_or(0), "item"),
                thousands(self.items_left)
            ));
        }
        if self.strings > 0 {
            said.push(format!(
                "the end of {}",
                plural(self.strings, "long string")
            ));
        }
        if self.binaries > 0 {
            said.push(plural(self.binaries, "binary block"));
        }
        if self.structured_dropped {
            said.push("the structured content".into());
        }
        said.join("; ")
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{} {what}s", thousands(n))
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1536` as `1.5 KB`.
fn size_words(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / (1 << 10) as f64),
        b => format!("{b} bytes"),
    }
}

/// `text` in at most `room` bytes of JSON: its head and its tail (at line
/// ends when one is near), with the cut marked between them.
fn head_and_tail(text: &str, room: usize, cuts: &mut Cuts) -> String {
    // JSON escapes make text bigger than its bytes: scale by how much.
    let ratio = json_size(&text) as f64 / text.len().max(1) as f64;
    let marker_room = 80;
    let bytes = ((room.saturating_sub(marker_room)) as f64 / ratio) as usize;
    let head_end = floor_char(text, bytes * 2 / 3);
    let head_end = near_line_end(text, head_end, bytes / 6, false);
    let tail_start = floor_char(text, text.len().saturating_sub(bytes - bytes * 2 / 3));
    let tail_start = near_line_end(text, tail_start, bytes / 12, true).max(head_end);
    let cut = text[head_end..tail_start].chars().count();
    if cut == 0 {
        return text.to_string();
    }
    cuts.texts += 1;
    cuts.chars_cut += cut;
    let lines = text[head_end..tail_start].matches('\n').count();
    let lines = if lines > 0 {
        format!(", {} lines", thousands(lines))
    } else {
        String::new()
    };
    format!(
        "{}\n[… {} characters{lines} cut …]\n{}",
        &text[..head_end],
        thousands(cut),
        &text[tail_start..]
    )
}

fn floor_char(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A cut at `at` moved to a line's end within `within` bytes: back for a
/// head's end, on for a tail's start (just after the newline).
fn near_line_end(text: &str, at: usize, within: usize, forward: bool) -> usize {
    if forward {
        let end = floor_char(text, at + within);
        text[at..end].find('\n').map_or(at, |i| at + i + 1)
    } else {
        let start = floor_char(text, at.saturating_sub(within));
        text[start..at].rfind('\n').map_or(at, |i| start + i)
    }
}

/// `value` with its arrays cut to as many first items as fit `room` (and
/// very long strings cut); none when even no items at all do not fit.
fn trim_to(value: &Value, pretty: bool, room: usize, cuts: &mut Cuts) -> Option<Value> {
    let size = |v: &Value| {
        if pretty {
            json_size(&serde_json::to_string_pretty(v).unwrap_or_default())
        } else {
            json_size(v)
        }
    };
    let longest = longest_array(value);
    let fits = |k: usize, chars: usize| {
        let mut c = Cuts::default();
        let v = trim(value, k, chars, &mut c);
        (size(&v) <= room).then_some((v, c))
    };
    // The most items that fit, found by halving (size grows with them),
    // strings cut to a quarter of the room; then, if strings were cut, the
    // longest strings that still fit with those items.
    let chars = (room / 4).max(200);
    let (items, (mut v, mut c)) = most(0, longest, fits(0, chars)?, |k| fits(k, chars));
    if c.strings > 0 {
        (_, (v, c)) = most(chars, room, (v, c), |n| fits(items, n));
    }
    cuts.arrays += c.arrays;
    cuts.items_left += c.items_left;
    cuts.strings += c.strings;
    if c.arrays > 0 {
        cuts.first_items = Some(items);
    }
    Some(v)
}

/// The largest `n` from `lo` to `hi` that `fits`, found by halving (what
/// fits at `n` fits below it), with what it gave; `found` is what `lo` gave.
fn most<T>(
    mut lo: usize,
    mut hi: usize,
    mut found: T,
    fits: impl Fn(usize) -> Option<T>,
) -> (usize, T) {
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        match fits(mid) {
            Some(f) => {
                found = f;
                lo = mid;
            }
            None => hi = mid - 1,
        }
    }
    (lo, found)
}

fn longest_array(value: &Value) -> usize {
    match value {
        Value::Array(a) => a.iter().map(longest_array).max().unwrap_or(0).max(a.len()),
        Value::Object(o) => o.values().map(longest_array).max().unwrap_or(0),
        _ => 0,
    }
}

/// `value` with each array cut to its first `items` and each string to its
/// first `chars` characters.
fn trim(value: &Value, items: usize, chars: usize, cuts: &mut Cuts) -> Value {
    match value {
        Value::Array(a) => {
            if a.len() > items {
                cuts.arrays += 1;
                cuts.items_left += a.len() - items;
            }
            Value::Array(
                a.iter()
                    .take(items)
                    .map(|v| trim(v, items, chars, cuts))
                    .collect(),
            )
        }
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), trim(v, items, chars, cuts)))
                .collect::<Map<String, Value>>(),
        ),
        Value::String(s) if s.len() > chars => {
            let end = floor_char(s, chars);
            cuts.strings += 1;
            Value::String(format!("{}…", &s[..end]))
        }
        other => other.clone(),
    }
}
