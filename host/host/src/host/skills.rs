//! Skills (the MCP Skills extension, SEP-2640) of every server, in one
//! namespace. A skill's name must be the last segment of its URI before
//! `SKILL.md`, so the server goes in front of the path instead:
//! `skill://<server>/<path>` for the server's `skill://<path>`, always (not
//! only when two servers clash, as other resources are), for the skill and
//! every file of its manifest. A file read through mcpw is checked against
//! the digest the server listed for it: bytes that differ are refused.

pub mod frontmatter;

use crate::lifecycle::Offers;
use rmcp::model::{
    ReadResourceResult, ResourceContents, Skill, SkillIntegrityError, SkillResource, SkillResources,
};
use serde_json::Value;
use std::collections::HashMap;

/// The scheme of skill URIs.
pub use crate::catalog::SKILL_SCHEME as SCHEME;

/// One server's skill, as clients see it.
#[derive(Clone, Debug)]
pub struct OfferedSkill {
    /// The server that offers it.
    pub server: String,
    /// The server's own URI of its `SKILL.md`.
    pub uri: String,
    /// The skill with every URI in mcpw's namespace.
    pub skill: Skill,
}

impl OfferedSkill {
    /// How an agent names it: `<server>/<skill>`.
    pub fn agent_name(&self) -> String {
        format!("{}/{}", self.server, self.skill.name())
    }

    /// The URI (mcpw's namespace) of its file at `file`, a path inside the
    /// skill's folder; its `SKILL.md` when none.
    pub fn file_uri(&self, file: Option<&str>) -> String {
        match file {
            Some(f) => format!("{}{}", self.root(), f.trim_start_matches('/')),
            None => self.skill.uri.clone(),
        }
    }

    /// The URI of its folder, ending in `/`.
    pub fn root(&self) -> &str {
        self.skill.uri.trim_end_matches(rmcp::model::SKILL_MD)
    }

    /// Its files are not listed ahead (`"dynamic"`): none has a digest.
    pub fn dynamic(&self) -> bool {
        self.skill.resources == SkillResources::Dynamic
    }
}

/// A file of a skill, as listed.
#[derive(Clone, Debug)]
struct File {
    /// The skill it belongs to.
    skill: usize,
    /// The server's own URI of the file.
    uri: String,
    /// Its digest and size, as the server listed them.
    listed: SkillResource,
}

/// Every server's skills, under the URIs clients use.
#[derive(Debug, Default)]
pub struct SkillMap {
    skills: Vec<OfferedSkill>,
    by_uri: HashMap<String, usize>,
    files: HashMap<String, File>,
    /// The servers that answer `resources/directory/read` themselves.
    folders: std::collections::HashSet<String>,
}

/// `server`'s `uri` in mcpw's namespace (`None` for a URI that is not a
/// skill's). The server's name is percent-encoded where a URI needs it.
pub fn exposed(server: &str, uri: &str) -> Option<String> {
    let rest = uri.strip_prefix(SCHEME)?;
    Some(format!("{SCHEME}{}/{rest}", encoded(server)))
}

/// The server and its own URI of a URI in mcpw's namespace.
fn split(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (server, path) = rest.split_once('/')?;
    let server = decoded(server)?;
    (!server.is_empty() && !path.is_empty()).then(|| (server, format!("{SCHEME}{path}")))
}

/// `s` with every byte but unreserved ones (RFC 3986) percent-encoded.
fn encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn decoded(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex: String = [bytes.next()?, bytes.next()?]
                .iter()
                .map(|&c| c as char)
                .collect();
            out.push(u8::from_str_radix(&hex, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

/// `skill` with its URI and its files' in mcpw's namespace.
fn renamed(server: &str, skill: &Skill) -> Option<Skill> {
    let mut out = skill.clone();
    out.uri = exposed(server, &skill.uri)?;
    match &mut out.resources {
        SkillResources::Files(files) => {
            for f in files {
                f.uri = exposed(server, &f.uri)?;
            }
        }
        // Said where a client sees the skill: nothing of it can be checked.
        _ => {
            let mut meta = out.meta.take().unwrap_or_default();
            meta.0
                .insert(UNCHECKED.into(), Value::String(DYNAMIC_WARNING.into()));
            out.meta = Some(meta);
        }
    }
    Some(out)
}

/// The `_meta` key of the warning a dynamic skill is listed with.
const UNCHECKED: &str = "mcpw/unchecked";

/// What mcpw warns of a dynamic skill.
const DYNAMIC_WARNING: &str = "its server lists its files as \"dynamic\": they have no digests, and mcpw passes them on unchecked";

impl SkillMap {
    /// The map of the skills `offers` lists, in config order (a listing
    /// that is not a skill is left out, and so is a skill `withheld` names
    /// as (server, `skill:<its URI>`): changed since its pin, it waits for
    /// the user's approval).
    pub fn build(
        offers: &[(String, Offers)],
        withheld: &std::collections::BTreeSet<(String, String)>,
    ) -> SkillMap {
        let mut map = SkillMap::default();
        for (server, o) in offers {
            if o.directory_read {
                map.folders.insert(server.clone());
            }
            for item in &o.skills {
                let Ok(skill) = serde_json::from_value::<Skill>(item.clone()) else {
                    continue;
                };
                if withheld.contains(&(server.clone(), format!("skill:{}", skill.uri))) {
                    continue;
                }
                map.add(server, skill);
            }
        }
        map
    }

    fn add(&mut self, server: &str, skill: Skill) {
        let Some(shown) = renamed(server, &skill) else {
            return;
        };
        if self.by_uri.contains_key(&shown.uri) {
            return;
        }
        let i = self.skills.len();
        if let SkillResources::Files(files) = &skill.resources {
            for f in files {
                if let Some(uri) = exposed(server, &f.uri) {
                    let file = File {
                        skill: i,
                        uri: f.uri.clone(),
                        listed: f.clone(),
                    };
                    self.files.insert(uri, file);
                }
            }
        }
        self.by_uri.insert(shown.uri.clone(), i);
        self.skills.push(OfferedSkill {
            server: server.to_string(),
            uri: skill.uri,
            skill: shown,
        });
    }

    /// The skills of the servers `sees` admits, in config order.
    pub fn list<'a>(
        &'a self,
        sees: &'a dyn Fn(&str) -> bool,
    ) -> impl Iterator<Item = &'a OfferedSkill> {
        self.skills.iter().filter(move |s| sees(&s.server))
    }

    /// The skill an agent names `<server>/<skill>` or by the URI of its
    /// `SKILL.md` (mcpw's namespace), among the servers `sees` admits.
    pub fn find(&self, name: &str, sees: &dyn Fn(&str) -> bool) -> Option<&OfferedSkill> {
        self.skills
            .iter()
            .find(|s| sees(&s.server) && (s.skill.uri == name || s.agent_name() == name))
    }

    /// Every skill as a search entry (kind `skill`, named `<server>/<skill>`),
    /// in config order: searched beside the tools.
    pub fn entries(&self) -> Vec<crate::catalog::Entry> {
        self.skills
            .iter()
            .map(|s| crate::catalog::Entry {
                name: s.agent_name(),
                tool: std::sync::Arc::new(crate::catalog::Tool::skill(
                    &s.server,
                    s.skill.name(),
                    s.skill.frontmatter.description.clone(),
                    &s.skill.uri,
                )),
            })
            .collect()
    }

    /// The skill whose `SKILL.md` is at `uri` (mcpw's namespace), among the
    /// servers `sees` admits.
    pub fn skill(&self, uri: &str, sees: &dyn Fn(&str) -> bool) -> Option<&OfferedSkill> {
        let s = &self.skills[*self.by_uri.get(uri)?];
        sees(&s.server).then_some(s)
    }

    /// Whether `server` answers `resources/directory/read` itself.
    pub fn reads_folders(&self, server: &str) -> bool {
        self.folders.contains(server)
    }

    /// The digest and size listed for the file at the server's `uri` of
    /// `server` (`None` for a dynamic skill's file, or one not listed).
    pub fn listed(&self, server: &str, uri: &str) -> Option<&SkillResource> {
        let exposed = exposed(server, uri)?;
        self.files.get(&exposed).map(|f| &f.listed)
    }

    /// Where a skill URI of mcpw's namespace goes, as (server, the server's
    /// URI): a listed file of a skill, or (for a dynamic skill) a file under
    /// its folder.
    pub fn route_within(&self, uri: &str, sees: &dyn Fn(&str) -> bool) -> Option<(String, String)> {
        if let Some(f) = self.files.get(uri) {
            let server = &self.skills[f.skill].server;
            return sees(server).then(|| (server.clone(), f.uri.clone()));
        }
        let (server, own) = split(uri)?;
        let under_dynamic = self
            .skills
            .iter()
            .any(|s| s.server == server && s.dynamic() && own.starts_with(folder(&s.uri)));
        (under_dynamic && sees(&server)).then_some((server, own))
    }

    /// The entries of the folder at `uri` (mcpw's namespace), from the
    /// manifests held: each file, and each sub-folder once, as MCP resources
    /// (`None` when no listed skill has files there).
    pub fn directory(&self, uri: &str, sees: &dyn Fn(&str) -> bool) -> Option<Vec<Value>> {
        let dir = if uri.ends_with('/') {
            uri.to_string()
        } else {
            format!("{uri}/")
        };
        let mut entries: Vec<Value> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut listed: Vec<(&String, &File)> = self
            .files
            .iter()
            .filter(|(u, f)| u.starts_with(&dir) && sees(&self.skills[f.skill].server))
            .collect();
        listed.sort_by(|a, b| a.0.cmp(b.0));
        for (u, f) in listed {
            let rest = &u[dir.len()..];
            let entry = match rest.split_once('/') {
                Some((sub, _)) => serde_json::json!({"uri": format!("{dir}{sub}/"), "name": sub,
                    "mimeType": rmcp::model::DIRECTORY_MIME_TYPE}),
                None => serde_json::json!({"uri": u, "name": rest, "size": f.listed.size}),
            };
            if seen.insert(entry["uri"].as_str().unwrap_or_default().to_string()) {
                entries.push(entry);
            }
        }
        (!entries.is_empty()).then_some(entries)
    }
}

/// The folder of a skill: its `SKILL.md` URI without the file name.
fn folder(skill_md: &str) -> &str {
    skill_md
        .strip_suffix(rmcp::model::SKILL_MD)
        .unwrap_or(skill_md)
}

/// Checks the bytes of a skill file read from `server` against the digest it
/// was listed with; a file of a dynamic skill has none to check.
pub fn verify(listed: Option<&SkillResource>, bytes: &[u8]) -> Result<(), String> {
    match listed {
        Some(entry) => entry.verify(bytes).map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

/// The bytes of each of the contents of a skill file's read: a text's, or a
/// blob's once decoded; any other kind is refused.
pub fn bytes_of(read: &ReadResourceResult) -> Result<Vec<Vec<u8>>, String> {
    read.contents
        .iter()
        .map(|contents| match contents {
            ResourceContents::TextResourceContents { text, .. } => Ok(text.as_bytes().to_vec()),
            ResourceContents::BlobResourceContents { blob, .. } => {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .map_err(|e| e.to_string())
            }
            _ => Err("contents of a kind a skill's file cannot be".to_string()),
        })
        .collect()
}

/// What a skill file's read held as its server sent it (each part's digest
/// and size): what the guards may pass on or refuse, never change. Kept for
/// every skill's file, a dynamic one's too, whose listing has no digest.
#[derive(Debug)]
pub struct Sent(Vec<SkillResource>);

impl Sent {
    /// The digests of `read`, before anything sees it.
    pub fn of(read: &ReadResourceResult) -> Result<Sent, String> {
        let parts = bytes_of(read)?;
        Ok(Sent(
            parts
                .iter()
                .map(|b| SkillResource::from_bytes("", b))
                .collect(),
        ))
    }

    /// Whether `read` holds the very bytes sent, part for part.
    pub fn same(&self, read: &ReadResourceResult) -> Result<(), String> {
        let parts = bytes_of(read)?;
        if parts.len() != self.0.len() {
            return Err(format!(
                "{} part(s) sent, {} passed on",
                self.0.len(),
                parts.len()
            ));
        }
        for (sent, bytes) in self.0.iter().zip(&parts) {
            sent.verify(bytes).map_err(|e| match e {
                SkillIntegrityError::Size {
                    expected, actual, ..
                } => {
                    format!("{expected} bytes sent, {actual} passed on")
                }
                _ => "the bytes passed on are not those sent".to_string(),
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offers(server: &str, skills: Value) -> (String, Offers) {
        let o = Offers {
            skills: skills.as_array().unwrap().clone(),
            ..Default::default()
        };
        (server.to_string(), o)
    }

    fn skill(uri: &str, name: &str, files: Value) -> Value {
        json!({"uri": uri, "frontmatter": {"name": name, "description": "d"}, "resources": files})
    }

    #[test]
    fn two_servers_skills_of_one_name_stay_apart_and_route_back() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let files = |root: &str| {
            json!([{"uri": format!("skill://{root}/SKILL.md"), "digest": digest, "size": 3},
                   {"uri": format!("skill://{root}/ref/style.md"), "digest": digest, "size": 4}])
        };
        let map = SkillMap::build(
            &[
                offers(
                    "a",
                    json!([skill("skill://rev/SKILL.md", "rev", files("rev"))]),
                ),
                offers(
                    "b one",
                    json!([
                        skill("skill://rev/SKILL.md", "rev", files("rev")),
                        skill("skill://live/SKILL.md", "live", json!("dynamic"))
                    ]),
                ),
            ],
            &Default::default(),
        );
        let all = |_: &str| true;
        let uris: Vec<&str> = map.list(&all).map(|s| s.skill.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://a/rev/SKILL.md",
                "skill://b%20one/rev/SKILL.md",
                "skill://b%20one/live/SKILL.md"
            ]
        );
        let (server, uri) = map
            .route_within("skill://b%20one/rev/ref/style.md", &all)
            .unwrap();
        assert_eq!(
            (server.as_str(), uri.as_str()),
            ("b one", "skill://rev/ref/style.md")
        );
        assert_eq!(
            exposed(&server, &uri).unwrap(),
            "skill://b%20one/rev/ref/style.md"
        );
        assert_eq!(
            map.listed("b one", "skill://rev/ref/style.md")
                .unwrap()
                .size,
            4
        );
        // A file no manifest lists is not read, unless its skill is dynamic.
        assert!(map.route_within("skill://a/rev/secret.md", &all).is_none());
        assert!(
            map.route_within("skill://b%20one/live/any.md", &all)
                .is_some()
        );
        assert!(map.listed("b one", "skill://live/any.md").is_none());
        // Listed with a warning: nothing of it can be checked.
        let live = map.skill("skill://b%20one/live/SKILL.md", &all).unwrap();
        let meta = live.skill.meta.as_ref().unwrap();
        assert_eq!(meta.0[UNCHECKED], DYNAMIC_WARNING);
        let rev = map.skill("skill://a/rev/SKILL.md", &all).unwrap();
        assert!(rev.skill.meta.is_none());
        // A server the client does not see has no skills for it.
        let only_a = |s: &str| s == "a";
        assert!(
            map.route_within("skill://b%20one/rev/SKILL.md", &only_a)
                .is_none()
        );
        assert_eq!(map.list(&only_a).count(), 1);
        // Folders come from the manifests.
        let dir = map.directory("skill://a/rev", &all).unwrap();
        let names: Vec<&str> = dir.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["SKILL.md", "ref"]);
        assert!(map.directory("skill://a/none", &all).is_none());
        assert!(!map.reads_folders("a"));
        let mut reading = offers("c", json!([]));
        reading.1.directory_read = true;
        assert!(SkillMap::build(&[reading], &Default::default()).reads_folders("c"));
    }

    #[test]
    fn bytes_must_match_their_digest_and_size() {
        let listed = SkillResource::from_bytes("skill://x/SKILL.md", b"abc");
        assert!(verify(Some(&listed), b"abc").is_ok());
        assert!(
            verify(Some(&listed), b"abd")
                .unwrap_err()
                .contains("digest")
        );
        assert!(verify(Some(&listed), b"abcd").is_err());
        assert!(verify(None, b"anything").is_ok());
    }
}
