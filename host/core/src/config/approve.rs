//! Which calls the user must approve: `approve` in settings (by the tools'
//! names as the agent sees them) and in a server (by the server's own tool
//! names), as one mode or as globs, each with a mode.

use serde::Serialize;
use serde_json::Value;

/// Which calls need the user's approval, from the fewest to every one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApproveMode {
    /// None.
    #[default]
    None,
    /// Tools that say they are destructive (`destructiveHint`), or say
    /// nothing of themselves (no annotations).
    Destructive,
    /// Every tool that does not say it only reads (`readOnlyHint`).
    Writes,
    /// Every call.
    All,
}

impl ApproveMode {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(Self::None),
            "destructive" => Some(Self::Destructive),
            "writes" => Some(Self::Writes),
            "all" => Some(Self::All),
            _ => None,
        }
    }

    /// Whether a call of a tool with `annotations` needs approval.
    pub fn asks(self, annotations: Option<&Value>) -> bool {
        let hint = |key: &str| {
            annotations
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
        };
        match self {
            ApproveMode::None => false,
            ApproveMode::All => true,
            ApproveMode::Writes => hint("readOnlyHint") != Some(true),
            // MCP's defaults: a tool that does not say it only reads may
            // destroy, unless it says it does not.
            ApproveMode::Destructive => match annotations {
                None => true,
                Some(_) => {
                    hint("readOnlyHint") != Some(true) && hint("destructiveHint") != Some(false)
                }
            },
        }
    }

    /// Its name in the config.
    pub fn name(self) -> &'static str {
        match self {
            ApproveMode::None => "none",
            ApproveMode::Destructive => "destructive",
            ApproveMode::Writes => "writes",
            ApproveMode::All => "all",
        }
    }
}

/// `approve`: one mode for every tool, or globs (`*`, `?`) over tool names,
/// the first that matches deciding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ApproveRule {
    /// One mode.
    Mode(ApproveMode),
    /// `{glob: mode}` in the order written.
    Globs(Vec<(String, ApproveMode)>),
}

impl Default for ApproveRule {
    fn default() -> Self {
        ApproveRule::Mode(ApproveMode::None)
    }
}

impl ApproveRule {
    /// Reads `"mode"` or `{"glob": "mode", ...}`; why not, when it is neither.
    pub fn parse(v: &Value) -> Result<ApproveRule, String> {
        let mode = |v: &Value| {
            v.as_str().and_then(ApproveMode::parse).ok_or_else(|| {
                format!("expected \"none\", \"destructive\", \"writes\" or \"all\", found {v}")
            })
        };
        match v {
            Value::String(_) => mode(v).map(ApproveRule::Mode),
            Value::Object(globs) => globs
                .iter()
                .map(|(g, m)| {
                    mode(m)
                        .map(|m| (g.clone(), m))
                        .map_err(|e| format!("{g}: {e}"))
                })
                .collect::<Result<_, _>>()
                .map(ApproveRule::Globs),
            other => Err(format!(
                "expected a mode (\"none\", \"destructive\", \"writes\", \"all\") or an object of tool globs and modes, found {other}"
            )),
        }
    }

    /// The mode for the tool called `name`, if the rule says one.
    pub fn mode_for(&self, name: &str) -> Option<ApproveMode> {
        match self {
            ApproveRule::Mode(m) => Some(*m),
            ApproveRule::Globs(globs) => globs
                .iter()
                .find(|(g, _)| glob_matches(g, name))
                .map(|(_, m)| *m),
        }
    }
}

/// Why `glob` cannot name tools as `server/tool` (`*` and `?` allowed).
/// The server part is a name, not a glob: what a client sees of servers
/// (their prompts, resources, requests) follows from it exactly.
pub fn tool_glob_problem(glob: &str) -> Option<String> {
    match glob.split_once('/') {
        Some((server, _)) if server.contains(['*', '?']) => Some(format!(
            "{glob:?}: the part before `/` names one server, without `*` or `?`"
        )),
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => None,
        _ => Some(format!(
            "{glob:?} is not a tool glob: write `server/tool`, e.g. \"github/get_*\" or \"time/*\""
        )),
    }
}

/// Whether `name` matches `glob`: `*` any run of characters, `?` any one.
pub fn glob_matches(glob: &str, name: &str) -> bool {
    let (g, n): (Vec<char>, Vec<char>) = (glob.chars().collect(), name.chars().collect());
    // The last `*` seen and where in `name` it was tried from: on a
    // mismatch, that star takes one more character.
    let (mut gi, mut ni, mut star): (usize, usize, Option<(usize, usize)>) = (0, 0, None);
    while ni < n.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some((gi, ni));
                gi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                gi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sg, sn)) => {
                    gi = sg + 1;
                    ni = sn + 1;
                    star = Some((sg, sn + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn globs_match_as_a_shell_does() {
        for (glob, name, matches) in [
            ("*", "anything", true),
            ("delete_*", "delete_file", true),
            ("delete_*", "undelete_file", false),
            ("*_file", "read_file", true),
            ("re?d", "read", true),
            ("re?d", "reed_", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("exact", "exact", true),
            ("", "", true),
            ("**", "", true),
        ] {
            assert_eq!(glob_matches(glob, name), matches, "{glob} {name}");
        }
    }

    #[test]
    fn modes_read_the_tools_annotations() {
        let ro = json!({"readOnlyHint": true});
        let safe_write = json!({"readOnlyHint": false, "destructiveHint": false});
        let destroys = json!({"destructiveHint": true});
        let says_nothing_useful = json!({"title": "x"});
        let d = ApproveMode::Destructive;
        assert!(d.asks(None), "no annotations: may destroy");
        assert!(!d.asks(Some(&ro)) && !d.asks(Some(&safe_write)));
        assert!(d.asks(Some(&destroys)) && d.asks(Some(&says_nothing_useful)));
        let w = ApproveMode::Writes;
        assert!(w.asks(None) && w.asks(Some(&safe_write)) && !w.asks(Some(&ro)));
        assert!(ApproveMode::All.asks(Some(&ro)));
        assert!(!ApproveMode::None.asks(None));
    }

    #[test]
    fn a_rule_is_a_mode_or_ordered_globs() {
        let rule = ApproveRule::parse(&json!({"read_*": "none", "*": "all"})).unwrap();
        assert_eq!(rule.mode_for("read_file"), Some(ApproveMode::None));
        assert_eq!(rule.mode_for("write_file"), Some(ApproveMode::All));
        let only = ApproveRule::parse(&json!({"delete_*": "all"})).unwrap();
        assert_eq!(
            only.mode_for("read"),
            None,
            "no glob matches: the rule says nothing"
        );
        assert_eq!(
            ApproveRule::parse(&json!("writes")).unwrap().mode_for("x"),
            Some(ApproveMode::Writes)
        );
        assert!(ApproveRule::parse(&json!("sometimes")).is_err());
        assert!(
            ApproveRule::parse(&json!({"x": 1}))
                .unwrap_err()
                .starts_with("x: ")
        );
        assert!(ApproveRule::parse(&json!(true)).is_err());
    }
}
