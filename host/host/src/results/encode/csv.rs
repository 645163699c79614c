//! CSV (RFC 4180) for tabular values: rows of strings, numbers, booleans and
//! nulls. What is accepted is documented on [`super::encode`].

use super::{NotTabular, kind};
use serde_json::{Map, Value};
use std::collections::HashSet;

type Row = Map<String, Value>;

/// `value` as CSV, or what in it is not tabular.
pub(super) fn encode(value: &Value) -> Result<String, NotTabular> {
    let (items, path) = items(value)?;
    let rows = items
        .iter()
        .enumerate()
        .map(|(i, item)| row(item, &format!("{path}[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;

    let mut seen = HashSet::new();
    let header: Vec<&str> = rows
        .iter()
        .flat_map(|row| row.keys())
        .map(String::as_str)
        .filter(|key| seen.insert(*key))
        .collect();
    // No column to write, and a record of no fields would be a blank line.
    if header.is_empty() {
        return Ok(String::new());
    }

    let mut out = String::new();
    for (i, key) in header.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_text(&mut out, key);
    }
    for row in rows {
        out.push('\n');
        for (i, key) in header.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match row.get(*key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => push_text(&mut out, s),
                Some(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
                Some(Value::Number(n)) => out.push_str(&n.to_string()),
                // `row` let no other value through.
                Some(_) => {}
            }
        }
    }
    Ok(out)
}

/// The rows of `value`, with their path for errors (jq style).
fn items(value: &Value) -> Result<(&[Value], String), NotTabular> {
    match value {
        Value::Array(items) => Ok((items, ".".into())),
        Value::Object(object) if object.len() == 1 => {
            let (key, inner) = object.iter().next().expect("one field");
            let path = field_path("", key);
            match inner {
                Value::Array(items) => Ok((items, path)),
                other => Err(not_tabular(other, &path)),
            }
        }
        Value::Object(object) => Err(NotTabular {
            found: format!(
                "an object with {} fields (an object is taken only when its one field is the array)",
                object.len()
            ),
        }),
        other => Err(NotTabular {
            found: kind(other).into(),
        }),
    }
}

/// `item` as a row: an object whose values are all scalars.
fn row<'a>(item: &'a Value, path: &str) -> Result<&'a Row, NotTabular> {
    let Value::Object(row) = item else {
        return Err(not_tabular(item, path));
    };
    match row
        .iter()
        .find(|(_, v)| matches!(v, Value::Array(_) | Value::Object(_)))
    {
        Some((key, v)) => Err(not_tabular(v, &field_path(path, key))),
        None => Ok(row),
    }
}

fn not_tabular(value: &Value, path: &str) -> NotTabular {
    NotTabular {
        found: format!("{} at {path}", kind(value)),
    }
}

/// `path` followed by field `key`, as jq writes it: `.name`, or `."a key"`
/// for a key that is not an identifier.
fn field_path(path: &str, key: &str) -> String {
    let plain = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}.{}", Value::from(key))
    }
}

/// A string field, quoted when it holds a delimiter, a quote or a line end,
/// and when empty, so that it differs from a null's empty cell.
fn push_text(out: &mut String, s: &str) {
    if !s.is_empty() && !s.contains([',', '"', '\r', '\n']) {
        out.push_str(s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
}
