//! `mcpw skills`: the skills of the configured servers (the MCP Skills
//! extension), and `export`, which copies skills into folders of local
//! skills for clients that read only folders (Claude Code, Codex), each file
//! checked against the digest its server listed.

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use mcpw::config::ConfigSources;
use mcpw::host::Host;
use mcpw::host::skills::OfferedSkill;
use rmcp::model::SkillResources;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum SkillsCommand {
    /// Every skill of the configured servers (connects them when none is cached).
    List(ListArgs),
    /// Copy skills into DIR/<server>/<skill path>/ (or DIR/<server>-<name>/ with --flat), each
    /// file checked against its digest.
    Export(ExportArgs),
}

#[derive(Args)]
pub(crate) struct ListArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct ExportArgs {
    /// The folder to write the skills into.
    dir: PathBuf,
    /// The skills: `<server>/<name>`, or a `skill://` URI as `mcpw skills list` shows it.
    skills: Vec<String>,
    /// Every skill of every server.
    #[arg(long, conflicts_with = "skills")]
    all: bool,
    /// Keep `allowed-tools` in each SKILL.md (dropped by default: what a
    /// local skill may run is the client's to grant, not the server's).
    #[arg(long)]
    keep_allowed_tools: bool,
    /// Write each skill as DIR/<server>-<name>/, its SKILL.md named `<server>-<name>`: one
    /// level of folders, as a client that looks only there finds them (Claude Code's
    /// `~/.claude/skills/`), and a name of its own for each (two servers' `review`).
    #[arg(long)]
    flat: bool,
}

pub(crate) async fn run(cmd: SkillsCommand, sources: &ConfigSources) -> Result<ExitCode> {
    let host = super::one_shot::start(sources).await?;
    let result = match cmd {
        SkillsCommand::List(args) => list(&host, args).await,
        SkillsCommand::Export(args) => export(&host, args).await,
    };
    host.shutdown().await;
    result
}

/// Every skill known, after connecting the servers whose listing is not
/// cached: a warm cache starts no server just to list.
async fn skills(host: &Host) -> Result<Vec<OfferedSkill>> {
    let uncached = super::servers_cmd::uncached(host, None);
    if !uncached.is_empty() {
        host.servers().connect_many(uncached, |_, _| {}).await;
    }
    let snapshot = host.snapshot().await?;
    Ok(snapshot.skills().list(&|_| true).cloned().collect())
}

async fn list(host: &Host, args: ListArgs) -> Result<ExitCode> {
    let all = skills(host).await?;
    if args.json {
        let listed: Vec<_> = all
            .iter()
            .map(|s| {
                json!({"server": s.server, "name": s.skill.name(), "uri": s.skill.uri,
                       "description": s.skill.frontmatter.description, "dynamic": s.dynamic()})
            })
            .collect();
        super::one_shot::print_json(&json!({"skills": listed}))?;
        return Ok(ExitCode::SUCCESS);
    }
    if all.is_empty() {
        outln!("No server offers skills.");
    }
    for s in &all {
        let mut line = format!("{}/{}", s.server, s.skill.name());
        if s.dynamic() {
            line.push_str(" (dynamic: its files are not checked)");
        }
        outln!(
            "{}",
            mcpw::present::bullet(&line, &s.skill.frontmatter.description, 50)
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn export(host: &Host, args: ExportArgs) -> Result<ExitCode> {
    if args.skills.is_empty() && !args.all {
        bail!("name the skills to export (<server>/<name>), or pass --all");
    }
    let all = skills(host).await?;
    let chosen: Vec<&OfferedSkill> = match args.all {
        true => all.iter().collect(),
        false => args
            .skills
            .iter()
            .map(|name| find(&all, name))
            .collect::<Result<_>>()?,
    };
    let mut failed = 0;
    for skill in chosen {
        let shown = format!("{}/{}", skill.server, skill.skill.name());
        // Every skill, asked for as one lot: a dynamic one has nothing to
        // export, and a skill that fails keeps none of the others back.
        if args.all && skill.skill.resources == SkillResources::Dynamic {
            eprintln!(
                "{shown}: not exported, its files are \"dynamic\" (listed by its server as they are read)"
            );
            continue;
        }
        match export_one(host, skill, &args).await {
            Ok((into, files)) => outln!(
                "{shown} → {} ({files} file{})",
                into.display(),
                if files == 1 { "" } else { "s" }
            ),
            Err(e) if args.all => {
                eprintln!("{shown}: not exported: {e:#}");
                failed += 1;
            }
            Err(e) => return Err(e),
        }
    }
    outln!(
        "These copies are now local skills: mcpw no longer checks them against their servers (export again to update them)."
    );
    if failed > 0 {
        bail!("{failed} skill(s) not exported");
    }
    Ok(ExitCode::SUCCESS)
}

/// The skill `name` names: `<server>/<name>` or its `skill://` URI.
fn find<'a>(all: &'a [OfferedSkill], name: &str) -> Result<&'a OfferedSkill> {
    all.iter()
        .find(|s| s.skill.uri == name || format!("{}/{}", s.server, s.skill.name()) == name)
        .with_context(|| {
            let known: Vec<String> = all
                .iter()
                .map(|s| format!("{}/{}", s.server, s.skill.name()))
                .collect();
            format!("no skill {name:?} (skills: {})", known.join(", "))
        })
}

/// Writes `skill` under `args.dir`: every file read through mcpw (so each
/// is checked against its digest), then written into a folder of its own,
/// moved into place whole. Returns the folder and how many files it holds.
async fn export_one(
    host: &Host,
    skill: &OfferedSkill,
    args: &ExportArgs,
) -> Result<(PathBuf, usize)> {
    let SkillResources::Files(files) = &skill.skill.resources else {
        bail!(
            "{}/{} lists its files as \"dynamic\": it has no fixed files to export",
            skill.server,
            skill.skill.name()
        );
    };
    // Every file read and checked before anything is written: a skill that
    // fails leaves no folder behind.
    let root = skill.skill.uri.trim_end_matches(rmcp::model::SKILL_MD);
    let mut read = Vec::with_capacity(files.len());
    for file in files {
        let rel = file
            .uri
            .strip_prefix(root)
            .context("a file outside its skill")?;
        let mut bytes = read_file(host, &file.uri).await?;
        if file.uri == skill.skill.uri && (args.flat || !args.keep_allowed_tools) {
            let name = args.flat.then(|| flat_name(skill));
            let md = exported_md(
                &String::from_utf8_lossy(&bytes),
                !args.keep_allowed_tools,
                name.as_deref(),
            );
            bytes = md.into_bytes();
        }
        read.push((safe(rel)?, bytes));
    }
    let into = match args.flat {
        true => args.dir.join(safe(&flat_name(skill))?),
        false => args.dir.join(&skill.server).join(local_path(&skill.uri)?),
    };
    let parent = into.parent().unwrap_or(&args.dir);
    std::fs::create_dir_all(parent).with_context(|| format!("create {}", parent.display()))?;
    let partial = tempfile::Builder::new()
        .prefix(".mcpw-export-")
        .tempdir_in(parent)
        .with_context(|| format!("write in {}", parent.display()))?;
    for (rel, bytes) in read {
        let target = partial.path().join(rel);
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&target, bytes).with_context(|| format!("write {}", target.display()))?;
    }
    if into.exists() {
        std::fs::remove_dir_all(&into).with_context(|| format!("replace {}", into.display()))?;
    }
    std::fs::rename(partial.keep(), &into).with_context(|| format!("write {}", into.display()))?;
    Ok((into, files.len()))
}

/// The bytes of a skill's file, read through the host (digest checked).
async fn read_file(host: &Host, uri: &str) -> Result<Vec<u8>> {
    let read = host
        .read_resource(uri)
        .await
        .with_context(|| format!("read {uri}"))?;
    let contents = read["contents"]
        .get(0)
        .with_context(|| format!("{uri}: no contents"))?;
    if let Some(text) = contents["text"].as_str() {
        return Ok(text.as_bytes().to_vec());
    }
    use base64::Engine;
    let blob = contents["blob"]
        .as_str()
        .with_context(|| format!("{uri}: no contents"))?;
    Ok(base64::engine::general_purpose::STANDARD.decode(blob)?)
}

/// A skill's folder under its server's: the path of its `SKILL.md` URI.
fn local_path(skill_md: &str) -> Result<PathBuf> {
    let path = skill_md
        .strip_prefix(mcpw::host::skills::SCHEME)
        .and_then(|p| p.strip_suffix(rmcp::model::SKILL_MD))
        .context("not a skill's URI")?;
    safe(path.trim_end_matches('/'))
}

/// `rel` as a relative path with no `..`, `.` or empty part.
fn safe(rel: &str) -> Result<PathBuf> {
    let parts: Vec<&str> = rel.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains('\\'))
    {
        bail!("{rel:?} is not a path a skill's file may have");
    }
    Ok(parts.iter().collect::<PathBuf>())
}

/// The name of `skill` exported flat: `<server>-<name>`.
fn flat_name(skill: &OfferedSkill) -> String {
    format!("{}-{}", skill.server, skill.skill.name())
}

/// A SKILL.md as exported: without the `allowed-tools` field of its
/// frontmatter (and the lines of its value) when `drop_allowed`, and named
/// `name` when one is given; its line ends (LF or CRLF) as they were.
fn exported_md(text: &str, drop_allowed: bool, name: Option<&str>) -> String {
    let Some((front, body)) = mcpw::host::skills::frontmatter::split(text) else {
        return text.to_string();
    };
    let eol = if text.starts_with("---\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut kept = format!("---{eol}");
    let mut dropping = false;
    for line in front.lines() {
        let continued = line.starts_with([' ', '\t']);
        if drop_allowed && line.starts_with("allowed-tools:") {
            dropping = true;
            continue;
        }
        if dropping && continued {
            continue;
        }
        dropping = false;
        match name.filter(|_| line.starts_with("name:")) {
            Some(name) => kept.push_str(&format!("name: {name}")),
            None => kept.push_str(line),
        }
        kept.push_str(eol);
    }
    format!("{kept}---{eol}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_tools_are_dropped_with_their_lines() {
        let without = |md: &str| exported_md(md, true, None);
        let md = "---\nname: a\nallowed-tools:\n  - Bash\n  - Read\ndescription: b\n---\n# A\nallowed-tools: stays in the body\n";
        assert_eq!(
            without(md),
            "---\nname: a\ndescription: b\n---\n# A\nallowed-tools: stays in the body\n"
        );
        let inline = "---\nname: a\nallowed-tools: Bash(git:*)\n---\nx";
        assert_eq!(without(inline), "---\nname: a\n---\nx");
        assert_eq!(without("no frontmatter"), "no frontmatter");
        let crlf = "---\r\nname: a\r\nallowed-tools: Read\r\n---\r\nx\r\n";
        assert_eq!(without(crlf), "---\r\nname: a\r\n---\r\nx\r\n");
        assert_eq!(
            exported_md(crlf, false, Some("web-a")),
            "---\r\nname: web-a\r\nallowed-tools: Read\r\n---\r\nx\r\n"
        );
    }

    #[test]
    fn a_files_path_stays_inside_its_folder() {
        assert_eq!(safe("ref/a.md").unwrap(), PathBuf::from("ref/a.md"));
        for bad in ["../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a\\b"] {
            assert!(safe(bad).is_err(), "{bad}");
        }
        assert_eq!(
            local_path("skill://a/review/SKILL.md").unwrap(),
            PathBuf::from("a/review")
        );
    }
}
