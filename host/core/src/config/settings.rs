//! The settings, one table: for each key, how its value is checked as a
//! file is read ([`super::validate`]), whether a project file may propose it
//! ([`super::load`]), and where it goes in [`Settings`], read once there so
//! that the rest of mcpw reads typed values, never the JSON.

use super::model::{AllowInstall, Provenance, StoreKind};
use super::{PrefixMode, Settings};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

/// What is wrong with a setting's value, or `None` when it is good.
pub type Check = fn(&Value) -> Option<String>;

/// Whether a project file may set a key.
pub enum Project {
    /// A project proposes it; the user's file wins.
    Proposes,
    /// A project may propose some values, not those this says why of.
    ProposesUnless(fn(&Value) -> Option<&'static str>),
    /// Only the user sets it, for this reason.
    Refused(&'static str),
}

/// One setting.
pub struct Setting {
    /// Its key in `settings`.
    pub key: &'static str,
    /// Its check; `None` for those with a reader of their own in
    /// [`super::validate`] (paths made absolute, nested fields named).
    pub check: Option<Check>,
    /// Whether a project file may set it.
    pub project: Project,
    /// Puts a checked value into [`Settings`].
    pub read: fn(&Value, &mut Settings, &Context),
}

/// What reading needs besides the value.
pub struct Context {
    /// mcpw's state folder (where the audit trail goes by default).
    pub state_dir: PathBuf,
}

const WHO: &str = "only the user says who may do what";
const WHERE: &str = "it says what is written where";
const SECRETS: &str = "it says where secrets and state go, and may run a command";
const SCRIPTS: &str = "it runs, or widens, the agent's scripts";
const MEMORY: &str = "it bounds the memory a client can make mcpw hold";

fn string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// `perPerson`: `{"maxConnections": N}`, N from 1 to 100000.
fn per_person(v: &Value) -> Option<String> {
    let Some(obj) = v.as_object() else {
        return Some(format!("expected {{\"maxConnections\": N}}, found {v}"));
    };
    if let Some(key) = obj.keys().find(|k| *k != "maxConnections") {
        return Some(format!("unknown field {key} (known: maxConnections)"));
    }
    match obj.get("maxConnections").map(Value::as_u64) {
        None | Some(Some(1..=100_000)) => None,
        Some(_) => Some(format!(
            "expected maxConnections from 1 to 100000, found {}",
            obj["maxConnections"]
        )),
    }
}

fn boolean(v: &Value, expected: &str) -> Option<String> {
    (!v.is_boolean()).then(|| format!("expected {expected}, found {v}"))
}

/// Why `v` is not one of the words `choices` (`"closed" or "open"`).
fn one_of(v: &Value, choices: &[&str]) -> Option<String> {
    if v.as_str().is_some_and(|s| choices.contains(&s)) {
        return None;
    }
    let quoted: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
    Some(format!("expected {}, found {v}", quoted.join(" or ")))
}

/// Every setting mcpw reads.
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: "toolPrefix",
        check: Some(|v| match v.as_str().and_then(PrefixMode::parse) {
            Some(_) => None,
            None => Some(format!(
                "expected \"server\", \"short\" or \"none\", found {v}"
            )),
        }),
        project: Project::Refused("it renames the tools your `approve` globs match"),
        read: |v, s, _| {
            if let Some(p) = v.as_str().and_then(PrefixMode::parse) {
                s.tool_prefix = p;
            }
        },
    },
    Setting {
        key: "allowInstall",
        check: Some(|v| match AllowInstall::parse(v) {
            Some(_) => None,
            None => Some(format!(
                "expected \"ask\", \"deny\" or a list of registry name globs, found {v}"
            )),
        }),
        project: Project::Refused(WHO),
        read: |v, s, _| s.allow_install = AllowInstall::parse(v),
    },
    Setting {
        key: "registry",
        check: Some(|v| match v.as_str() {
            Some(u) if u.starts_with("https://") || u.starts_with("http://") => None,
            _ => Some(format!(
                "expected the base URL of an MCP registry (https://…), found {v}"
            )),
        }),
        project: Project::Refused("it says where servers are installed from"),
        read: |v, s, _| s.registry = string(v),
    },
    Setting {
        key: "idleTimeout",
        check: Some(|v| match v.as_f64() {
            Some(n) if n >= 0.0 => None,
            _ => Some(format!(
                "expected a number of minutes (0 = never), found {v}"
            )),
        }),
        project: Project::Proposes,
        read: |v, s, _| s.idle_timeout = v.as_f64().unwrap_or(s.idle_timeout),
    },
    Setting {
        key: "exposure",
        check: Some(|v| match v.as_str().and_then(super::Exposure::parse) {
            Some(_) => None,
            None => Some(format!(
                "expected \"proxy\", \"tool-search\", \"direct\", \"code\" or \"auto\", found {v}"
            )),
        }),
        // Scripts run the agent's code.
        project: Project::ProposesUnless(|v| {
            (v == "code").then_some("the code exposure runs the agent's scripts")
        }),
        read: |v, s, _| s.exposure = v.as_str().and_then(super::Exposure::parse),
    },
    Setting {
        key: "callTimeoutMs",
        check: Some(|v| match v.as_u64() {
            Some(n) if n > 0 => None,
            _ => Some(format!(
                "expected a positive number of milliseconds, found {v}"
            )),
        }),
        project: Project::Proposes,
        read: |v, s, _| s.call_timeout_ms = v.as_u64().unwrap_or(s.call_timeout_ms),
    },
    Setting {
        key: "maxRequestsInFlight",
        check: Some(|v| match v.as_u64() {
            Some(n) if n > 0 => None,
            _ => Some(format!("expected a positive number of requests, found {v}")),
        }),
        project: Project::Refused(MEMORY),
        read: |v, s, _| {
            if let Some(n) = v.as_u64() {
                s.max_requests_in_flight = usize::try_from(n).unwrap_or(usize::MAX).max(1);
            }
        },
    },
    Setting {
        key: "toolSearchBudget",
        check: Some(|v| match v.as_u64() {
            Some(n) if n > 0 => None,
            _ => Some(format!("expected a positive number of tokens, found {v}")),
        }),
        project: Project::Proposes,
        read: |v, s, _| {
            if let Some(b) = v.as_u64() {
                s.tool_search_budget = b as usize;
            }
        },
    },
    Setting {
        key: "autoExposureBudget",
        check: Some(|v| match v.as_u64() {
            Some(_) => None,
            _ => Some(format!(
                "expected a number of tokens (0: always tool-search), found {v}"
            )),
        }),
        project: Project::Proposes,
        read: |v, s, _| {
            if let Some(b) = v.as_u64() {
                s.auto_exposure_budget = b as usize;
            }
        },
    },
    Setting {
        key: "perPerson",
        check: Some(per_person),
        project: Project::Refused("it sets how many connections the gateway holds open"),
        read: |v, s, _| {
            let max = v.get("maxConnections").and_then(Value::as_u64);
            s.per_person_max_connections = max.map(|n| n as usize);
        },
    },
    Setting {
        key: "searchProfile",
        check: Some(|v| match v.as_str() {
            Some(p) if !p.trim().is_empty() => None,
            _ => Some(format!(
                "expected the name of a ranking profile (the default guest offers \"default\", \"words\", \"meaning\" and \"seed\"), found {v}"
            )),
        }),
        project: Project::Proposes,
        read: |v, s, _| s.search_profile = string(v),
    },
    Setting {
        key: "credentialStore",
        check: Some(|v| match v.as_str().and_then(StoreKind::parse) {
            Some(_) => None,
            None => Some(format!("expected \"keyring\" or \"file\", found {v}")),
        }),
        project: Project::Refused(SECRETS),
        read: |v, s, _| {
            if let Some(kind) = v.as_str().and_then(StoreKind::parse) {
                s.credential_store = kind;
            }
        },
    },
    // The value found is shown without its password.
    Setting {
        key: "sharedState",
        check: Some(|v| match v.as_str() {
            Some(url) if super::shared_url::is_usable(url) => None,
            _ => Some(format!(
                "expected a Redis URL, redis://HOST:PORT[/DB], found {}",
                v.as_str()
                    .map_or_else(|| v.to_string(), super::shared_url::redact)
            )),
        }),
        project: Project::Refused(SECRETS),
        read: |v, s, _| s.shared_state = string(v),
    },
    // The value is not shown: it may be the key itself.
    Setting {
        key: "sharedStateKey",
        check: Some(|v| match v.as_str() {
            Some(k) if !k.trim().is_empty() => None,
            _ => Some("expected the key as ${VAR} or !command".into()),
        }),
        project: Project::Refused(SECRETS),
        read: |v, s, _| s.shared_state_key = string(v),
    },
    Setting {
        key: "pinTools",
        check: Some(|v| boolean(v, "true or false")),
        project: Project::Refused("only the user says which servers' tools are pinned"),
        read: |v, s, _| s.pin_tools = v == &Value::Bool(true),
    },
    Setting {
        key: "codeMode",
        check: Some(|v| boolean(v, "true or false")),
        project: Project::Refused(SCRIPTS),
        read: |v, s, _| s.code_mode = v.as_bool().unwrap_or(false),
    },
    Setting {
        key: "scriptLimits",
        check: Some(script_limits),
        project: Project::Refused(SCRIPTS),
        read: |v, s, _| {
            if let Some(limits) = v.as_object() {
                s.script_limits = super::ScriptLimits::read(limits, s.script_limits);
            }
        },
    },
    Setting {
        key: "approve",
        check: Some(|v| super::ApproveRule::parse(v).err()),
        project: Project::Refused(WHO),
        read: |v, s, _| {
            if let Ok(rule) = super::ApproveRule::parse(v) {
                s.approve = rule;
            }
        },
    },
    Setting {
        key: "audit",
        check: Some(crate::audit::AuditConfig::check),
        project: Project::Refused(WHERE),
        read: |v, s, c| s.audit = crate::audit::AuditConfig::from_setting(Some(v), &c.state_dir),
    },
    Setting {
        key: "guardFailure",
        check: Some(|v| one_of(v, &["closed", "open"])),
        project: Project::Refused(WHO),
        read: |v, s, _| s.guards_fail_open = v == "open",
    },
    Setting {
        key: "rateLimit",
        check: Some(|v| match v.as_str() {
            Some(r) => super::rate::Rate::parse(r).err(),
            None => Some(format!("expected \"N/s\", \"N/min\" or \"N/h\", found {v}")),
        }),
        project: Project::Refused(WHO),
        read: |v, s, _| s.rate_limit = v.as_str().and_then(|r| super::rate::Rate::parse(r).ok()),
    },
    Setting {
        key: "approveWithoutClient",
        check: Some(|v| one_of(v, &["deny", "allow"])),
        project: Project::Refused(WHO),
        read: |v, s, _| s.approve_without_client = v == "allow",
    },
    Setting {
        key: "projectServers",
        check: Some(
            |v| match v.as_str().and_then(super::trust::ProjectServers::parse) {
                Some(_) => None,
                None => Some(format!(
                    "expected \"ask\", \"trust\" or \"ignore\", found {v}"
                )),
            },
        ),
        project: Project::Refused(WHO),
        // Read as the config loads, before its project files: `Config::trust`.
        read: |_, _, _| {},
    },
    Setting {
        key: "captureStats",
        check: Some(|_| None),
        project: Project::Refused(WHERE),
        read: |v, s, _| s.capture_stats = capture_stats(v),
    },
    Setting {
        key: "toonEncode",
        check: Some(|v| super::results::ToonEncode::parse(v).err()),
        project: Project::Proposes,
        read: |v, s, _| {
            if let Ok(t) = super::results::ToonEncode::parse(v) {
                s.results.toon_encode = t;
            }
        },
    },
    Setting {
        key: "resultBudget",
        check: Some(|v| super::results::read_budget(v).err()),
        project: Project::Proposes,
        read: |v, s, _| {
            if let Ok(b) = super::results::read_budget(v) {
                s.results.budget = b;
            }
        },
    },
    Setting {
        key: "resultStore",
        check: Some(super::results::StoreSettings::check),
        project: Project::Refused(WHERE),
        read: |v, s, _| s.results.store = super::results::StoreSettings::read(v),
    },
    Setting {
        key: "resultFormat",
        check: Some(
            |v| match v.as_str().and_then(super::results::Format::parse) {
                Some(_) => None,
                None => Some(format!("expected \"json\", \"toon\" or \"csv\", found {v}")),
            },
        ),
        project: Project::Proposes,
        read: |v, s, _| s.results.format = super::results::Format::read(v).ok(),
    },
    Setting {
        key: "search",
        check: None,
        project: Project::Refused("it may fetch a model from the network"),
        read: |v, s, _| s.search = super::search::SearchSettings::read(v),
    },
    Setting {
        key: "guards",
        check: None,
        project: Project::Refused("it loads WebAssembly guests that see every call"),
        read: |v, s, _| {
            let paths = v.as_array().into_iter().flatten().filter_map(Value::as_str);
            s.guards = paths.map(PathBuf::from).collect();
        },
    },
    Setting {
        key: "plugins",
        check: None,
        project: Project::Refused(WHO),
        read: |v, s, _| {
            if let Some(plugins) = v.as_object() {
                s.plugins = plugins_of(plugins);
            }
        },
    },
];

/// The setting named `key`.
pub fn named(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// Why a project file may not set `key` to `value`, if it may not.
pub fn refused_in_project(key: &str, value: &Value) -> Option<&'static str> {
    match named(key).map(|s| &s.project) {
        Some(Project::Proposes) => None,
        Some(Project::ProposesUnless(why)) => why(value),
        Some(Project::Refused(why)) => Some(why),
        None => Some(WHO),
    }
}

/// Validated, merged settings read into [`Settings`], each once.
pub fn interpret(raw: Map<String, Value>, context: &Context) -> Settings {
    let mut s = Settings::default();
    for (key, value) in &raw {
        if let Some(setting) = named(key) {
            (setting.read)(value, &mut s, context);
        }
    }
    s.raw = raw;
    s
}

/// `scriptLimits`: an object of positive integers under known keys.
fn script_limits(v: &Value) -> Option<String> {
    let Some(object) = v.as_object() else {
        return Some(format!(
            "expected an object, found {}",
            super::jsonc::kind(v)
        ));
    };
    for (key, value) in object {
        if !super::SCRIPT_LIMIT_KEYS.contains(&key.as_str()) {
            return Some(format!(
                "unknown limit {key:?}: the limits are {}",
                super::SCRIPT_LIMIT_KEYS.join(", ")
            ));
        }
        if !matches!(value.as_u64(), Some(n) if n > 0) {
            return Some(format!("{key}: expected a positive integer, found {value}"));
        }
    }
    None
}

/// `settings.captureStats`: `true`, or `{path, flushDelayMs}`.
fn capture_stats(v: &Value) -> Option<super::CaptureStats> {
    match v {
        Value::Bool(true) => Some(super::CaptureStats::default()),
        Value::Object(o) => Some(super::CaptureStats {
            path: o.get("path").and_then(Value::as_str).map(PathBuf::from),
            flush_delay_ms: o.get("flushDelayMs").and_then(Value::as_u64),
        }),
        _ => None,
    }
}

/// `settings.plugins`: guests per role, their grants and the limits.
fn plugins_of(plugins: &Map<String, Value>) -> super::PluginSettings {
    use super::{Capability, Grants, Role};
    let mut p = super::PluginSettings::default();
    for role in Role::ALL {
        if let Some(path) = plugins.get(role.config_key()).and_then(Value::as_str) {
            p.guests.insert(role, PathBuf::from(path));
        }
    }
    for (role, caps) in plugins
        .get("grants")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let Some(role) = Role::parse(role) else {
            continue;
        };
        let g = caps
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_str().and_then(Capability::parse))
            .fold(Grants::none(), Grants::with);
        p.grants.insert(role, g);
    }
    for (role, globs) in plugins
        .get("calls")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(role) = Role::parse(role) {
            let globs = globs.as_array().into_iter().flatten();
            let globs = globs.filter_map(Value::as_str).map(str::to_string);
            p.calls.insert(role, globs.collect());
        }
    }
    if let Some(limits) = plugins.get("limits").and_then(Value::as_object) {
        if let Some(m) = limits.get("memoryMiB").and_then(Value::as_u64) {
            p.limits.memory_bytes = (m as usize) << 20;
        }
        if let Some(d) = limits.get("deadlineMs").and_then(Value::as_u64) {
            p.limits.deadline = Duration::from_millis(d);
        }
    }
    p
}

/// What a definition of one [`Provenance`] may do. The user's own file may
/// do everything; whatever comes from outside it is data until the user
/// approves it, and some of it stays data after.
pub struct Rights {
    /// Whose definitions these are.
    pub provenance: Provenance,
    /// How the book names them.
    pub what: &'static str,
    /// A leading `!` in `env`, `headers` or `bearerToken` runs a command.
    /// Only in mcpw's own format: in another client's file it is a character.
    pub commands: bool,
    /// `${VAR}` and `$env:VAR` expand from mcpw's environment.
    pub variables: bool,
    /// `${vault:NAME}` may name any secret the vault keeps; otherwise only
    /// the server's own (`${vault:<server>/…}`).
    pub any_vault: bool,
    /// Its `approve` may loosen the user's; otherwise it only tightens.
    pub loosens: bool,
    /// Its tools are pinned whatever `settings.pinTools` says: a change
    /// waits for `mcpw trust`.
    pub pinned: bool,
    /// Nothing of it runs before the user approves it (`mcpw trust`, or the
    /// plan `mcpw add` shows).
    pub waits: bool,
}

/// Every provenance and what it may do: the one table loaders, the trust
/// gate, pins, approval and `mcpw add` read.
pub const PROVENANCE: &[Rights] = &[
    Rights {
        provenance: Provenance::User,
        what: "your mcpw file",
        commands: true,
        variables: true,
        any_vault: true,
        loosens: true,
        pinned: false,
        waits: false,
    },
    Rights {
        provenance: Provenance::UserClient,
        what: "another client's user-level file you import",
        commands: false,
        variables: true,
        any_vault: true,
        loosens: true,
        pinned: false,
        waits: false,
    },
    Rights {
        provenance: Provenance::Project,
        what: "a project's mcpw file (`.mcp.json`, `.mcpw/mcp.json`)",
        commands: true,
        variables: true,
        any_vault: false,
        loosens: false,
        pinned: true,
        waits: true,
    },
    Rights {
        provenance: Provenance::ProjectClient,
        what: "another client's project file (`.vscode/mcp.json`, `.pi/mcp.json`), or a user-level file only a project's `imports` pulls in",
        commands: false,
        variables: true,
        any_vault: false,
        loosens: false,
        pinned: true,
        waits: true,
    },
    Rights {
        provenance: Provenance::Registry,
        what: "a registry entry `mcpw add` plans",
        commands: false,
        variables: false,
        any_vault: false,
        loosens: false,
        pinned: true,
        waits: true,
    },
    Rights {
        provenance: Provenance::Agent,
        what: "an agent's `mcp({add})` (`settings.allowInstall` globs approve in advance)",
        commands: false,
        variables: false,
        any_vault: false,
        loosens: false,
        pinned: true,
        waits: true,
    },
];

/// What definitions of `provenance` may do.
pub fn rights(provenance: Provenance) -> &'static Rights {
    PROVENANCE
        .iter()
        .find(|r| r.provenance == provenance)
        .expect("every provenance has a row")
}

/// The state folder a config's settings are read for.
pub fn context(env: &crate::paths::Environment) -> Context {
    Context {
        state_dir: env.state_dir(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The table as the book prints it (docs/src/guards.md).
    fn provenance_table() -> String {
        let mark = |b: bool| if b { "yes" } else { "no" };
        let mut out = String::from(
            "| where it comes from | runs `!cmd` | expands `${VAR}` | any `${vault:…}` | may loosen `approve` | pinned always | waits for approval |\n|---|---|---|---|---|---|---|\n",
        );
        for r in PROVENANCE {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                r.what,
                mark(r.commands),
                mark(r.variables),
                if r.any_vault { "yes" } else { "its own only" },
                mark(r.loosens),
                mark(r.pinned),
                mark(r.waits),
            ));
        }
        out
    }

    #[test]
    fn a_project_proposes_only_what_cannot_run_load_grant_or_send() {
        let proposes: Vec<&str> = SETTINGS
            .iter()
            .filter(|s| !matches!(s.project, Project::Refused(_)))
            .map(|s| s.key)
            .collect();
        let expected = [
            "idleTimeout",
            "exposure",
            "callTimeoutMs",
            "toolSearchBudget",
            "autoExposureBudget",
            "searchProfile",
            "toonEncode",
            "resultBudget",
            "resultFormat",
        ];
        assert_eq!(proposes, expected);
        assert!(refused_in_project("exposure", &json!("code")).is_some());
        assert!(refused_in_project("exposure", &json!("direct")).is_none());
        assert!(refused_in_project("sharedStateKey", &json!("!touch x")).is_some());
        assert!(refused_in_project("noSuchSetting", &json!(1)).is_some());
    }

    /// The whole table: the user's file alone is code; what a project
    /// brings waits and only tightens; a registry entry or an agent's
    /// request is literal text.
    #[test]
    fn every_provenance_has_one_row_and_only_the_users_own_is_trusted_unasked() {
        use Provenance::*;
        let all = [User, UserClient, Project, ProjectClient, Registry, Agent];
        assert_eq!(PROVENANCE.len(), all.len());
        for p in all {
            let r = rights(p);
            assert_eq!(PROVENANCE.iter().filter(|x| x.provenance == p).count(), 1);
            let own = matches!(p, User | UserClient);
            assert_eq!(r.waits, !own, "{p:?}");
            assert_eq!(r.loosens, own, "{p:?}");
            assert_eq!(r.pinned, !own, "{p:?}");
            assert_eq!(r.any_vault, own, "{p:?}");
            assert_eq!(r.commands, matches!(p, User | Project), "{p:?}");
            assert_eq!(r.variables, !matches!(p, Registry | Agent), "{p:?}");
        }
        let table = provenance_table();
        assert_eq!(table.lines().count(), all.len() + 2);
        let book = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/src/guards.md");
        let book = std::fs::read_to_string(book).unwrap();
        assert!(
            book.contains(&table),
            "docs/src/guards.md prints the table:\n{table}"
        );
    }

    #[test]
    fn each_key_once_and_read_into_its_typed_value() {
        let mut keys: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), SETTINGS.len());
        let raw = json!({"allowInstall": ["io.github.x/*"], "audit": true, "pinTools": true,
                         "credentialStore": "file", "guardFailure": "open", "exposure": "code"});
        let context = Context {
            state_dir: "/state".into(),
        };
        let s = interpret(raw.as_object().unwrap().clone(), &context);
        assert_eq!(
            s.allow_install,
            Some(AllowInstall::Globs(vec!["io.github.x/*".into()]))
        );
        let audit = s.audit.expect("audit on");
        assert_eq!(
            audit.to,
            crate::audit::AuditTarget::File("/state/audit.jsonl".into())
        );
        assert!(s.pin_tools && s.guards_fail_open);
        assert_eq!(s.credential_store, StoreKind::File);
        assert_eq!(s.exposure, Some(super::super::Exposure::Code));
    }
}
