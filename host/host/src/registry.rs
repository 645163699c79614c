//! The MCP Registry, read through its public API (`GET /v0.1/servers`):
//! entries kept on disk, refreshed with `updated_since`, so that a search
//! works offline and a registry that is down (it is in preview) costs only
//! freshness. `settings.registry` names another registry (a team's copy).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The official registry.
const OFFICIAL: &str = "https://registry.modelcontextprotocol.io";

/// Where the registry's own facts about an entry are, in its `_meta`.
const OFFICIAL_META: &str = "io.modelcontextprotocol.registry/official";

/// Entries per page asked for.
const PAGE: u32 = 100;

/// The most pages one refresh reads (100,000 entries): a registry that keeps
/// answering with a cursor must not keep mcpw reading forever.
const MAX_PAGES: usize = 1000;

/// How long one page may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// Why the registry could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No answer, or not one of the API's.
    #[error("the registry at {url}: {why}")]
    Unreachable {
        /// The registry's base URL.
        url: String,
        /// What went wrong.
        why: String,
    },
    /// The cache file could not be written.
    #[error("the registry cache {path}: {source}")]
    Cache {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// One version of a server, as the registry lists it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Listed {
    /// Its `server.json`.
    pub server: Value,
    /// What the registry says of it: `status`, `isLatest`, `updatedAt`, …
    #[serde(rename = "_meta", default, skip_serializing_if = "Value::is_null")]
    pub meta: Value,
}

impl Listed {
    /// `name` of its `server.json` (`io.github.user/weather`).
    pub fn name(&self) -> &str {
        self.server["name"].as_str().unwrap_or_default()
    }

    /// Its version.
    pub fn version(&self) -> &str {
        self.server["version"].as_str().unwrap_or_default()
    }

    fn official(&self) -> &Value {
        &self.meta[OFFICIAL_META]
    }

    /// `active`, `deprecated` or `deleted` (active when unsaid).
    pub fn status(&self) -> &str {
        self.official()["status"].as_str().unwrap_or("active")
    }

    /// Whether this is the server's latest version (true when unsaid).
    fn is_latest(&self) -> bool {
        self.official()["isLatest"].as_bool().unwrap_or(true)
    }

    fn updated_at(&self) -> Option<&str> {
        let o = self.official();
        o["updatedAt"].as_str().or(o["publishedAt"].as_str())
    }

    /// What a search matches: its name, title and description.
    pub fn text(&self) -> String {
        let s = &self.server;
        let title = s["title"].as_str().unwrap_or_default();
        let description = s["description"].as_str().unwrap_or_default();
        format!("{title} {description}").trim().to_string()
    }
}

/// The registry's entries, as last read.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Cached {
    /// The registry's base URL.
    pub url: String,
    /// The newest `updatedAt` read: the next refresh asks for what changed since.
    pub updated_since: Option<String>,
    /// By name and version.
    pub entries: BTreeMap<String, Listed>,
}

impl Cached {
    /// Each server's latest version; `all` keeps deprecated and deleted ones.
    pub fn latest(&self, all: bool) -> Vec<&Listed> {
        self.entries
            .values()
            .filter(|l| l.is_latest())
            .filter(|l| all || l.status() == "active")
            .collect()
    }

    /// The latest version of the server named `name`, whatever its status.
    pub fn named(&self, name: &str) -> Option<&Listed> {
        let all: Vec<&Listed> = self.entries.values().filter(|l| l.name() == name).collect();
        all.iter().find(|l| l.is_latest()).or(all.last()).copied()
    }

    fn merge(&mut self, page: Vec<Listed>) {
        for listed in page {
            if let Some(at) = listed.updated_at()
                && self.updated_since.as_deref().is_none_or(|s| at > s)
            {
                self.updated_since = Some(at.to_string());
            }
            let key = format!("{}@{}", listed.name(), listed.version());
            self.entries.insert(key, listed);
        }
    }
}

/// The registry at `url`, cached in `cache_dir`.
pub struct Registry {
    url: String,
    file: PathBuf,
}

/// One page of `GET /v0.1/servers`.
#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    servers: Vec<Listed>,
    #[serde(default)]
    metadata: Value,
}

impl Registry {
    /// The registry at `url` (none: the official one), its entries kept in
    /// `cache_dir`.
    pub fn new(url: Option<&str>, cache_dir: &Path) -> Registry {
        let url = url.unwrap_or(OFFICIAL).trim_end_matches('/').to_string();
        let host: String = url
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        Registry {
            file: cache_dir.join("registry").join(format!("{host}.json")),
            url,
        }
    }

    /// Its base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What was last read, from disk (empty when never).
    pub fn cached(&self) -> Cached {
        std::fs::read(&self.file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .filter(|c: &Cached| c.url == self.url)
            .unwrap_or_else(|| Cached {
                url: self.url.clone(),
                ..Cached::default()
            })
    }

    /// The cache brought up to date: what changed since the last read
    /// (deleted entries included, so they leave the results). When the
    /// registry cannot be reached, the cache as it is and why.
    pub async fn refreshed(&self) -> (Cached, Option<RegistryError>) {
        let mut cached = self.cached();
        match self.read_changes(&mut cached).await {
            Ok(()) => match self.keep(&cached) {
                Ok(()) => (cached, None),
                Err(e) => (cached, Some(e)),
            },
            Err(e) => (self.cached(), Some(e)),
        }
    }

    async fn read_changes(&self, cached: &mut Cached) -> Result<(), RegistryError> {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| self.unreachable(e))?;
        let since = cached.updated_since.clone();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            // Deleted entries too: `--all` shows them, and an update that
            // deletes one must reach the cache (with `updated_since` the
            // registry includes them anyway).
            let mut query = vec![
                ("limit", PAGE.to_string()),
                ("include_deleted", "true".into()),
            ];
            if let Some(s) = &since {
                query.push(("updated_since", s.clone()));
            }
            if let Some(c) = &cursor {
                query.push(("cursor", c.clone()));
            }
            let page = self.page(&client, &query).await?;
            let next = page.metadata["nextCursor"]
                .as_str()
                .or(page.metadata["next_cursor"].as_str())
                .filter(|c| !c.is_empty())
                .map(str::to_string);
            cached.merge(page.servers);
            match next {
                Some(n) if Some(&n) != cursor.as_ref() => cursor = Some(n),
                _ => return Ok(()),
            }
        }
        Ok(())
    }

    async fn page(
        &self,
        client: &reqwest::Client,
        query: &[(&str, String)],
    ) -> Result<Page, RegistryError> {
        let response = client
            .get(format!("{}/v0.1/servers", self.url))
            .query(query)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        if !response.status().is_success() {
            return Err(self.unreachable(format!("HTTP {}", response.status())));
        }
        response.json().await.map_err(|e| self.unreachable(e))
    }

    fn unreachable(&self, why: impl ToString) -> RegistryError {
        RegistryError::Unreachable {
            url: self.url.clone(),
            why: why.to_string(),
        }
    }

    fn keep(&self, cached: &Cached) -> Result<(), RegistryError> {
        use crate::state_file::{Access, write_json};
        write_json(&self.file, Access::Default, cached).map_err(|source| RegistryError::Cache {
            path: self.file.clone(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listed(name: &str, version: &str, status: &str, latest: bool, at: &str) -> Listed {
        Listed {
            server: json!({"name": name, "version": version, "description": "d"}),
            meta: json!({OFFICIAL_META: {"status": status, "isLatest": latest, "updatedAt": at}}),
        }
    }

    #[test]
    fn only_active_latest_versions_unless_all_are_asked_for() {
        let mut c = Cached::default();
        c.merge(vec![
            listed("a/x", "1.0.0", "active", false, "2026-01-01T00:00:00Z"),
            listed("a/x", "1.1.0", "active", true, "2026-02-01T00:00:00Z"),
            listed("a/old", "1.0.0", "deprecated", true, "2026-01-05T00:00:00Z"),
            listed("a/gone", "2.0.0", "deleted", true, "2026-03-01T00:00:00Z"),
        ]);
        let names = |v: Vec<&Listed>| -> Vec<String> {
            v.iter()
                .map(|l| format!("{}@{}", l.name(), l.version()))
                .collect()
        };
        assert_eq!(names(c.latest(false)), ["a/x@1.1.0"]);
        assert_eq!(names(c.latest(true)).len(), 3);
        assert_eq!(c.updated_since.as_deref(), Some("2026-03-01T00:00:00Z"));
        assert_eq!(c.named("a/x").unwrap().version(), "1.1.0");
    }
}
