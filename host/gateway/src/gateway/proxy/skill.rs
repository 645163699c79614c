//! `mcp({skill})`: a skill (the MCP Skills extension) for a client that does
//! not speak the extension. The answer is the skill's `SKILL.md`, read
//! through mcpw (so checked against its digest), tagged with its server,
//! with the list of its files (`mcp({skill, file})` reads one) and its
//! frontmatter checked against the listing. mcpw is then the extension's
//! host for that skill: `allowed-tools` grants nothing here, and says so.

use super::reply::Reply;
use crate::gateway::{ClientScope, Session};
use crate::host::skills::OfferedSkill;
use rmcp::model::{ResourceContents, SkillResources};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::json;

/// Answers `mcp({skill: name, file})`: `name` is `<server>/<skill>` or the
/// skill's URI; `file` a path inside the skill (its `SKILL.md` when none).
pub(super) async fn skill(
    gw: &Session,
    client: &ClientScope,
    name: &str,
    file: Option<&str>,
    ctx: &RequestContext<RoleServer>,
) -> Reply {
    let snapshot = match gw.shared.host.snapshot().await {
        Ok(s) => s,
        Err(e) => return failed(name, &e.to_string()),
    };
    let sees = |s: &str| client.allows(s);
    let Some(s) = snapshot.skills().find(name, &sees) else {
        let known: Vec<String> = snapshot
            .skills()
            .list(&sees)
            .take(20)
            .map(OfferedSkill::agent_name)
            .collect();
        return Reply::error(
            format!("Skill \"{name}\" not found. Skills: {}", known.join(", ")),
            json!({"mode": "skill", "error": "skill_not_found", "skill": name}),
        );
    };
    let root = s.root().to_string();
    let uri = s.file_uri(file);
    let text = match gw.resource_read(client, &uri, ctx).await {
        Ok(read) => text_of(&read.contents),
        Err(e) => return failed(name, &e.message),
    };
    match file {
        Some(f) => Reply::ok(
            text,
            json!({"mode": "skill", "server": s.server, "skill": s.skill.name(), "file": f, "uri": uri}),
        ),
        None => whole(s, &root, text),
    }
}

/// The answer for a skill's `SKILL.md`: a header, then the file.
fn whole(s: &OfferedSkill, root: &str, text: String) -> Reply {
    let files: Vec<&str> = match &s.skill.resources {
        SkillResources::Files(files) => files
            .iter()
            .filter_map(|f| f.uri.strip_prefix(root))
            .collect(),
        _ => Vec::new(),
    };
    let shown = format!("{}/{}", s.server, s.skill.name());
    let mut head = format!(
        "Skill {shown} (from server \"{}\"): {}\n",
        s.server, s.skill.frontmatter.description
    );
    match files.is_empty() {
        true => head.push_str("Files: listed by its server as they are read (dynamic)\n"),
        false => head.push_str(&format!("Files: {}\n", files.join(", "))),
    }
    head.push_str(&format!(
        "Read a file with mcp({{skill: \"{shown}\", file: \"…\"}}).\n"
    ));
    let allowed = s.skill.frontmatter.extra.contains_key("allowed-tools");
    if allowed {
        head.push_str("allowed-tools: ignored (a skill grants no tools here)\n");
    }
    let differs = frontmatter_differs(s, &text);
    if let Some(d) = &differs {
        head.push_str(&format!("Note: {d}\n"));
    }
    Reply::ok(
        format!("{head}\n{text}"),
        json!({"mode": "skill", "server": s.server, "skill": s.skill.name(), "uri": s.skill.uri,
               "files": files, "allowedToolsIgnored": allowed, "frontmatterDiffers": differs}),
    )
}

/// What the `SKILL.md` read says of its name and description, if it is not
/// what the server listed.
fn frontmatter_differs(s: &OfferedSkill, text: &str) -> Option<String> {
    let listed = &s.skill.frontmatter;
    crate::host::skills::frontmatter::differs(text, &listed.name, &listed.description)
}

/// The text of a read (a binary file as its size).
pub(in crate::gateway) fn text_of(contents: &[ResourceContents]) -> String {
    contents
        .iter()
        .map(|c| match c {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents { blob, .. } => {
                format!("[binary file, {} bytes as base64]", blob.len())
            }
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn failed(name: &str, why: &str) -> Reply {
    Reply::error(
        format!("Skill \"{name}\" cannot be read: {why}"),
        json!({"mode": "skill", "error": "skill_failed", "skill": name}),
    )
}
