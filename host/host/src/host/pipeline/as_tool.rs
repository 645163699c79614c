//! Every result as the guards see it after the call, a `CallToolResult`,
//! and a guard's replacement put back into the result's own shape: a read
//! stays a read and a prompt a prompt, so that guards written for tools'
//! results (contract 0.1.x) read and redact every other result as well.
//!
//! - a tool's result: as the server sent it;
//! - a read (`resources/read`, a resource tool): each of its contents as an
//!   embedded resource (`{"type": "resource", "resource": …}`), its `_meta`
//!   as the result's;
//! - a prompt: each message's content as a block, in order (a text message
//!   as a text block), its description as `structuredContent.description`,
//!   its `_meta` as the result's;
//! - a server's JSON-RPC error: a tool error (`isError`) of its message.
//!
//! A task the server started is a handle, not a result: its result is seen
//! when it comes (see [`super::task_result`]).

use crate::host::RawResult;
use rmcp::model::{
    CallToolResult, ContentBlock, EmbeddedResource, GetPromptResult, PromptMessage,
    ReadResourceResult, ResourceContents, Role,
};
use serde_json::{Value, json};

/// `raw` as the guards see it, as JSON text of a `CallToolResult`; none for
/// what carries no content (a task's handle).
pub(super) fn seen(raw: &RawResult) -> Option<Result<String, serde_json::Error>> {
    let seen = match raw {
        // As it came: only a tool's result is already one.
        RawResult::Tool(r) => return Some(serde_json::to_string(r)),
        RawResult::Resource(r) => read_seen(r),
        RawResult::Prompt(p) => prompt_seen(p),
        RawResult::Rpc(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        RawResult::Task(_) => return None,
    };
    Some(serde_json::to_string(&seen))
}

/// A guard's `replaced` result in the shape of `raw`, a reading of `uri`
/// where it is one; or why it cannot be put back.
pub(super) fn back(
    raw: RawResult,
    replaced: CallToolResult,
    uri: &str,
) -> Result<RawResult, String> {
    match raw {
        RawResult::Tool(_) => Ok(RawResult::Tool(replaced)),
        RawResult::Resource(r) => read_back(r, replaced, uri).map(RawResult::Resource),
        RawResult::Prompt(p) => prompt_back(p, replaced).map(RawResult::Prompt),
        RawResult::Rpc(_) => Ok(RawResult::Rpc(text_of(&replaced.content))),
        RawResult::Task(t) => Ok(RawResult::Task(t)),
    }
}

fn read_seen(read: &ReadResourceResult) -> CallToolResult {
    let content = read
        .contents
        .iter()
        .map(|c| ContentBlock::Resource(EmbeddedResource::new(c.clone())))
        .collect();
    let mut seen = CallToolResult::success(content);
    seen.meta = read.meta.clone();
    seen
}

/// The contents of a guard's replacement of a read: embedded resources as
/// they are; text, images and audio as contents at the read's URI. A link
/// is no content, and an error is not a reading: either is refused.
fn read_back(
    mut read: ReadResourceResult,
    replaced: CallToolResult,
    uri: &str,
) -> Result<ReadResourceResult, String> {
    if replaced.is_error == Some(true) {
        return Err(format!(
            "a guard made the reading an error: {}",
            text_of(&replaced.content)
        ));
    }
    // The read's own URI, as its server gave it.
    let uri = read
        .contents
        .first()
        .and_then(uri_of)
        .unwrap_or(uri)
        .to_string();
    let blob = |data: String, mime: String| ResourceContents::BlobResourceContents {
        uri: uri.clone(),
        mime_type: Some(mime),
        blob: data,
        meta: None,
    };
    let mut contents = Vec::with_capacity(replaced.content.len());
    for block in replaced.content {
        contents.push(match block {
            ContentBlock::Resource(r) => r.resource,
            ContentBlock::Text(t) => ResourceContents::text(t.text, uri.clone()),
            ContentBlock::Image(i) => blob(i.data, i.mime_type),
            ContentBlock::Audio(a) => blob(a.data, a.mime_type),
            _ => {
                return Err(
                    "a guard's replacement of a reading holds a link, which a reading cannot carry"
                        .into(),
                );
            }
        });
    }
    read.contents = contents;
    read.meta = replaced.meta;
    Ok(read)
}

/// The URI of a reading's contents.
fn uri_of(contents: &ResourceContents) -> Option<&str> {
    match contents {
        ResourceContents::TextResourceContents { uri, .. }
        | ResourceContents::BlobResourceContents { uri, .. } => Some(uri),
        _ => None,
    }
}

fn prompt_seen(prompt: &GetPromptResult) -> CallToolResult {
    let content = prompt.messages.iter().map(|m| m.content.clone()).collect();
    let mut seen = CallToolResult::success(content);
    seen.structured_content = prompt
        .description
        .as_ref()
        .map(|d| json!({"description": d}));
    seen.meta = prompt.meta.clone();
    seen
}

/// A guard's replacement of a prompt: its blocks are the messages' contents,
/// each keeping the role of the message it stands for (a block past the
/// last message is the user's); its `structuredContent.description` the
/// description. An error is not a prompt: it is refused.
fn prompt_back(
    mut prompt: GetPromptResult,
    replaced: CallToolResult,
) -> Result<GetPromptResult, String> {
    if replaced.is_error == Some(true) {
        return Err(format!(
            "a guard made the prompt an error: {}",
            text_of(&replaced.content)
        ));
    }
    let roles: Vec<Role> = prompt.messages.iter().map(|m| m.role.clone()).collect();
    prompt.messages = replaced
        .content
        .into_iter()
        .enumerate()
        .map(|(i, content)| {
            PromptMessage::new(roles.get(i).cloned().unwrap_or(Role::User), content)
        })
        .collect();
    prompt.description = replaced
        .structured_content
        .as_ref()
        .and_then(|s| s.get("description"))
        .and_then(Value::as_str)
        .map(str::to_string);
    prompt.meta = replaced.meta;
    Ok(prompt)
}

/// The text blocks of `content`, a line each.
fn text_of(content: &[ContentBlock]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(seen: &str, secret: &str) -> CallToolResult {
        serde_json::from_str(&seen.replace(secret, "[REDACTED]")).unwrap()
    }

    #[test]
    fn a_reading_is_seen_as_embedded_resources_and_put_back_as_contents() {
        let read: ReadResourceResult = serde_json::from_value(json!({
            "contents": [
                {"uri": "notes://a", "mimeType": "text/plain", "text": "key SECRET"},
                {"uri": "notes://a#2", "blob": "AAAA", "mimeType": "image/png"}
            ],
            "_meta": {"m": "SECRET"}
        }))
        .unwrap();
        let raw = RawResult::Resource(read);
        let seen = seen(&raw).unwrap().unwrap();
        let as_value: Value = serde_json::from_str(&seen).unwrap();
        assert_eq!(as_value["content"][0]["type"], "resource");
        assert_eq!(as_value["content"][0]["resource"]["text"], "key SECRET");
        assert_eq!(as_value["content"][1]["resource"]["blob"], "AAAA");
        let back = super::back(raw, redacted(&seen, "SECRET"), "notes://a").unwrap();
        let RawResult::Resource(r) = back else {
            panic!("{back:?}")
        };
        let r = serde_json::to_value(r).unwrap();
        assert_eq!(r["contents"][0]["text"], "key [REDACTED]");
        assert_eq!(r["contents"][0]["uri"], "notes://a");
        assert_eq!(r["contents"][1]["blob"], "AAAA");
        assert_eq!(r["_meta"]["m"], "[REDACTED]");
    }

    #[test]
    fn a_replacement_in_text_becomes_contents_at_the_reads_uri() {
        let read: ReadResourceResult =
            serde_json::from_value(json!({"contents": [{"uri": "notes://a", "text": "x"}]}))
                .unwrap();
        let replaced = CallToolResult::success(vec![
            ContentBlock::text("replaced"),
            ContentBlock::image("AAAA", "image/png"),
        ]);
        let back = super::back(RawResult::Resource(read.clone()), replaced, "").unwrap();
        let RawResult::Resource(r) = back else {
            panic!("{back:?}")
        };
        let r = serde_json::to_value(r).unwrap();
        assert_eq!(
            r["contents"][0],
            json!({"uri": "notes://a", "mimeType": "text/plain", "text": "replaced"})
        );
        assert_eq!(
            r["contents"][1],
            json!({"uri": "notes://a", "mimeType": "image/png", "blob": "AAAA"})
        );
        // An empty reading takes the URI it was asked by.
        let empty: ReadResourceResult = serde_json::from_value(json!({"contents": []})).unwrap();
        let replaced = CallToolResult::success(vec![ContentBlock::text("t")]);
        let back = super::back(RawResult::Resource(empty), replaced, "notes://b").unwrap();
        assert!(format!("{back:?}").contains("notes://b"), "{back:?}");
        // A link, or an error, is not a reading.
        let link: CallToolResult = serde_json::from_value(
            json!({"content": [{"type": "resource_link", "uri": "x://y", "name": "y"}]}),
        )
        .unwrap();
        assert!(super::back(RawResult::Resource(read.clone()), link, "").is_err());
        let error = CallToolResult::error(vec![ContentBlock::text("no")]);
        let why = super::back(RawResult::Resource(read), error, "").unwrap_err();
        assert!(why.contains("no"), "{why}");
    }

    #[test]
    fn a_prompt_is_seen_as_its_messages_contents_and_keeps_its_roles() {
        let prompt: GetPromptResult = serde_json::from_value(json!({
            "description": "about SECRET",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hello SECRET"}},
                {"role": "assistant", "content": {"type": "text", "text": "fine"}}
            ]
        }))
        .unwrap();
        let raw = RawResult::Prompt(prompt);
        let seen = seen(&raw).unwrap().unwrap();
        let as_value: Value = serde_json::from_str(&seen).unwrap();
        assert_eq!(
            as_value["content"],
            json!([{"type": "text", "text": "hello SECRET"}, {"type": "text", "text": "fine"}])
        );
        assert_eq!(as_value["structuredContent"]["description"], "about SECRET");
        let back = super::back(raw.clone(), redacted(&seen, "SECRET"), "").unwrap();
        let RawResult::Prompt(p) = back else {
            panic!("{back:?}")
        };
        let p = serde_json::to_value(p).unwrap();
        assert_eq!(p["description"], "about [REDACTED]");
        assert_eq!(p["messages"][0]["content"]["text"], "hello [REDACTED]");
        assert_eq!(p["messages"][1]["role"], "assistant");
        // A replacement of other blocks: roles by position, the user's past the last.
        let replaced = CallToolResult::success(vec![
            ContentBlock::text("a"),
            ContentBlock::text("b"),
            ContentBlock::text("c"),
        ]);
        let RawResult::Prompt(p) = super::back(raw, replaced, "").unwrap() else {
            panic!()
        };
        let roles: Vec<Role> = p.messages.iter().map(|m| m.role.clone()).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
        assert_eq!(p.description, None, "the replacement has none");
    }

    #[test]
    fn a_servers_error_is_seen_as_a_tool_error_and_a_handle_not_at_all() {
        let raw = RawResult::Rpc("bad token SECRET".into());
        let seen = seen(&raw).unwrap().unwrap();
        let as_value: Value = serde_json::from_str(&seen).unwrap();
        assert_eq!(as_value["isError"], true);
        let back = super::back(raw, redacted(&seen, "SECRET"), "").unwrap();
        assert!(
            matches!(&back, RawResult::Rpc(m) if m == "bad token [REDACTED]"),
            "{back:?}"
        );
        let task: rmcp::model::CreateTaskResult = serde_json::from_value(json!({
            "resultType": "task", "taskId": "t1", "status": "working",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        assert!(super::seen(&RawResult::Task(task)).is_none());
    }
}
