//! Upstream resources and resource templates, under URIs that reach them.
//!
//! A URI (or URI template) that one server offers passes unchanged. When
//! several servers offer the same one, each server's is exposed as
//! `mcpw:<server>/<its URI>`: a client reads, subscribes to and expands that
//! form, and mcpw takes the prefix off again to reach the server. An MCP
//! App's view keeps its scheme, which hosts require: `ui://mcpw/<server>/…`
//! for the server's `ui://…`.

use super::pipeline::{Caller, Read, Unattended};
use super::{Host, HostError};
use crate::lifecycle::Offers;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The scheme of URIs mapped to one server.
pub const SCHEME: &str = "mcpw:";

/// A resource (or template) as exposed.
#[derive(Clone, Debug)]
pub struct Offered {
    /// The server that offers it.
    pub server: String,
    /// The server's own URI (or URI template).
    pub uri: String,
    /// The MCP resource (or template) JSON, with the URI clients see.
    pub item: Value,
}

/// Every server's resources and templates, with the URIs clients use.
#[derive(Debug, Default)]
pub struct ResourceMap {
    resources: Vec<Offered>,
    templates: Vec<Offered>,
    by_uri: HashMap<String, usize>,
    /// URIs (and templates) that more than one server offers.
    shared: HashSet<String>,
    servers: HashSet<String>,
}

/// Where a client's URI goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The server.
    pub server: String,
    /// The URI the server knows.
    pub uri: String,
    /// The client used the `mcpw:<server>/` form: URIs in the answer get it too.
    pub mapped: bool,
    /// A skill's file: URIs in the answer are in the skills' namespace
    /// (see [`super::skills`]), and its bytes are checked against its digest.
    pub skill: bool,
}

/// Where a server's views go when another server has the same.
const VIEWS: &str = "ui://mcpw/";

/// `server`'s `uri` in the form mapped to that server.
fn mapped(server: &str, uri: &str) -> String {
    match uri.strip_prefix(crate::apps::SCHEME) {
        Some(view) => format!("{VIEWS}{server}/{view}"),
        None => format!("{SCHEME}{server}/{uri}"),
    }
}

impl Route {
    /// The route to a skill's file at the server's `uri`.
    pub fn skill(server: &str, uri: &str) -> Route {
        Route {
            server: server.to_string(),
            uri: uri.to_string(),
            mapped: false,
            skill: true,
        }
    }

    /// The URI a client sees for `uri` of this route's server.
    pub fn exposed(&self, uri: &str) -> String {
        if self.skill
            && let Some(shown) = super::skills::exposed(&self.server, uri)
        {
            return shown;
        }
        if self.mapped {
            mapped(&self.server, uri)
        } else {
            uri.to_string()
        }
    }
}

/// Every server's items (resources or templates, by `pick`) that have a
/// `key`, but a skill's: a skill's files are listed and read as the skill's
/// (see [`super::skills`]), never as resources of the clash-only form.
fn offered(offers: &[(String, Offers)], pick: fn(&Offers) -> &[Value], key: &str) -> Vec<Offered> {
    offers
        .iter()
        .flat_map(|(server, o)| {
            pick(o).iter().filter_map(move |item| {
                let uri = item.get(key)?.as_str()?;
                (!uri.starts_with(super::skills::SCHEME)).then(|| Offered {
                    server: server.clone(),
                    uri: uri.to_string(),
                    item: item.clone(),
                })
            })
        })
        .collect()
}

/// The URI a skill's file is read by, for a client that names it in the
/// `mcpw:<server>/` form: `skill://<server>/…` (`None` for any other URI).
fn skill_form(uri: &str) -> Option<String> {
    let (server, own) = uri.strip_prefix(SCHEME)?.split_once('/')?;
    super::skills::exposed(server, own)
}

/// The URIs of `items` that more than one server offers; their items get the
/// `mcpw:<server>/` form under `key`.
fn map_shared(items: &mut [Offered], key: &str) -> HashSet<String> {
    let mut owner: HashMap<&str, &str> = HashMap::new();
    let mut shared = HashSet::new();
    for o in items.iter() {
        match owner.insert(&o.uri, &o.server) {
            Some(other) if other != o.server => {
                shared.insert(o.uri.clone());
            }
            _ => {}
        }
    }
    for o in items.iter_mut().filter(|o| shared.contains(&o.uri)) {
        o.item[key] = Value::String(mapped(&o.server, &o.uri));
    }
    shared
}

impl ResourceMap {
    /// The map of what `offers` lists, in config order.
    pub fn build(offers: &[(String, Offers)]) -> ResourceMap {
        let mut resources = offered(offers, |o| &o.resources, "uri");
        let mut templates = offered(offers, |o| &o.templates, "uriTemplate");
        let mut shared = map_shared(&mut resources, "uri");
        shared.extend(map_shared(&mut templates, "uriTemplate"));
        let by_uri = resources
            .iter()
            .enumerate()
            .filter(|(_, r)| !shared.contains(&r.uri))
            .map(|(i, r)| (r.uri.clone(), i))
            .collect();
        ResourceMap {
            resources,
            templates,
            by_uri,
            shared,
            servers: offers.iter().map(|(s, _)| s.clone()).collect(),
        }
    }

    /// Every resource, as exposed.
    pub fn resources(&self) -> &[Offered] {
        &self.resources
    }

    /// Every resource template, as exposed.
    pub fn templates(&self) -> &[Offered] {
        &self.templates
    }

    /// The URI a client knows for `server`'s `uri` (a skill's file's in the
    /// skills' namespace).
    pub fn exposed(&self, server: &str, uri: &str) -> String {
        Route {
            server: server.to_string(),
            uri: uri.to_string(),
            mapped: self.shared.contains(uri),
            skill: uri.starts_with(super::skills::SCHEME),
        }
        .exposed(uri)
    }

    /// The server of a template (or resource) URI a client names as it was
    /// listed (`ref/resource` of a completion), with the server's own form.
    pub fn route_template(&self, uri: &str) -> Option<Route> {
        if let Some(route) = self.route_mapped(uri) {
            return Some(route);
        }
        self.templates
            .iter()
            .chain(&self.resources)
            .find(|t| t.uri == uri && !self.shared.contains(uri))
            .map(|t| Route {
                server: t.server.clone(),
                uri: uri.to_string(),
                mapped: false,
                skill: false,
            })
    }

    /// A URI in the `mcpw:<server>/` form, for a server mcpw knows.
    fn route_mapped(&self, uri: &str) -> Option<Route> {
        self.route_mapped_within(uri, &|_| true)
    }

    fn route_mapped_within(&self, uri: &str, sees: &dyn Fn(&str) -> bool) -> Option<Route> {
        let (server, original) = match uri.strip_prefix(VIEWS) {
            Some(view) => {
                let (server, view) = view.split_once('/')?;
                (server, format!("{}{view}", crate::apps::SCHEME))
            }
            None => {
                let (server, original) = uri.strip_prefix(SCHEME)?.split_once('/')?;
                (server, original.to_string())
            }
        };
        // A skill's file is read as the skill's only: checked, audited as one.
        if original.starts_with(super::skills::SCHEME) {
            return None;
        }
        (self.servers.contains(server) && sees(server)).then(|| Route {
            server: server.to_string(),
            uri: original,
            mapped: true,
            skill: false,
        })
    }

    /// Whether any URI of `server` is exposed in the mapped form.
    pub fn maps(&self, server: &str) -> bool {
        self.resources
            .iter()
            .chain(&self.templates)
            .any(|o| o.server == server && self.shared.contains(&o.uri))
    }

    /// Where a URI from a client goes: its `mcpw:<server>/` form; a listed
    /// resource; the one server with a template that matches; else the one
    /// server that offers resources at all.
    pub fn route(&self, uri: &str) -> Option<Route> {
        self.route_within(uri, &|_| true)
    }

    /// [`ResourceMap::route`] among the servers `sees` admits, as if no
    /// other server existed.
    fn route_within(&self, uri: &str, sees: &dyn Fn(&str) -> bool) -> Option<Route> {
        if let Some(route) = self.route_mapped_within(uri, sees) {
            return Some(route);
        }
        // Neither a skill's file nor the mapped form of one goes to a server
        // that takes any URI: those are the skills' to route, or nobody's.
        if uri.starts_with(super::skills::SCHEME) || skill_form(uri).is_some() {
            return None;
        }
        let direct = |server: &str| Route {
            server: server.to_string(),
            uri: uri.to_string(),
            mapped: false,
            skill: false,
        };
        if let Some(&i) = self.by_uri.get(uri)
            && sees(&self.resources[i].server)
        {
            return Some(direct(&self.resources[i].server));
        }
        let matching: HashSet<&str> = self
            .templates
            .iter()
            .filter(|t| sees(&t.server))
            .filter(|t| !self.shared.contains(&t.uri) && template_matches(&t.uri, uri))
            .map(|t| t.server.as_str())
            .collect();
        if matching.len() == 1 {
            return matching.into_iter().next().map(direct);
        }
        let offering: HashSet<&str> = self
            .resources
            .iter()
            .chain(&self.templates)
            .map(|r| r.server.as_str())
            .filter(|s| sees(s))
            .collect();
        (matching.is_empty() && offering.len() == 1)
            .then(|| offering.into_iter().next().map(direct))
            .flatten()
    }
}

/// Whether `uri` is an expansion of the RFC 6570 `template`: literal parts
/// match exactly; a simple `{var}` takes one or more characters but no `/`,
/// `?` or `#`; `{+var}`, `{#var}` take any; `{?…}` and `{&…}` take the rest.
fn template_matches(template: &str, uri: &str) -> bool {
    enum Part<'a> {
        Lit(&'a str),
        Var(Option<char>),
    }
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            parts.push(Part::Lit(&rest[..open]));
        }
        parts.push(Part::Var(
            rest[open + 1..]
                .chars()
                .next()
                .filter(|c| "+#./;?&".contains(*c)),
        ));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest));
    }
    fn go(parts: &[Part<'_>], s: &str) -> bool {
        match parts.split_first() {
            None => s.is_empty(),
            Some((Part::Lit(l), more)) => s.strip_prefix(l).is_some_and(|s| go(more, s)),
            Some((Part::Var(Some('?' | '&')), more)) => (0..=s.len())
                .filter(|&k| s.is_char_boundary(k))
                .any(|k| (k == 0 || s.starts_with(['?', '&'])) && go(more, &s[k..])),
            Some((Part::Var(op), more)) => {
                let any = matches!(op, Some('+' | '#'));
                s.char_indices()
                    .take_while(|&(_, c)| any || !"/?#".contains(c))
                    .any(|(i, c)| go(more, &s[i + c.len_utf8()..]))
            }
        }
    }
    go(&parts, uri)
}

impl Host {
    /// Where a client's resource URI goes.
    async fn route_resource(&self, uri: &str) -> Result<Route, HostError> {
        self.route_resource_within(uri, &|_| true).await
    }

    /// Where a resource URI goes for a client that sees only the servers
    /// `sees` admits: the others are not found.
    pub async fn route_resource_within(
        &self,
        uri: &str,
        sees: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Route, HostError> {
        let snapshot = self.snapshot().await?;
        let route = match uri.starts_with(super::skills::SCHEME) {
            true => snapshot
                .skills()
                .route_within(uri, sees)
                .map(|(server, uri)| Route::skill(&server, &uri)),
            false => snapshot.resources().route_within(uri, sees),
        };
        route.ok_or_else(|| match skill_form(uri) {
            Some(read_as) => HostError::SkillFileNotFound {
                uri: uri.to_string(),
                read_as,
            },
            None => HostError::ResourceNotFound(uri.to_string()),
        })
    }

    /// Reads a resource; the answer's URIs are the ones the client knows.
    /// The read is counted in the rate limits, guarded and audited, as a
    /// local caller's (see [`crate::host::pipeline`]).
    pub async fn read_resource(&self, uri: &str) -> Result<Value, HostError> {
        let route = self.route_resource(uri).await?;
        let caller = Caller::local(std::sync::Arc::new(Unattended));
        self.read_routed_as(&caller, &route, Default::default())
            .await
    }

    /// Reads the resource `route` leads to for `caller`, along the path
    /// reads take (scope, rate limits, the guards on the reading, the audit
    /// line).
    pub async fn read_routed_as(
        &self,
        caller: &Caller,
        route: &Route,
        options: crate::upstream::CallOptions,
    ) -> Result<Value, HostError> {
        let asked = route.exposed(&route.uri);
        let what = Read::Resource {
            uri: &route.uri,
            asked: &asked,
            skill: route.skill,
        };
        let read = |_| self.read_routed(caller.who(), route, options);
        let read = Box::pin(super::pipeline::read(
            &*self.calls,
            caller,
            &route.server,
            what,
            read,
        ))
        .await?;
        let mut read = match read {
            super::RawResult::Resource(read) => serde_json::to_value(read).unwrap_or(Value::Null),
            // A read is a read, whatever the guards did.
            _ => Value::Null,
        };
        if let Some(contents) = read.get_mut("contents").and_then(Value::as_array_mut) {
            for c in contents {
                if let Some(u) = c.get("uri").and_then(Value::as_str) {
                    c["uri"] = Value::String(route.exposed(u));
                }
            }
        }
        Ok(read)
    }

    /// Reads the resource `route` leads to, as its server answered.
    async fn read_routed(
        &self,
        who: crate::lifecycle::Who<'_>,
        route: &Route,
        options: crate::upstream::CallOptions,
    ) -> Result<super::RawResult, HostError> {
        let timeout = self.manager.call_timeout(&route.server);
        let need = crate::upstream::Need::Any;
        let read = self
            .manager
            .with_connection_as(&route.server, who, need, |c| {
                let uri = route.uri.clone();
                async move { c.read_resource(&uri, timeout, &options).await }
            });
        let read = super::upstream_span("resources/read", &route.server, &route.uri, read).await?;
        if route.skill {
            self.check_skill_file(route, &read).await?;
        }
        Ok(super::RawResult::Resource(read))
    }

    /// The entries of the skill folder `route` leads to, as its server
    /// lists them, under the URIs the client knows.
    pub async fn read_directory(
        &self,
        route: &Route,
        cursor: Option<&str>,
    ) -> Result<rmcp::model::ListResourcesResult, HostError> {
        let timeout = self.manager.call_timeout(&route.server);
        let listed = self
            .manager
            .with_connection(&route.server, |c| {
                let (uri, cursor) = (route.uri.clone(), cursor.map(str::to_string));
                async move { c.read_directory(&uri, cursor.as_deref(), timeout).await }
            })
            .await?;
        let mut listed = serde_json::to_value(listed).unwrap_or_default();
        if let Some(items) = listed.get_mut("resources").and_then(Value::as_array_mut) {
            for item in items {
                if let Some(u) = item.get("uri").and_then(Value::as_str) {
                    item["uri"] = Value::String(route.exposed(u));
                }
            }
        }
        serde_json::from_value(listed).map_err(|e| HostError::Skill(e.to_string()))
    }

    /// A skill file's bytes as read must be those its server listed (size
    /// and digest), never passed on otherwise.
    async fn check_skill_file(
        &self,
        route: &Route,
        read: &rmcp::model::ReadResourceResult,
    ) -> Result<(), HostError> {
        let snapshot = self.snapshot().await?;
        let listed = snapshot.skills().listed(&route.server, &route.uri);
        let refused = |e: String| {
            HostError::Skill(format!(
                "{} refused: {e} (its server changed it, or sent other bytes)",
                route.exposed(&route.uri)
            ))
        };
        for bytes in super::skills::bytes_of(read).map_err(refused)? {
            super::skills::verify(listed, &bytes).map_err(refused)?;
        }
        Ok(())
    }

    /// Starts (`subscribe`) or ends watching a resource for one more or one
    /// less session; the server is asked only for the first and after the last.
    pub async fn watch_resource(&self, route: &Route, subscribe: bool) -> Result<(), HostError> {
        let key = (route.server.clone(), route.uri.clone());
        let ask = {
            let mut watched = self.watched.lock().unwrap_or_else(|p| p.into_inner());
            let n = watched.entry(key.clone()).or_insert(0);
            let before = *n;
            *n = if subscribe {
                before + 1
            } else {
                before.saturating_sub(1)
            };
            let after = *n;
            if after == 0 {
                watched.remove(&key);
            }
            (before == 0) != (after == 0)
        };
        if !ask {
            return Ok(());
        }
        let timeout = self.manager.call_timeout(&route.server);
        let need = crate::upstream::Need::ResourceUpdates;
        self.manager
            .with_connection_for(&route.server, need, |c| {
                let uri = route.uri.clone();
                async move { c.watch_resource(&uri, subscribe, timeout).await }
            })
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offers(resources: &[&str], templates: &[&str]) -> Offers {
        Offers {
            prompts: vec![],
            resources: resources
                .iter()
                .map(|u| json!({"uri": u, "name": u}))
                .collect(),
            templates: templates
                .iter()
                .map(|t| json!({"uriTemplate": t, "name": t}))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn templates_match_their_expansions_only() {
        let t = "test://template/{id}/data";
        assert!(template_matches(t, "test://template/123/data"));
        assert!(!template_matches(t, "test://template/1/2/data"));
        assert!(!template_matches(t, "test://template//data"));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches("s://q{?x,y}", "s://q?x=1&y=2"));
        assert!(template_matches("s://q{?x,y}", "s://q"));
        assert!(!template_matches("s://a/{id}", "s://b/1"));
    }

    #[test]
    fn unique_uris_pass_and_shared_ones_are_mapped_both_ways() {
        let map = ResourceMap::build(&[
            (
                "a".into(),
                offers(&["x://one", "x://shared"], &["t://{id}"]),
            ),
            (
                "b".into(),
                offers(&["x://two", "x://shared"], &["u://{id}/v"]),
            ),
        ]);
        let exposed: Vec<&str> = map
            .resources()
            .iter()
            .map(|r| r.item["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            exposed,
            [
                "x://one",
                "mcpw:a/x://shared",
                "x://two",
                "mcpw:b/x://shared"
            ]
        );
        let route = |u: &str| map.route(u).map(|r| (r.server, r.uri, r.mapped));
        assert_eq!(
            route("x://two"),
            Some(("b".into(), "x://two".into(), false))
        );
        assert_eq!(
            route("mcpw:b/x://shared"),
            Some(("b".into(), "x://shared".into(), true))
        );
        assert_eq!(route("x://shared"), None, "ambiguous without the prefix");
        assert_eq!(
            route("u://7/v"),
            Some(("b".into(), "u://7/v".into(), false))
        );
        assert_eq!(route("t://9"), Some(("a".into(), "t://9".into(), false)));
        assert_eq!(route("nowhere://x"), None);
        assert_eq!(map.exposed("a", "x://shared"), "mcpw:a/x://shared");
        assert_eq!(map.exposed("a", "x://one"), "x://one");
    }

    #[test]
    fn a_shared_view_keeps_its_scheme_both_ways() {
        let view = "ui://get-time/mcp-app.html";
        let map = ResourceMap::build(&[
            ("clock".into(), offers(&[view], &[])),
            ("other".into(), offers(&[view, "ui://own/app.html"], &[])),
        ]);
        assert_eq!(
            map.exposed("clock", view),
            "ui://mcpw/clock/get-time/mcp-app.html"
        );
        assert_eq!(
            map.exposed("other", "ui://own/app.html"),
            "ui://own/app.html"
        );
        let route = map.route("ui://mcpw/other/get-time/mcp-app.html").unwrap();
        assert_eq!((route.server.as_str(), route.uri.as_str()), ("other", view));
        assert_eq!(route.exposed(view), "ui://mcpw/other/get-time/mcp-app.html");
        assert!(map.maps("clock") && map.maps("other"));
        assert!(
            map.route("ui://mcpw/nobody/get-time/mcp-app.html")
                .is_none()
        );
    }

    #[test]
    fn skill_files_are_the_skills_never_plain_resources() {
        let map = ResourceMap::build(&[
            (
                "web".into(),
                offers(&["skill://review/SKILL.md"], &["skill://review/{path*}"]),
            ),
            (
                "data".into(),
                offers(&["skill://review/SKILL.md", "doc://x"], &[]),
            ),
        ]);
        let listed = |items: &[Offered]| items.iter().map(|o| o.uri.clone()).collect::<Vec<_>>();
        assert_eq!(listed(map.resources()), ["doc://x"]);
        assert!(map.templates().is_empty());
        for uri in [
            "mcpw:data/skill://review/SKILL.md",
            "skill://review/SKILL.md",
        ] {
            assert_eq!(map.route(uri), None, "{uri}");
        }
        assert_eq!(
            skill_form("mcpw:data/skill://review/SKILL.md").as_deref(),
            Some("skill://data/review/SKILL.md")
        );
        assert_eq!(skill_form("mcpw:data/doc://x"), None);
        assert_eq!(
            map.exposed("web", "skill://review/ref/a.md"),
            "skill://web/review/ref/a.md"
        );
    }

    #[test]
    fn a_lone_resource_server_takes_unlisted_uris() {
        let map = ResourceMap::build(&[
            ("tools-only".into(), Offers::default()),
            ("docs".into(), offers(&["doc://index"], &[])),
        ]);
        assert_eq!(
            map.route("doc://page/2").map(|r| r.server),
            Some("docs".into())
        );
    }

    #[test]
    fn routes_within_some_servers_ignore_the_others() {
        let map = ResourceMap::build(&[
            (
                "a".into(),
                offers(&["x://one", "x://shared"], &["t://{id}"]),
            ),
            (
                "b".into(),
                offers(&["x://two", "x://shared"], &["t://{+path}"]),
            ),
            ("c".into(), offers(&["z://three"], &[])),
        ]);
        let a_and_c = |s: &str| s != "b";
        let route = |u: &str| map.route_within(u, &a_and_c).map(|r| r.server);
        assert_eq!(route("x://one"), Some("a".into()));
        assert_eq!(route("z://three"), Some("c".into()));
        assert_eq!(route("x://two"), None, "b's resource is not found");
        assert_eq!(route("mcpw:b/x://shared"), None);
        assert_eq!(route("mcpw:a/x://shared"), Some("a".into()));
        // Both templates match: ambiguous, unless b is out of sight.
        assert_eq!(map.route("t://9").map(|r| r.server), None);
        assert_eq!(route("t://9"), Some("a".into()));
        // Among the servers seen, a lone one takes unlisted URIs.
        let only_c = |s: &str| s == "c";
        assert_eq!(
            map.route_within("y://else", &only_c).map(|r| r.server),
            Some("c".into())
        );
        assert_eq!(map.route_within("x://one", &|_| false), None);
    }
}
