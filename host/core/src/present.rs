//! How MCP results, schemas and statuses are shown to agents and people.

use crate::catalog::JsonObject;
use serde::Serialize;
use serde_json::Value;

/// One block of content for an agent.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl Content {
    /// A text block.
    pub fn text(t: impl Into<String>) -> Content {
        Content::Text { text: t.into() }
    }
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// MCP content blocks → agent content: text and images as they are; embedded
/// resources, resource links and audio as text that says what they are.
pub fn map_content(blocks: &[Value]) -> Vec<Content> {
    blocks
        .iter()
        .map(|b| match s(b, "type") {
            "text" => Content::text(s(b, "text")),
            "image" => Content::Image {
                data: s(b, "data").to_string(),
                mime_type: s(b, "mimeType").to_string(),
            },
            "audio" => Content::text(format!("[Audio content: {}]", s(b, "mimeType"))),
            "resource" => {
                let r = b.get("resource").cloned().unwrap_or(Value::Null);
                match r.get("text").and_then(Value::as_str) {
                    Some(text) => Content::text(format!("[Resource: {}]\n{text}", s(&r, "uri"))),
                    None => Content::text(format!(
                        "[Resource: {}] ({}, binary)",
                        s(&r, "uri"),
                        s(&r, "mimeType")
                    )),
                }
            }
            "resource_link" => Content::text(format!(
                "[Resource Link: {}]\nURI: {}",
                s(b, "name"),
                s(b, "uri")
            )),
            other => Content::text(format!("[{other} content]")),
        })
        .collect()
}

/// `resources/read` contents → agent content.
pub fn map_resource_contents(contents: &[Value]) -> Vec<Content> {
    contents
        .iter()
        .map(|c| match c.get("text").and_then(Value::as_str) {
            Some(text) => Content::text(text),
            None => {
                let mime = s(c, "mimeType");
                let blob = s(c, "blob");
                if mime.starts_with("image/") {
                    Content::Image {
                        data: blob.to_string(),
                        mime_type: mime.to_string(),
                    }
                } else {
                    Content::text(format!(
                        "[Binary resource: {} ({mime}, {} bytes base64)]",
                        s(c, "uri"),
                        blob.len()
                    ))
                }
            }
        })
        .collect()
}

fn type_of(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let list: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        return format!("enum: {}", list.join(", "));
    }
    if let Some(c) = schema.get("const") {
        return format!("const: {c}");
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => match schema.get("items").map(type_of) {
            Some(item) if !item.is_empty() && !item.starts_with("enum") => {
                format!("array of {item}")
            }
            _ => "array".into(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => ["anyOf", "oneOf"]
            .iter()
            .find_map(|k| schema.get(*k).and_then(Value::as_array))
            .map(|alts| {
                alts.iter()
                    .map(type_of)
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .unwrap_or_default(),
    }
}

/// The parameters of an input schema, one per line:
/// `name (type) *required* - description [default: x]`.
pub fn format_schema(schema: &JsonObject, indent: &str) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return format!("{indent}(no parameters)");
    };
    if props.is_empty() {
        return format!("{indent}(no parameters)");
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(name, p)| {
            let mut line = format!("{indent}{name}");
            let ty = type_of(p);
            if !ty.is_empty() {
                line.push_str(&format!(" ({ty})"));
            }
            if required.contains(&name.as_str()) {
                line.push_str(" *required*");
            }
            if let Some(d) = p
                .get("description")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
            {
                line.push_str(&format!(" - {}", d.trim()));
            }
            if let Some(default) = p.get("default") {
                line.push_str(&format!(" [default: {default}]"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An error text with the expected parameters appended, so an agent can fix its call.
pub fn error_with_parameters(message: &str, schema: Option<&JsonObject>) -> String {
    match schema {
        Some(schema)
            if schema
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty()) =>
        {
            format!(
                "{message}\n\nExpected parameters:\n{}",
                format_schema(schema, "  ")
            )
        }
        _ => message.to_string(),
    }
}

/// `- name - description` with the description cut to about `max` characters.
pub fn bullet(name: &str, description: &str, max: usize) -> String {
    let d = truncate_at_word(description, max);
    if d.is_empty() {
        format!("- {name}")
    } else {
        format!("- {name} - {d}")
    }
}

/// A tool described for an agent or a person: name, server, resource URI,
/// description, and its parameters one per line.
pub fn describe(entry: &crate::catalog::Entry) -> String {
    let t = &entry.tool;
    let mut text = format!("{}\nServer: {}\n", entry.shown_name(), t.server);
    if let Some(uri) = &t.resource_uri {
        text.push_str(&format!("Type: Resource (reads from {uri})\n"));
    }
    let desc = if t.description.is_empty() {
        "(no description)"
    } else {
        t.description.trim()
    };
    text.push_str(&format!("\n{desc}\n"));
    if t.kind == crate::catalog::ToolKind::Resource {
        text.push_str("\nNo parameters required (resource tool).");
    } else if t
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
    {
        text.push_str(&format!(
            "\nParameters:\n{}",
            format_schema(t.input_schema.object(), "  ")
        ));
    } else {
        text.push_str("\nNo parameters defined.");
    }
    text
}

/// Cuts `text` to about `max` characters at a word boundary, adding `…`.
pub fn truncate_at_word(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= max {
        return line.to_string();
    }
    let cut: String = line.chars().take(max).collect();
    let at = cut.rfind(' ').filter(|&i| i > max / 2).unwrap_or(cut.len());
    format!("{}…", &cut[..at])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_lines_follow_the_documented_format() {
        let schema = json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The URL to navigate to"},
                "timeout": {"type": "number", "description": "Navigation timeout in ms", "default": 30000},
                "format": {"type": "string", "enum": ["png", "jpeg", "webp"], "default": "png"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "id": {"anyOf": [{"type": "string"}, {"type": "number"}]}
            },
            "required": ["url"]
        });
        assert_eq!(
            format_schema(schema.as_object().expect("an object"), "  "),
            "  url (string) *required* - The URL to navigate to\n  timeout (number) - Navigation timeout in ms [default: 30000]\n  format (enum: \"png\", \"jpeg\", \"webp\") [default: \"png\"]\n  tags (array of string)\n  id (string | number)"
        );
        assert_eq!(
            format_schema(
                json!({"type": "object"}).as_object().expect("an object"),
                ""
            ),
            "(no parameters)"
        );
    }

    #[test]
    fn content_types_map_as_documented() {
        let blocks = vec![
            json!({"type": "text", "text": "hi"}),
            json!({"type": "image", "data": "AAA", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "BBB", "mimeType": "audio/wav"}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "body"}}),
            json!({"type": "resource_link", "uri": "file:///b", "name": "b"}),
        ];
        assert_eq!(
            map_content(&blocks),
            vec![
                Content::text("hi"),
                Content::Image {
                    data: "AAA".into(),
                    mime_type: "image/png".into()
                },
                Content::text("[Audio content: audio/wav]"),
                Content::text("[Resource: file:///a]\nbody"),
                Content::text("[Resource Link: b]\nURI: file:///b"),
            ]
        );
    }

    #[test]
    fn errors_get_the_expected_parameters() {
        let schema = json!({"properties": {"q": {"type": "string"}}, "required": ["q"]});
        assert_eq!(
            error_with_parameters("Error: bad", schema.as_object()),
            "Error: bad\n\nExpected parameters:\n  q (string) *required*"
        );
        assert_eq!(error_with_parameters("Error: bad", None), "Error: bad");
    }
}
