//! The conformance suite of `mcpw plugin test`: a guest, loaded with the
//! production sandbox, must answer well-formed (the host's contract checks),
//! the same way twice, and survive hostile input within its time budget.

mod guard;
mod ranking;
mod script;

use super::guest::{GuestModule, LoadOptions};
use super::roles::{DirectOptions, DirectPolicy, Namer, NamingOptions};
use super::{PluginError, Role};
use crate::catalog::{Entry, Tool};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One check's outcome.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    /// The role checked.
    pub role: String,
    /// What was checked.
    pub name: String,
    /// `None` when it passed, else why it failed.
    pub failure: Option<String>,
    /// How long it took, in milliseconds.
    pub ms: u64,
}

impl Check {
    /// Did it pass?
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.failure {
            None => write!(f, "PASS  {}: {} ({} ms)", self.role, self.name, self.ms),
            Some(why) => write!(
                f,
                "FAIL  {}: {} ({} ms): {why}",
                self.role, self.name, self.ms
            ),
        }
    }
}

/// A synthetic catalog of `n` tools over 20 servers, with realistic names,
/// descriptions and schemas.
pub fn synthetic_catalog(n: usize) -> Vec<Tool> {
    const VERBS: &[&str] = &[
        "create", "list", "get", "update", "delete", "search", "read", "write", "run", "send",
    ];
    const NOUNS: &[&str] = &[
        "issue", "file", "page", "message", "branch", "user", "ticket", "image", "table", "event",
    ];
    (0..n)
        .map(|i| {
            let (v, o) = (VERBS[i % VERBS.len()], NOUNS[(i / VERBS.len()) % NOUNS.len()]);
            let mut t = Tool::new(format!("server-{:02}", i % 20), format!("{v}_{o}_{i}"), format!("{v} a {o} (tool number {i})"));
            t.input_schema = json!({"type": "object", "properties": {"id": {"type": "string", "description": format!("the {o}")}}}).into();
            t
        })
        .collect()
}

fn entries(tools: &[Tool]) -> Arc<[Entry]> {
    tools
        .iter()
        .map(|t| Entry {
            name: format!("{}__{}", t.server.replace('-', "_"), t.name),
            tool: t.clone().into(),
        })
        .collect()
}

/// Tools built to break parsers: NUL bytes, a 1 MiB description, odd Unicode,
/// escapes that look like invalid UTF-8 in a schema, an empty name.
pub fn hostile_catalog() -> Vec<Tool> {
    let mut tools = vec![
        Tool::new("nul", "with\0nul", "a description with a \0 NUL byte"),
        Tool::new("big", "big_description", "word ".repeat(200_000)),
        Tool::new(
            "uni",
            "ünïcødé_工具_🔧",
            "名前 and emoji 🚀 and RTL \u{202e}txet",
        ),
        Tool::new("empty", "", ""),
        Tool::new("long", "x".repeat(500), "a very long name"),
    ];
    let mut escapes = Tool::new("esc", "escapes", "schema with odd escapes");
    escapes.input_schema = serde_json::from_str(r#"{"type":"object","properties":{"\ud800x":{"type":"string","description":"lone surrogate \\udfff and \\u0000"}}}"#)
        .unwrap_or_else(|_| json!({"type": "object", "properties": {"\u{fffd}": {"description": "\\ud800 \\u0000 \u{0}"}}}).into());
    tools.push(escapes);
    tools
}

struct Suite {
    checks: Vec<Check>,
}

impl Suite {
    fn run(&mut self, role: Role, name: &str, f: impl FnOnce() -> Result<(), String>) {
        let start = Instant::now();
        let failure = f().err();
        self.checks.push(Check {
            role: role.to_string(),
            name: name.to_string(),
            failure,
            ms: start.elapsed().as_millis() as u64,
        });
    }
}

fn err(e: PluginError) -> String {
    e.to_string()
}

/// Runs every check for the roles the guest implements (or just `only`).
pub fn run(
    name: &str,
    wasm: &[u8],
    options: LoadOptions,
    only: Option<Role>,
) -> Result<Vec<Check>, PluginError> {
    let module = GuestModule::load(name, wasm, options)?;
    let roles: Vec<Role> = module
        .roles()
        .into_iter()
        .filter(|r| only.is_none_or(|o| o == *r))
        .collect();
    if let Some(role) = only {
        module.require(role)?;
    }
    let mut suite = Suite { checks: Vec::new() };
    for role in roles {
        match role {
            Role::Naming => naming(&mut suite, &module),
            Role::DirectTools => direct(&mut suite, &module),
            Role::Ranking => ranking::checks(&mut suite, &module),
            Role::Script => script::checks(&mut suite, &module),
            Role::Guard => guard::checks(&mut suite, &module),
        }
    }
    Ok(suite.checks)
}

fn naming(suite: &mut Suite, module: &Arc<GuestModule>) {
    let role = Role::Naming;
    let namer = match Namer::new(module.clone()) {
        Ok(n) => n,
        Err(e) => return suite.run(role, "loads", || Err(err(e))),
    };
    let catalog = synthetic_catalog(1000);
    let opts = NamingOptions {
        reserved: vec!["mcp".into(), "ToolSearch".into()],
        ..Default::default()
    };
    suite.run(
        role,
        "1,000 tools: one valid, unique name each (or a duplicate/reserved outcome)",
        || namer.names(&catalog, &opts).map(|_| ()).map_err(err),
    );
    suite.run(role, "the same answer twice", || {
        let (a, b) = (
            namer.names(&catalog, &opts).map_err(err)?,
            namer.names(&catalog, &opts).map_err(err)?,
        );
        if a == b {
            Ok(())
        } else {
            Err("two calls with the same input gave different names".into())
        }
    });
    suite.run(role, "an empty catalog", || {
        match namer.names(&[] as &[Tool], &opts) {
            Ok(v) if v.is_empty() => Ok(()),
            Ok(v) => Err(format!("{} outcomes for no tools", v.len())),
            Err(e) => Err(err(e)),
        }
    });
    suite.run(
        role,
        "hostile names and descriptions (NUL, 1 MiB, Unicode, odd escapes)",
        || {
            namer
                .names(&hostile_catalog(), &opts)
                .map(|_| ())
                .map_err(err)
        },
    );
    suite.run(role, "100,000 tools within the deadline", || {
        namer
            .names(&synthetic_catalog(100_000), &opts)
            .map(|_| ())
            .map_err(err)
    });
}

fn direct(suite: &mut Suite, module: &Arc<GuestModule>) {
    let role = Role::DirectTools;
    let policy = match DirectPolicy::new(module.clone()) {
        Ok(p) => p,
        Err(e) => return suite.run(role, "loads", || Err(err(e))),
    };
    let e = entries(&synthetic_catalog(1000));
    let cases = [
        None,
        Some("*"),
        Some("__none__"),
        Some("server-01,server-02/list_issue_11"),
        Some(",, ,/,\0"),
    ];
    for case in cases {
        let opts = DirectOptions {
            env_override: case.map(str::to_string),
            servers: vec![],
        };
        suite.run(
            role,
            &format!(
                "MCP_DIRECT_TOOLS={}: indices in range, ascending",
                case.map_or("(unset)".into(), |c| format!("{c:?}"))
            ),
            || policy.select(&e, &opts).map(|_| ()).map_err(err),
        );
    }
    let opts = DirectOptions {
        env_override: Some("*".into()),
        servers: vec![],
    };
    suite.run(role, "the same answer twice", || {
        let (a, b) = (
            policy.select(&e, &opts).map_err(err)?,
            policy.select(&e, &opts).map_err(err)?,
        );
        if a == b {
            Ok(())
        } else {
            Err("two calls with the same input gave different answers".into())
        }
    });
    suite.run(role, "an empty catalog", || {
        match policy.select(&[], &opts) {
            Ok(v) if v.is_empty() => Ok(()),
            Ok(v) => Err(format!("{} indices for no tools", v.len())),
            Err(e) => Err(err(e)),
        }
    });
    suite.run(role, "hostile input", || {
        policy
            .select(&entries(&hostile_catalog()), &opts)
            .map(|_| ())
            .map_err(err)
    });
    suite.run(role, "100,000 tools within the deadline", || {
        policy
            .select(&entries(&synthetic_catalog(100_000)), &opts)
            .map(|_| ())
            .map_err(err)
    });
}

/// An error value is an acceptable answer to odd input; a trap or a broken answer is not.
fn answer_or_error_value<T>(r: Result<T, PluginError>) -> Result<(), String> {
    match r {
        Ok(_) | Err(PluginError::Guest { .. }) => Ok(()),
        Err(e) => Err(err(e)),
    }
}

/// The slowest check, for a summary line.
pub fn slowest(checks: &[Check]) -> Option<(&Check, Duration)> {
    checks
        .iter()
        .max_by_key(|c| c.ms)
        .map(|c| (c, Duration::from_millis(c.ms)))
}
