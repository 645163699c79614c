//! How big results are guarded (see `crate::results`): `settings.resultBudget`
//! (tokens, `0` for none), `settings.resultFormat`, the older
//! `settings.toonEncode` (`true`, or a list of servers), and a server's
//! `resultBudget` and `resultFormat`: one value for all its tools, or values
//! by tool glob (the first glob that matches a tool's name wins).

use serde::Serialize;
use serde_json::Value;

/// Default `settings.resultBudget`: tokens a result may take before it is cut.
const DEFAULT_RESULT_BUDGET: usize = 10_000;

/// How a structured result is written for the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Compact JSON.
    Json,
    /// TOON: JSON's data with YAML's indentation and CSV's tables.
    Toon,
    /// CSV, for a table of rows.
    Csv,
}

impl Format {
    /// Every format, in the order they are offered.
    pub const ALL: [Format; 3] = [Format::Json, Format::Toon, Format::Csv];

    /// The format named `s` (`json`, `toon` or `csv`, in any case).
    pub fn parse(s: &str) -> Option<Format> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
    }

    /// Its name in the config.
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Toon => "toon",
            Format::Csv => "csv",
        }
    }

    pub(crate) fn read(v: &Value) -> Result<Format, String> {
        v.as_str()
            .and_then(Format::parse)
            .ok_or_else(|| format!("expected \"json\", \"toon\" or \"csv\", found {v}"))
    }
}

/// A budget in tokens: a whole number, `0` for none.
pub fn read_budget(v: &Value) -> Result<usize, String> {
    v.as_u64()
        .map(|n| n as usize)
        .ok_or_else(|| format!("expected a number of tokens (0 = no budget), found {v}"))
}

/// A server's value for all its tools, or by tool glob.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ByTool<T> {
    /// One value for every tool.
    All(T),
    /// Values by tool glob, in the file's order.
    Tools(Vec<(String, T)>),
}

impl<T: Copy> ByTool<T> {
    /// Reads a value, or an object of tool globs and values.
    pub fn parse(v: &Value, one: fn(&Value) -> Result<T, String>) -> Result<ByTool<T>, String> {
        match v {
            Value::Object(globs) => globs
                .iter()
                .map(|(g, v)| {
                    one(v)
                        .map(|t| (g.clone(), t))
                        .map_err(|e| format!("{g}: {e}"))
                })
                .collect::<Result<_, _>>()
                .map(ByTool::Tools),
            v => one(v).map(ByTool::All),
        }
    }

    /// The value for the tool named `tool` (its name on the server, or
    /// its exposed name), if one applies.
    fn for_tool(&self, names: &[&str]) -> Option<T> {
        match self {
            ByTool::All(t) => Some(*t),
            ByTool::Tools(globs) => globs
                .iter()
                .find(|(g, _)| names.iter().any(|n| super::approve::glob_matches(g, n)))
                .map(|(_, t)| *t),
        }
    }
}

/// A server's `resultBudget`.
pub fn server_budget(v: &Value) -> Result<ByTool<usize>, String> {
    ByTool::parse(v, read_budget)
}

/// A server's `resultFormat`.
pub fn server_format(v: &Value) -> Result<ByTool<Format>, String> {
    ByTool::parse(v, Format::read)
}

/// `settings.toonEncode`: the servers whose results are written as TOON when
/// that is shorter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub enum ToonEncode {
    /// None (the default).
    #[default]
    None,
    /// Every server (`true`).
    All,
    /// These servers.
    Servers(Vec<String>),
}

impl ToonEncode {
    /// Reads `true`, `false` or a list of server names.
    pub fn parse(v: &Value) -> Result<ToonEncode, String> {
        match v {
            Value::Bool(true) => Ok(ToonEncode::All),
            Value::Bool(false) | Value::Null => Ok(ToonEncode::None),
            Value::Array(names) => names
                .iter()
                .map(|n| {
                    n.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| format!("expected server names, found {n}"))
                })
                .collect::<Result<_, _>>()
                .map(ToonEncode::Servers),
            other => Err(format!(
                "expected true, false or a list of server names, found {other}"
            )),
        }
    }

    /// Whether `server`'s results are written as TOON when shorter.
    pub fn covers(&self, server: &str) -> bool {
        match self {
            ToonEncode::None => false,
            ToonEncode::All => true,
            ToonEncode::Servers(s) => s.iter().any(|n| n == server),
        }
    }
}

/// Tokens a result of the tool `names` (its name on the server, its exposed
/// name) of `server` may take: the server's rule, else the settings'; `0`
/// for no budget.
pub fn budget_for(config: &super::Config, server: &str, names: &[&str]) -> usize {
    config
        .server(server)
        .and_then(|s| s.config.result_budget.as_ref())
        .and_then(|rule| rule.for_tool(names))
        .unwrap_or(config.settings.results.budget)
}

/// How results of the tool `names` of `server` are written, and whether only
/// when shorter (`toonEncode`); none: as the server wrote them.
pub fn format_for(config: &super::Config, server: &str, names: &[&str]) -> Option<(Format, bool)> {
    let own = config
        .server(server)
        .and_then(|s| s.config.result_format.as_ref())
        .and_then(|rule| rule.for_tool(names));
    let results = &config.settings.results;
    own.or(results.format).map(|f| (f, false)).or_else(|| {
        results
            .toon_encode
            .covers(server)
            .then_some((Format::Toon, true))
    })
}

/// `settings.resultStore`: how long and how much kept results are kept.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StoreSettings {
    /// `ttlMinutes`: a kept result is gone this long after it was kept.
    pub ttl: std::time::Duration,
    /// `sessionMiB`: what one session keeps at most.
    pub session_bytes: usize,
    /// `totalMiB`: what every session of the process keeps together at most.
    pub total_bytes: usize,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            ttl: std::time::Duration::from_secs(30 * 60),
            // A result of 64 MiB and then some fits one session.
            session_bytes: 128 << 20,
            total_bytes: 512 << 20,
        }
    }
}

impl StoreSettings {
    /// What is wrong with `resultStore`, if anything.
    pub fn check(v: &Value) -> Option<String> {
        let Some(o) = v.as_object() else {
            return Some(format!("expected an object, found {v}"));
        };
        for (k, v) in o {
            if !["ttlMinutes", "sessionMiB", "totalMiB"].contains(&k.as_str()) {
                return Some(format!(
                    "unknown key {k:?}: the keys are ttlMinutes, sessionMiB, totalMiB"
                ));
            }
            if !v.as_f64().is_some_and(|n| n > 0.0) {
                return Some(format!("{k}: expected a positive number, found {v}"));
            }
        }
        None
    }

    pub(crate) fn read(v: &Value) -> StoreSettings {
        let mut s = StoreSettings::default();
        let number = |k: &str| v.get(k).and_then(Value::as_f64).filter(|n| *n > 0.0);
        if let Some(m) = number("ttlMinutes") {
            s.ttl = std::time::Duration::from_secs_f64(m * 60.0);
        }
        if let Some(m) = number("sessionMiB") {
            s.session_bytes = (m * (1 << 20) as f64) as usize;
        }
        if let Some(m) = number("totalMiB") {
            s.total_bytes = (m * (1 << 20) as f64) as usize;
        }
        s
    }
}

/// The result settings of the whole config.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResultSettings {
    /// `resultBudget`: tokens a result may take; `0` for no budget.
    pub budget: usize,
    /// `resultFormat`: how structured results are written; none: as the
    /// server wrote them.
    pub format: Option<Format>,
    /// `toonEncode`.
    pub toon_encode: ToonEncode,
    /// `resultStore`.
    pub store: StoreSettings,
}

impl Default for ResultSettings {
    fn default() -> Self {
        ResultSettings {
            budget: DEFAULT_RESULT_BUDGET,
            format: None,
            toon_encode: ToonEncode::None,
            store: StoreSettings::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_servers_value_applies_to_all_its_tools_or_by_glob() {
        let all = server_budget(&json!(500)).unwrap();
        assert_eq!(all.for_tool(&["anything"]), Some(500));
        let by = server_budget(&json!({"read_*": 0, "*": 2000})).unwrap();
        assert_eq!(by.for_tool(&["read_file"]), Some(0), "the first glob wins");
        assert_eq!(by.for_tool(&["list"]), Some(2000));
        assert_eq!(
            server_budget(&json!({"x": -1})).unwrap_err(),
            "x: expected a number of tokens (0 = no budget), found -1"
        );
        let f = server_format(&json!({"fs__*": "toon"})).unwrap();
        assert_eq!(f.for_tool(&["list", "fs__list"]), Some(Format::Toon));
        assert!(server_format(&json!("yaml")).is_err());
    }

    #[test]
    fn settings_default_to_ten_thousand_tokens_as_written() {
        let read = |raw: Value| {
            let context = crate::config::settings::Context {
                state_dir: "/state".into(),
            };
            let raw = raw.as_object().unwrap().clone();
            crate::config::settings::interpret(raw, &context).results
        };
        let s = read(json!({}));
        assert_eq!((s.budget, s.format), (10_000, None));
        let s = read(json!({"resultBudget": 0, "resultFormat": "csv", "toonEncode": ["a"]}));
        assert_eq!((s.budget, s.format), (0, Some(Format::Csv)));
        assert!(s.toon_encode.covers("a") && !s.toon_encode.covers("b"));
    }
}
