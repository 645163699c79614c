//! Skills (SEP-2640) through the gateway: every server's skills listed as
//! one, under mcpw's namespace (`skill://<server>/…`, see
//! [`crate::host::skills`]); a skill got by its URI from the listing mcpw
//! holds (the server is listed again when it says its skills changed); a
//! folder read from the manifests held, or from a server that reads folders
//! itself. A skill's files are read as resources (`resources/read`), each
//! checked against its digest.

use super::resources::{page, with_cursor};
use super::watching::host_error;
use super::wire::from_json;
use super::{ClientScope, Session};
use rmcp::ErrorData as McpError;
use rmcp::model::{GetSkillResult, ListResourcesResult, ListSkillsResult};
use serde_json::json;

impl Session {
    /// One page of the skills `client` sees.
    pub(super) async fn skill_list(
        &self,
        client: &ClientScope,
        cursor: Option<&str>,
    ) -> Result<ListSkillsResult, McpError> {
        let snapshot = self.ready_snapshot().await?;
        let sees = |s: &str| client.allows(s);
        let skills = snapshot
            .skills()
            .list(&sees)
            .filter_map(|s| serde_json::to_value(&s.skill).ok())
            .collect();
        let (items, next) = page(skills, cursor)?;
        from_json(with_cursor(json!({ "skills": items }), next))
    }

    /// The skill whose `SKILL.md` is at `uri`, if `client` sees its server.
    pub(super) async fn skill_get(
        &self,
        client: &ClientScope,
        uri: &str,
    ) -> Result<GetSkillResult, McpError> {
        let snapshot = self.ready_snapshot().await?;
        let skill = snapshot
            .skills()
            .skill(uri, &|s| client.allows(s))
            .ok_or_else(|| {
                McpError::invalid_params(format!("no skill at {uri}"), Some(json!({"uri": uri})))
            })?;
        Ok(GetSkillResult::new(skill.skill.clone()))
    }

    /// The entries of a skill's folder at `uri`: from the manifests held;
    /// else, for a dynamic skill, from its server when that server reads
    /// folders itself.
    pub(super) async fn skill_directory(
        &self,
        client: &ClientScope,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, McpError> {
        let snapshot = self.ready_snapshot().await?;
        let sees = |s: &str| client.allows(s);
        if let Some(entries) = snapshot.skills().directory(uri, &sees) {
            let (items, next) = page(entries, cursor)?;
            return from_json(with_cursor(json!({ "resources": items }), next));
        }
        let skills = snapshot.skills();
        match skills.route_within(uri, &sees) {
            Some((server, own)) if skills.reads_folders(&server) => self
                .shared
                .host
                .read_directory(&crate::host::resources::Route::skill(&server, &own), cursor)
                .await
                .map_err(host_error),
            _ => Err(McpError::invalid_params(
                format!("{uri} is not a folder of a skill mcpw knows"),
                Some(json!({"uri": uri})),
            )),
        }
    }
}
