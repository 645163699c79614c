//! The config file's change for an added server: its entry inserted as text
//! into `mcpServers` (comments, order and spacing of the rest untouched),
//! the file replaced atomically, and a receipt kept so that `remove` takes
//! out exactly what was inserted: the file comes back byte for byte.

use crate::state_file::{Access, replace_at, write_json};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Why the file could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// Reading or writing.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not an object with an `mcpServers` object mcpw can find.
    #[error("{0}: expected a JSON object (with an `mcpServers` object, or none yet)")]
    Shape(PathBuf),
    /// Nothing mcpw added goes by that name.
    #[error(
        "mcpw added no server named \"{0}\" (only what `mcpw add` added can be removed this way)"
    )]
    NotAdded(String),
    /// The inserted text is no longer in the file.
    #[error("{path}: the entry of \"{name}\" was edited since mcpw added it; remove it by hand")]
    Edited {
        /// The file.
        path: PathBuf,
        /// The server.
        name: String,
    },
}

/// What `add` did to a file, kept to undo it.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Receipt {
    /// The server's name.
    pub name: String,
    /// The file changed.
    pub file: PathBuf,
    /// The text inserted.
    pub inserted: String,
    /// Where, in bytes.
    pub at: usize,
    /// Whether the file was created by the change.
    pub created: bool,
    /// The file's sha256 after the change.
    pub after: String,
    /// Vault keys of its secrets.
    pub vault_keys: Vec<String>,
}

/// Where receipts are kept.
fn receipts_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("mcpw").join("added")
}

fn receipt_path(state_dir: &Path, name: &str) -> PathBuf {
    receipts_dir(state_dir).join(format!("{name}.json"))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EditError + '_ {
    move |source| EditError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Inserts `name`: `entry` into `file`'s `mcpServers` and keeps the receipt.
pub fn insert(
    file: &Path,
    name: &str,
    entry: &Value,
    vault_keys: Vec<String>,
    state_dir: &Path,
) -> Result<Receipt, EditError> {
    let before = match std::fs::read_to_string(file) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(file)(e)),
    };
    let (at, inserted) = match &before {
        None => (
            0,
            format!(
                "{{\n  \"mcpServers\": {{\n{}\n  }}\n}}\n",
                member(name, entry, 4)
            ),
        ),
        Some(text) => placement(text, name, entry).ok_or_else(|| EditError::Shape(file.into()))?,
    };
    let mut after = before.clone().unwrap_or_default();
    after.insert_str(at, &inserted);
    replace_at(file, Access::Default, |w| w.write_all(after.as_bytes())).map_err(io(file))?;
    let receipt = Receipt {
        name: name.into(),
        file: file.into(),
        inserted,
        at,
        created: before.is_none(),
        after: digest(after.as_bytes()),
        vault_keys,
    };
    let path = receipt_path(state_dir, name);
    write_json(&path, Access::Private, &receipt).map_err(io(&path))?;
    Ok(receipt)
}

/// `"name": entry`, indented by `indent` spaces.
fn member(name: &str, entry: &Value, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let body = serde_json::to_string_pretty(entry).unwrap_or_default();
    let body = body.replace('\n', &format!("\n{pad}"));
    format!("{pad}{}: {body}", Value::String(name.into()))
}

/// Where to insert, and what: right after `mcpServers`'s `{`, or a new
/// `mcpServers` right after the top-level `{`. Read with its comments
/// blanked out ([`crate::config::jsonc::strip`], which keeps every
/// character's place), so that the scan sees only JSON.
fn placement(text: &str, name: &str, entry: &Value) -> Option<(usize, String)> {
    let clean = crate::config::jsonc::strip(text);
    let top = scan::first_brace(&clean, 0)?;
    let (open, inserted) = match scan::member_object(&clean, top, "mcpServers") {
        Some(open) => {
            let empty = scan::next_token(&clean, open + 1).is_some_and(|(_, c)| c == '}');
            let comma = if empty { "" } else { "," };
            (open, format!("\n{}{comma}", member(name, entry, 4)))
        }
        None => {
            let empty = scan::next_token(&clean, top + 1).is_some_and(|(_, c)| c == '}');
            let comma = if empty { "" } else { "," };
            let servers = format!(
                "\n  \"mcpServers\": {{\n{}\n  }}{comma}",
                member(name, entry, 4)
            );
            (top, servers)
        }
    };
    // The same character of the text as written (a comment's blanked
    // characters may have been wider).
    let nth = clean[..=open].chars().count();
    let at = text.char_indices().nth(nth).map_or(text.len(), |(i, _)| i);
    Some((at, inserted))
}

/// Undoes `add` of `name`: the inserted text taken out (at its place when
/// the file is as `add` left it, else wherever it is, once), the file
/// deleted if `add` created it and nothing else came in. Returns the receipt.
pub fn remove(name: &str, state_dir: &Path) -> Result<Receipt, EditError> {
    let path = receipt_path(state_dir, name);
    let receipt: Receipt = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| EditError::NotAdded(name.into()))?;
    let file = &receipt.file;
    let text = std::fs::read_to_string(file).map_err(io(file))?;
    let unchanged = digest(text.as_bytes()) == receipt.after;
    let at = if unchanged {
        receipt.at
    } else {
        let found: Vec<usize> = text
            .match_indices(&receipt.inserted)
            .map(|(i, _)| i)
            .collect();
        match found.as_slice() {
            [one] => *one,
            _ => {
                return Err(EditError::Edited {
                    path: file.clone(),
                    name: name.into(),
                });
            }
        }
    };
    if unchanged && receipt.created {
        std::fs::remove_file(file).map_err(io(file))?;
    } else {
        let mut restored = text;
        restored.replace_range(at..at + receipt.inserted.len(), "");
        replace_at(file, Access::Default, |w| w.write_all(restored.as_bytes()))
            .map_err(io(file))?;
    }
    let _ = std::fs::remove_file(&path);
    Ok(receipt)
}

/// A scanner of JSON (comments blanked out already) that finds braces
/// outside strings.
mod scan {
    /// The next significant character at or after `from`: its byte offset
    /// and itself.
    pub(crate) fn next_token(text: &str, from: usize) -> Option<(usize, char)> {
        let i = from + text.get(from..)?.find(|c: char| !c.is_whitespace())?;
        Some((i, text[i..].chars().next()?))
    }

    pub(crate) fn first_brace(text: &str, from: usize) -> Option<usize> {
        next_token(text, from)
            .filter(|(_, c)| *c == '{')
            .map(|(i, _)| i)
    }

    /// The end (exclusive) of the string starting at `at` (a `"`).
    fn string_end(text: &str, at: usize) -> Option<usize> {
        let bytes = text.as_bytes();
        let mut i = at + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    }

    /// The end (exclusive) of the value starting at `at`.
    fn value_end(text: &str, at: usize) -> Option<usize> {
        let (i, c) = next_token(text, at)?;
        match c {
            '"' => string_end(text, i),
            '{' | '[' => {
                let mut depth = 0usize;
                let mut j = i;
                loop {
                    let (k, c) = next_token(text, j)?;
                    match c {
                        '"' => j = string_end(text, k)?,
                        '{' | '[' => (depth, j) = (depth + 1, k + 1),
                        '}' | ']' => {
                            depth -= 1;
                            j = k + 1;
                            if depth == 0 {
                                return Some(j);
                            }
                        }
                        _ => j = k + 1,
                    }
                }
            }
            _ => {
                let rest = &text[i..];
                let len = rest
                    .find(|c: char| c == ',' || c == '}' || c == ']' || c.is_whitespace())
                    .unwrap_or(rest.len());
                Some(i + len)
            }
        }
    }

    /// The offset of the `{` of member `key`'s object value in the object
    /// opened at `open`, if it has one.
    pub(crate) fn member_object(text: &str, open: usize, key: &str) -> Option<usize> {
        let mut i = open + 1;
        loop {
            let (k, c) = next_token(text, i)?;
            match c {
                '}' => return None,
                ',' => i = k + 1,
                '"' => {
                    let end = string_end(text, k)?;
                    let name: String = serde_json::from_str(&text[k..end]).ok()?;
                    let (colon, c) = next_token(text, end)?;
                    if c != ':' {
                        return None;
                    }
                    if name == key {
                        return first_brace(text, colon + 1);
                    }
                    i = value_end(text, colon + 1)?;
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(original: Option<&str>) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        if let Some(t) = original {
            std::fs::write(&file, t).unwrap();
        }
        let state = dir.path().join("state");
        let entry = json!({"command": "npx", "args": ["-y", "p@1.0.0"]});
        insert(&file, "new", &entry, vec![], &state).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = crate::config::parse_json(&text, &file).unwrap();
        assert_eq!(parsed["mcpServers"]["new"], entry, "{text}");
        if let Some(t) = original {
            let was = crate::config::parse_json(t, &file).unwrap();
            for (k, v) in was["mcpServers"].as_object().into_iter().flatten() {
                assert_eq!(&parsed["mcpServers"][k], v, "{text}");
            }
        }
        remove("new", &state).unwrap();
        match original {
            Some(t) => assert_eq!(std::fs::read_to_string(&file).unwrap(), t),
            None => assert!(!file.exists()),
        }
        assert!(matches!(remove("new", &state), Err(EditError::NotAdded(_))));
    }

    #[test]
    fn added_then_removed_leaves_the_file_byte_for_byte() {
        round_trip(None);
        round_trip(Some("{}\n"));
        round_trip(Some("{\n  // mine\n  \"mcpServers\": {}\n}\n"));
        round_trip(Some(
            "{ \"settings\": {\"a\": \"}{\"}, /* c { */ \"mcpServers\": { \"x\": {\"command\": \"y\", \"args\": [\"{\"]} } }",
        ));
        round_trip(Some("{\"settings\": {\"toolPrefix\": \"short\"}}"));
        // A comment wider in bytes than the blanks that stand for it.
        round_trip(Some("{ /* café ☕ */ \"mcpServers\": { /* é */ } }"));
    }

    #[test]
    fn an_entry_moved_by_an_edit_is_still_taken_out_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(&file, "{\"mcpServers\": {\"a\": {\"command\": \"a\"}}}").unwrap();
        let state = dir.path().join("state");
        insert(
            &file,
            "new",
            &json!({"url": "https://x/mcp"}),
            vec![],
            &state,
        )
        .unwrap();
        let edited = format!(
            "// added a comment\n{}",
            std::fs::read_to_string(&file).unwrap()
        );
        std::fs::write(&file, &edited).unwrap();
        remove("new", &state).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "// added a comment\n{\"mcpServers\": {\"a\": {\"command\": \"a\"}}}"
        );
    }
}
